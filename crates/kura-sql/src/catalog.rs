//! What the planner needs to know about the database: tables (as scan sources with
//! statistics) and views (their SQL), looked up by case-insensitive name.

use std::sync::Arc;

use kura_exec::TableSource;

/// A stored view: its defining query and optional column names.
#[derive(Debug, Clone, PartialEq)]
pub struct ViewDefinition {
    pub sql: String,
    pub columns: Vec<String>,
}

/// A table's defaults and constraints, as the system catalogs show them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableRulesInfo {
    /// (column, DEFAULT as SQL text).
    pub defaults: Vec<(String, String)>,
    pub constraints: Vec<ConstraintInfo>,
}

/// A sequence as the system catalogs show it.
#[derive(Debug, Clone, PartialEq)]
pub struct SequenceInfo {
    pub name: String,
    /// `smallint`, `integer` or `bigint`.
    pub type_name: &'static str,
    pub start: i64,
    pub increment: i64,
    pub min: i64,
    pub max: i64,
    pub cycle: bool,
    /// The last value handed out (`None` before the first).
    pub last_value: Option<i64>,
    /// The (table, column) whose sequence it is.
    pub owned_by: Option<(String, String)>,
    /// `a` (ALWAYS) or `d` (BY DEFAULT) for an identity column's sequence.
    pub identity: Option<char>,
}

/// One constraint of a table.
#[derive(Debug, Clone, PartialEq)]
pub struct ConstraintInfo {
    pub name: String,
    pub kind: ConstraintKind,
    /// The constrained columns (none for a CHECK).
    pub columns: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ConstraintKind {
    PrimaryKey,
    Unique,
    /// The condition, as SQL text.
    Check(String),
    ForeignKey {
        table: String,
        columns: Vec<String>,
    },
}

impl ConstraintInfo {
    /// `pg_constraint.contype`.
    pub fn contype(&self) -> &'static str {
        match self.kind {
            ConstraintKind::PrimaryKey => "p",
            ConstraintKind::Unique => "u",
            ConstraintKind::Check(_) => "c",
            ConstraintKind::ForeignKey { .. } => "f",
        }
    }

