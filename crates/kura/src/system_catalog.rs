//! What kura's session adds to the system catalogs beyond its tables: the
//! settings `pg_catalog.pg_settings` lists (kura's own and the PostgreSQL client
//! parameters it answers) and the tables' defaults and constraints.

use kura_common::settings::{Settings, SETTINGS};
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
    let own = SETTINGS.iter().map(|spec| SysSetting {
        name: spec.name.to_string(),
        setting: settings.value(spec.name),
        description: spec.description.to_string(),
        category: "kura".to_string(),
    });
    let client = CLIENT_PARAMETERS.iter().filter_map(|name| {
        Some(SysSetting {
            name: name.to_string(),
            setting: crate::session::client_setting_value(name)?.to_string(),
            description: "PostgreSQL client parameter".to_string(),
            category: "client".to_string(),
        })
    });
    own.chain(client).collect()
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
