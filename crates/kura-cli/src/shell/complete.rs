//! Tab completion for the shell: SQL keywords, table and view names, column names,
//! and meta-commands — read from the live catalog at each Tab, so new tables appear.

use std::borrow::Cow;
use std::sync::Arc;

use rustyline::completion::{Completer, Pair};
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{Context, Helper};

use kura::Storage;

const KEYWORDS: &[&str] = &[
    "SELECT",
    "FROM",
    "WHERE",
    "GROUP",
    "BY",
    "ORDER",
    "HAVING",
    "LIMIT",
    "OFFSET",
    "JOIN",
    "LEFT",
    "RIGHT",
    "INNER",
    "OUTER",
    "FULL",
    "CROSS",
    "ON",
    "USING",
    "AS",
    "AND",
    "OR",
    "NOT",
    "IN",
    "EXISTS",
    "BETWEEN",
    "LIKE",
    "IS",
    "NULL",
    "DISTINCT",
    "UNION",
    "ALL",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
    "WITH",
    "ASC",
    "DESC",
    "NULLS",
    "FIRST",
    "LAST",
    "INSERT",
    "INTO",
    "VALUES",
    "CREATE",
    "TABLE",
    "VIEW",
    "INDEX",
    "UNIQUE",
    "DROP",
    "IF",
    "COPY",
    "DELIMITER",
    "HEADER",
    "FORMAT",
    "EXPLAIN",
    "ANALYZE",
    "SET",
    "SHOW",
    "TABLES",
    "DESCRIBE",
    "COUNT",
    "SUM",
    "AVG",
    "MIN",
    "MAX",
    "CAST",
    "EXTRACT",
    "INTERVAL",
    "DATE",
    "INTEGER",
    "BIGINT",
    "DOUBLE",
    "DECIMAL",
    "VARCHAR",
    "CHAR",
    "BOOLEAN",
    "TRUE",
    "FALSE",
    "SUBSTRING",
    "UPDATE",
    "DELETE",
    "TRUNCATE",
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "EXCEPT",
    "INTERSECT",
    "COALESCE",
    "NULLIF",
];

const META: &[&str] = &[
    "\\?", "\\d", "\\dt", "\\di", "\\dv", "\\i", "\\o", "\\pset", "\\q", "\\r", "\\timing", "\\x",
];

pub struct SqlHelper {
    storage: Arc<Storage>,
}

impl SqlHelper {
    pub fn new(storage: Arc<Storage>) -> Self {
        SqlHelper { storage }
    }

    /// Every name completion can offer for `prefix`, keywords in the case typed.
    pub fn candidates(&self, prefix: &str) -> Vec<String> {
        if prefix.starts_with('\\') {
            return META
                .iter()
                .filter(|m| m.starts_with(prefix))
                .map(|m| m.to_string())
                .collect();
        }
        let lower = prefix.to_ascii_lowercase();
        let catalog = self.storage.catalog();
        let mut names: Vec<String> = catalog.table_names();
        names.extend(catalog.view_names());
        for t in catalog.table_names() {
            if let Some(table) = catalog.table(&t) {
                names.extend(table.schema().columns.iter().map(|c| c.name.clone()));
            }
        }
        for v in catalog.view_names() {
            if let Some(view) = catalog.view(&v) {
                names.extend(view.columns.iter().cloned());
            }
        }
        let typed_upper = prefix.chars().any(|c| c.is_ascii_uppercase());
        names.extend(KEYWORDS.iter().map(|k| {
            if typed_upper {
                k.to_string()
            } else {
                k.to_ascii_lowercase()
            }
        }));
        let mut out: Vec<String> = names
            .into_iter()
            .filter(|n| n.to_ascii_lowercase().starts_with(&lower))
            .collect();
        out.sort();
        out.dedup();
        out
    }
}

impl Completer for SqlHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let before = &line[..pos];
        let lead = before.trim_start();
        if lead.starts_with('.') && !lead.contains(char::is_whitespace) {
            let pairs = super::meta::DOT_COMMANDS
                .iter()
                .filter(|d| d.starts_with(lead))
                .map(|d| Pair {
                    display: d.to_string(),
                    replacement: d.to_string(),
                })
                .collect();
            return Ok((pos - lead.len(), pairs));
        }
        let start = before
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == '\\'))
            .map_or(0, |i| i + 1);
        let prefix = &before[start..];
        if prefix.is_empty() {
            return Ok((pos, Vec::new()));
        }
        let pairs = self
            .candidates(prefix)
            .into_iter()
            .map(|c| Pair {
                display: c.clone(),
                replacement: c,
            })
            .collect();
        Ok((start, pairs))
    }
}

impl Hinter for SqlHelper {
    type Hint = String;
}

impl Highlighter for SqlHelper {
    fn highlight<'l>(&self, line: &'l str, _pos: usize) -> Cow<'l, str> {
        Cow::Borrowed(line)
    }
}

impl Validator for SqlHelper {}

impl Helper for SqlHelper {}
