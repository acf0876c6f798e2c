//! What kura's session adds to the system catalogs beyond its tables: the
//! settings `pg_catalog.pg_settings` lists (kura's own and the PostgreSQL client
//! parameters it answers) and the tables' defaults and constraints.

use kura_common::settings::{Scope, SettingSpec, Settings, SETTINGS};
use kura_sql::system::SysSetting;

/// PostgreSQL parameters clients read from `pg_settings`, with the values kura
/// reports for them.
const CLIENT_PARAMETERS: &[&str] = &[
    "application_name",
    "client_encoding",
    "datestyle",
    "default_table_access_method",
    "extra_float_digits",
    "integer_datetimes",
    "intervalstyle",
    "max_index_keys",
    "search_path",
    "server_encoding",
    "server_version",
    "standard_conforming_strings",
    "timezone",
    "transaction_isolation",
];

/// kura's settings with their current values, then the client parameters.
pub(crate) fn settings(settings: &Settings) -> Vec<SysSetting> {
    let own = SETTINGS.iter().map(|spec| setting_row(spec, settings));
    let client = CLIENT_PARAMETERS.iter().filter_map(|name| {
        let value = crate::client_settings::client_setting_value(name)?;
        Some(SysSetting::text(
            name,
            value,
            "PostgreSQL client parameter",
            "client",
        ))
    });
    own.chain(client).collect()
}

/// One of kura's settings as `pg_settings` shows it, from the registry: sizes
/// in bytes and times in milliseconds (`unit`), as PostgreSQL's integer
/// settings; `reset_val` is what `RESET` gives (the default of a session
/// setting; the others are not reset).
fn setting_row(spec: &'static SettingSpec, settings: &Settings) -> SysSetting {
    let entry = settings.entry(spec.name).expect("registered");
    let pg = |text: &str| match spec.ty.parse(text) {
        Ok((text, value)) => value.pg_setting(&text),
        Err(_) => text.to_string(),
    };
    let boot_val = pg(&settings.boot(spec.name).expect("registered"));
    let setting = entry.value.pg_setting(&entry.text);
    let reset_val = match spec.scope {
        Scope::Session => boot_val.clone(),
        Scope::Database | Scope::Server => setting.clone(),
    };
    let range = spec.ty.range();
    SysSetting {
        name: spec.name.to_string(),
        setting,
        description: spec.description.to_string(),
        category: "kura".to_string(),
        unit: spec.ty.unit().map(str::to_string),
        context: spec.scope.context().to_string(),
        vartype: spec.ty.vartype().to_string(),
        source: entry.source.name().to_string(),
        min_val: range.map(|(min, _)| min.to_string()),
        max_val: range.map(|(_, max)| max.to_string()),
        enumvals: spec
            .ty
            .choices()
            .map(|c| c.iter().map(|v| v.to_string()).collect()),
        boot_val,
        reset_val,
    }
}

/// A table's rules as the system catalogs show them.
pub(crate) fn rules_info(r: &kura_storage::rules::TableRules) -> kura_sql::TableRulesInfo {
    use kura_sql::{ConstraintInfo, ConstraintKind};
    let keys = r.keys.iter().map(|k| ConstraintInfo {
        name: k.name.clone(),
        kind: if k.primary {
            ConstraintKind::PrimaryKey
        } else {
            ConstraintKind::Unique
        },
        columns: k.columns.clone(),
    });
    let checks = r.checks.iter().map(|c| ConstraintInfo {
        name: c.name.clone(),
        kind: ConstraintKind::Check(c.sql.clone()),
        columns: Vec::new(),
    });
    let foreign = r.foreign_keys.iter().map(|f| ConstraintInfo {
        name: f.name.clone(),
        kind: ConstraintKind::ForeignKey {
            table: f.ref_table.clone(),
            columns: f.ref_columns.clone(),
        },
        columns: f.columns.clone(),
    });
    kura_sql::TableRulesInfo {
        defaults: r
            .defaults
            .iter()
            .map(|d| (d.column.clone(), d.sql.clone()))
            .collect(),
        constraints: keys.chain(checks).chain(foreign).collect(),
    }
}