    /// `pg_get_constraintdef`: the constraint as CREATE TABLE writes it.
    pub fn definition(&self) -> String {
        let list = |cols: &[String]| {
            cols.iter()
                .map(|c| kura_exec::expr::pg::quote_ident(c))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match &self.kind {
            ConstraintKind::PrimaryKey => format!("PRIMARY KEY ({})", list(&self.columns)),
            ConstraintKind::Unique => format!("UNIQUE ({})", list(&self.columns)),
            ConstraintKind::Check(sql) => format!("CHECK (({sql}))"),
            ConstraintKind::ForeignKey { table, columns } => format!(
                "FOREIGN KEY ({}) REFERENCES {}({})",
                list(&self.columns),
                kura_exec::expr::pg::quote_ident(table),
                list(columns)
            ),
        }
    }
}

/// A setting as `pg_settings` shows it (its columns, by name).
#[derive(Debug, Clone)]
pub struct SysSetting {
    pub name: String,
    pub setting: String,
    pub description: String,
    /// `kura` for kura's own settings, `client` for the PostgreSQL parameters.
    pub category: String,
    /// The unit of `setting`, `min_val` and `max_val` (`B`, `ms`).
    pub unit: Option<String>,
    /// `user`, `superuser` or `postmaster`: who may change it, and when.
    pub context: String,
    /// `bool`, `enum`, `integer`, `real` or `string`.
    pub vartype: String,
    /// Where the value came from: `default`, `session`, `command line` ...
    pub source: String,
    pub min_val: Option<String>,
    pub max_val: Option<String>,
    /// An enum setting's values.
    pub enumvals: Option<Vec<String>>,
    pub boot_val: String,
    pub reset_val: String,
}

impl SysSetting {
    /// A string parameter any session may set, at its default.
    pub fn text(name: &str, setting: &str, description: &str, category: &str) -> SysSetting {
        SysSetting {
            name: name.to_string(),
            setting: setting.to_string(),
            description: description.to_string(),
            category: category.to_string(),
            unit: None,
            context: "user".to_string(),
            vartype: "string".to_string(),
            source: "default".to_string(),
            min_val: None,
            max_val: None,
            enumvals: None,
            boot_val: setting.to_string(),
            reset_val: setting.to_string(),
        }
    }
}

/// Name lookup for the binder.
pub trait CatalogProvider {
    fn table(&self, name: &str) -> Option<Arc<dyn TableSource>>;
    fn view(&self, name: &str) -> Option<ViewDefinition>;
    /// Every table and view name (for "did you mean" hints).
    fn relation_names(&self) -> Vec<String>;
    /// The settings `pg_catalog.pg_settings` lists.
    fn settings(&self) -> Vec<SysSetting> {
        Vec::new()
    }
    /// The session a statement runs in (`version()`, `now()` ...); `None` where
    /// there is none (tools, tests): those functions then fail.
    fn session(&self) -> Option<&crate::SessionInfo> {
        None
    }
    /// Every sequence (`pg_class`, `pg_sequences`, ...).
    fn sequences(&self) -> Vec<SequenceInfo> {
        Vec::new()
    }
    /// Sequence `name` (normalized), for `nextval` and friends: a fresh
    /// handle per call, since every call in a statement draws on its own.
    fn sequence(&self, name: &str) -> Option<kura_exec::expr::SeqRef> {
        let _ = name;
        None
    }
    /// A table's defaults and constraints (`pg_constraint`, `pg_attrdef`).
    fn rules(&self, table: &str) -> TableRulesInfo {
        let _ = table;
        TableRulesInfo::default()
    }
    /// The size of the database's file in bytes (`pg_database_size`), where
    /// there is one.
    fn database_bytes(&self) -> Option<u64> {
        None
    }
    /// The files `patterns` name (paths, or globs) as one table of `format`
    /// (`read_parquet('f.parquet')`), if this session may read them.
    fn file_table(
        &self,
        format: &FileFormat,
        patterns: &[String],
    ) -> Result<Arc<dyn TableSource>, kura_exec::ExecError> {
        let _ = patterns;
        Err(kura_exec::ExecError::Unsupported(format!(
            "reading {} files here (no database session)",
            format.name()
        )))
    }
}

/// The file formats kura reads as tables, with what the statement says of the file.
#[derive(Debug, Clone, PartialEq)]
pub enum FileFormat {
    Parquet,
    Csv(kura_exec::files::csv::CsvOptions),
    /// Newline-delimited JSON objects, or one array of them.
    Json,
}

impl FileFormat {
    pub fn name(&self) -> &'static str {
        match self {
            FileFormat::Parquet => "Parquet",
            FileFormat::Csv(_) => "CSV",
            FileFormat::Json => "JSON",
        }
    }

    /// The format a file name's extension says (`FROM "f.parquet"`, `FROM "f.csv"`).
    pub fn of_name(name: &str) -> Option<FileFormat> {
        let lower = name.to_ascii_lowercase();
        if lower.ends_with(".parquet") {
            Some(FileFormat::Parquet)
        } else if lower.ends_with(".csv") || lower.ends_with(".tsv") {
            Some(FileFormat::Csv(Default::default()))
        } else if [".json", ".jsonl", ".ndjson"]
            .iter()
            .any(|e| lower.ends_with(e))
        {
            Some(FileFormat::Json)
        } else {
            None
        }
    }
}

/// An in-memory catalog (tests, tools).
#[derive(Default, Clone)]
pub struct MemoryCatalog {
    pub tables: Vec<Arc<dyn TableSource>>,
    pub views: Vec<(String, ViewDefinition)>,
}

impl MemoryCatalog {
    pub fn add_table(&mut self, t: Arc<dyn TableSource>) {
        self.tables.retain(|x| x.name() != t.name());
        self.tables.push(t);
    }
}

impl CatalogProvider for MemoryCatalog {
    fn table(&self, name: &str) -> Option<Arc<dyn TableSource>> {
        self.tables.iter().find(|t| t.name() == name).cloned()
    }
    fn view(&self, name: &str) -> Option<ViewDefinition> {
        self.views
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    }
    fn relation_names(&self) -> Vec<String> {
        self.tables
            .iter()
            .map(|t| t.name().to_string())
            .chain(self.views.iter().map(|(n, _)| n.clone()))
            .collect()
    }
}
