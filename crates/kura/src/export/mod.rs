//! `EXPORT DATABASE 'dir' [(FORMAT parquet | csv | json)]` and `IMPORT DATABASE 'dir'`:
//! a database as `schema.sql` (the SQL that makes its schema), one data file per table
//! and `load.sql` (the COPY statements that read them back) — the
//! layout DuckDB writes and reads, so a database moves between kura, DuckDB and others.
//! The session runs them (`session/database_io.rs`); this module says what to write.

pub(crate) mod load;
pub(crate) mod schema;

use std::collections::BTreeSet;

use sqlparser::ast::{CopyLegacyOption, CopyOption};

use kura_common::DataType;
use kura_storage::{Catalog, Storage};

use crate::error::{KuraError, KuraResult};

/// The format tables' data is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DataFormat {
    Parquet,
    Csv,
    Json,
}

impl DataFormat {
    fn extension(self) -> &'static str {
        match self {
            DataFormat::Parquet => "parquet",
            DataFormat::Csv => "csv",
            DataFormat::Json => "json",
        }
    }

    /// The COPY options that write a file of this format.
    fn write_options(self) -> &'static str {
        match self {
            DataFormat::Parquet => "FORMAT parquet",
            DataFormat::Csv => "FORMAT csv, HEADER true",
            DataFormat::Json => "FORMAT json",
        }
    }

    /// The COPY options of `load.sql` that read it back, spelled as DuckDB's export
    /// spells them (kura's import reads them as its own, see `load::import_statement`):
    /// a CSV file's `""` is an empty string, and DuckDB reads it as NULL unless told.
    fn read_options(self) -> &'static str {
        match self {
            DataFormat::Parquet => "FORMAT 'parquet'",
            DataFormat::Csv => {
                "FORMAT 'csv', allow_quoted_nulls false, quote '\"', delimiter ',', header 1"
            }
            DataFormat::Json => "FORMAT 'json'",
        }
    }
}

/// What `EXPORT DATABASE` was asked for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ExportOptions {
    pub format: DataFormat,
    /// Whether the statement named the format: an unsaid Parquet falls back to CSV for
    /// a table Parquet may not hold (INTERVAL columns: Parquet's INTERVAL has no sign and
    /// nothing below a millisecond); a said one refuses it.
    pub said: bool,
}

impl ExportOptions {
    pub fn parse(options: &[CopyOption], legacy: &[CopyLegacyOption]) -> KuraResult<Self> {
        if let Some(o) = legacy.first() {
            return Err(KuraError::Unsupported(format!(
                "EXPORT DATABASE option {o}"
            )));
        }
        let mut out = ExportOptions {
            format: DataFormat::Parquet,
            said: false,
        };
        for o in options {
            match o {
                CopyOption::Format(f) => {
                    out.said = true;
                    out.format = match f.value.to_ascii_lowercase().as_str() {
                        "parquet" => DataFormat::Parquet,
                        "csv" => DataFormat::Csv,
                        "json" => DataFormat::Json,
                        other => {
                            return Err(KuraError::Unsupported(format!(
                                "EXPORT DATABASE format {other} (parquet, csv or json)"
                            )))
                        }
                    }
                }
                other => {
                    return Err(KuraError::Unsupported(format!(
                        "EXPORT DATABASE option {other} (FORMAT parquet, csv or json)"
                    )))
                }
            }
        }
        Ok(out)
    }
}

/// One table's data: where it goes and the statements that write and read it.
pub(crate) struct TableCopy {
    pub table: String,
    /// `COPY table TO 'file' (...)`.
    pub copy_to: String,
    /// `COPY table FROM 'file' (...);` for `load.sql`.
    pub copy_from: String,
}

/// Everything `EXPORT DATABASE` writes.
pub(crate) struct ExportPlan {
    pub script: schema::Script,
    pub copies: Vec<TableCopy>,
}

impl ExportPlan {
    /// `load.sql`: the tables' data in load order.
    pub fn load_sql(&self) -> String {
        self.copies
            .iter()
            .map(|c| format!("{}\n", c.copy_from))
            .collect()
    }
}

/// What exporting `catalog` into directory `dir` writes.
pub(crate) fn plan(
    catalog: &Catalog,
    storage: &Storage,
    dir: &str,
    options: ExportOptions,
) -> KuraResult<ExportPlan> {
    let script = schema::render(catalog, storage);
    let mut used = BTreeSet::new();
    let mut copies = Vec::with_capacity(script.tables.len());
    for table in &script.tables {
        let Some(t) = catalog.table(table) else {
            continue;
        };
        let interval = t
            .schema()
            .columns
            .iter()
            .find(|c| c.data_type == DataType::Interval);
        let format = match (options.format, interval) {
            (DataFormat::Parquet, Some(c)) if options.said => {
                return Err(KuraError::Unsupported(format!(
                    "EXPORT DATABASE in Parquet: column \"{}\" of table \"{table}\" is an \
                     INTERVAL, which Parquet holds only without sign or microseconds (export \
                     with FORMAT csv, or leave FORMAT unsaid: such tables are then written as \
                     CSV)",
                    c.name
                )))
            }
            (DataFormat::Parquet, Some(_)) => DataFormat::Csv,
            (f, _) => f,
        };
        let file = format!(
            "{}/{}.{}",
            dir.trim_end_matches('/'),
            file_stem(table, &mut used),
            format.extension()
        );
        let quoted = file.replace('\'', "''");
        let name = schema::ident(table);
        copies.push(TableCopy {
            table: table.clone(),
            copy_to: format!("COPY {name} TO '{quoted}' ({})", format.write_options()),
            copy_from: format!("COPY {name} FROM '{quoted}' ({});", format.read_options()),
        });
    }
    Ok(ExportPlan { script, copies })
}

/// A file name for `table`'s data: its name where that is a plain file name, otherwise
/// with `_` for the other characters; a number added where two would meet.
fn file_stem(table: &str, used: &mut BTreeSet<String>) -> String {
    let plain: String = table
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mut stem = plain.clone();
    let mut n = 1;
    while !used.insert(stem.clone()) {
        n += 1;
        stem = format!("{plain}_{n}");
    }
    stem
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_are_plain_and_distinct() {
        let mut used = BTreeSet::new();
        assert_eq!(file_stem("lineitem", &mut used), "lineitem");
        assert_eq!(file_stem("a b", &mut used), "a_b");
        assert_eq!(file_stem("a/b", &mut used), "a_b_2");
        assert_eq!(file_stem("../x", &mut used), "___x");
    }
}
