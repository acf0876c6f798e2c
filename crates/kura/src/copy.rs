//! `COPY table FROM 'file' (DELIMITER '|', HEADER false, FORMAT csv)`: the bulk
//! loader behind SQL. The whole file loads in one transaction — all or nothing.

use std::path::Path;

use sqlparser::ast::{CopyLegacyCsvOption, CopyLegacyOption, CopyOption, CopySource, CopyTarget};

use kura_storage::loader::{self, TextFormat};
use kura_storage::Storage;

use crate::ddl::object_name;
use crate::error::{KuraError, KuraResult};
use crate::result::QueryResult;
use crate::session::Progress;

/// Parsed COPY options.
pub fn text_format(
    path: &str,
    options: &[CopyOption],
    legacy: &[CopyLegacyOption],
) -> KuraResult<TextFormat> {
    let mut csv = path.to_ascii_lowercase().ends_with(".csv");
    let mut delimiter: Option<u8> = None;
    let mut header = false;
    let byte = |c: char| -> KuraResult<u8> {
        u8::try_from(c as u32)
            .ok()
            .filter(|b| b.is_ascii() && *b != b'\n' && *b != b'\r')
            .ok_or_else(|| {
                KuraError::Invalid(format!(
                    "COPY delimiter must be a single one-byte character, got {c:?}"
                ))
            })
    };
    for o in options {
        match o {
            CopyOption::Format(f) => match f.value.to_ascii_lowercase().as_str() {
                "csv" => csv = true,
                "text" | "tbl" => csv = false,
                other => return Err(KuraError::Unsupported(format!("COPY format {other}"))),
            },
            CopyOption::Delimiter(c) => delimiter = Some(byte(*c)?),
            CopyOption::Header(h) => header = *h,
            other => return Err(KuraError::Unsupported(format!("COPY option {other}"))),
        }
    }
    for o in legacy {
        match o {
            CopyLegacyOption::Delimiter(c) => delimiter = Some(byte(*c)?),
            CopyLegacyOption::Csv(opts) => {
                csv = true;
                for c in opts {
                    match c {
                        CopyLegacyCsvOption::Header => header = true,
                        other => {
                            return Err(KuraError::Unsupported(format!("COPY option {other}")))
                        }
                    }
                }
            }
            other => return Err(KuraError::Unsupported(format!("COPY option {other}"))),
        }
    }
    Ok(TextFormat {
        delimiter: delimiter.unwrap_or(if csv { b',' } else { b'|' }),
        header,
        quoted: csv,
    })
}

/// Executes a COPY ... FROM statement.
pub fn copy_from(
    storage: &Storage,
    source: &CopySource,
    to: bool,
    target: &CopyTarget,
    options: &[CopyOption],
    legacy: &[CopyLegacyOption],
    progress: Option<&Progress>,
) -> KuraResult<QueryResult> {
    if to {
        return Err(KuraError::Unsupported(
            "COPY ... TO (export); use kura -c with --format csv".into(),
        ));
    }
    let CopySource::Table {
        table_name,
        columns,
    } = source
    else {
        return Err(KuraError::Unsupported("COPY (query) FROM".into()));
    };
    if !columns.is_empty() {
        return Err(KuraError::Unsupported("COPY with a column list".into()));
    }
    let CopyTarget::File { filename } = target else {
        return Err(KuraError::Unsupported(
            "COPY FROM STDIN/PROGRAM; give a file name".into(),
        ));
    };
    let fmt = text_format(filename, options, legacy)?;
    let table = object_name(table_name);
    let rows = load_file(storage, &table, Path::new(filename), &fmt, progress)?;
    Ok(QueryResult::command(format!("COPY {rows}")))
}

/// Loads one file into a table in its own transaction; returns rows loaded.
pub fn load_file(
    storage: &Storage,
    table: &str,
    path: &Path,
    fmt: &TextFormat,
    progress: Option<&Progress>,
) -> KuraResult<u64> {
    let total = std::fs::metadata(path)
        .map_err(|e| KuraError::Invalid(format!("{}: {e}", path.display())))?
        .len();
    let mut txn = storage.begin()?;
    let label = format!("{table} ← {}", path.display());
    let report = |done: u64| {
        if let Some(p) = progress {
            p(&label, done, total)
        }
    };
    let rows = loader::load_file(
        &mut txn,
        table,
        path,
        fmt,
        loader::default_threads(),
        Some(&report),
    )?;
    txn.commit()?;
    Ok(rows)
}
