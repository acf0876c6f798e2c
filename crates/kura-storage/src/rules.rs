//! What a table's rows must satisfy and how missing values are filled: DEFAULT
//! expressions, CHECK, PRIMARY KEY / UNIQUE and FOREIGN KEY constraints, kept in
//! the catalog (format 7) as SQL text and names. Storage enforces only the
//! keys — each is a unique B+tree index of the constraint's name, checked when
//! it is (re)built — the SQL layer evaluates the expressions.

use serde::{Deserialize, Serialize};

/// The rules of one table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TableRules {
    pub table: String,
    /// A column's DEFAULT, as SQL text.
    pub defaults: Vec<ColumnDefault>,
    pub checks: Vec<CheckConstraint>,
    /// PRIMARY KEY and UNIQUE constraints, each backed by the unique index
    /// named as the constraint.
    pub keys: Vec<KeyConstraint>,
    pub foreign_keys: Vec<ForeignKey>,
}

impl TableRules {
    pub fn is_empty(&self) -> bool {
        self.defaults.is_empty()
            && self.checks.is_empty()
            && self.keys.is_empty()
            && self.foreign_keys.is_empty()
    }

    /// The DEFAULT of `column`, if it has one.
    pub fn default_of(&self, column: &str) -> Option<&str> {
        self.defaults
            .iter()
            .find(|d| d.column == column)
            .map(|d| d.sql.as_str())
    }

    /// The names of every constraint of the table.
    pub fn constraint_names(&self) -> impl Iterator<Item = &str> {
        self.checks
            .iter()
            .map(|c| c.name.as_str())
            .chain(self.keys.iter().map(|k| k.name.as_str()))
            .chain(self.foreign_keys.iter().map(|f| f.name.as_str()))
    }

    /// The primary key, if any.
    pub fn primary_key(&self) -> Option<&KeyConstraint> {
        self.keys.iter().find(|k| k.primary)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColumnDefault {
    pub column: String,
    pub sql: String,
}

/// `CHECK (expr)`: a row is refused when `expr` is false (NULL passes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckConstraint {
    pub name: String,
    pub sql: String,
}

/// `PRIMARY KEY (cols)` or `UNIQUE (cols)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyConstraint {
    pub name: String,
    pub primary: bool,
    pub columns: Vec<String>,
}

/// `FOREIGN KEY (columns) REFERENCES table (ref_columns)`: every row whose
/// columns are all non-NULL has a row of `table` with equal `ref_columns`
/// (which are that table's primary key or a unique constraint). Referenced
/// rows may not be deleted or changed while referenced (NO ACTION).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForeignKey {
    pub name: String,
    pub columns: Vec<String>,
    pub ref_table: String,
    pub ref_columns: Vec<String>,
}
