//! `COPY table FROM 'file' (DELIMITER '|', HEADER false, FORMAT csv, NULL 'x')`:
//! the bulk loader behind SQL. The whole file loads in one transaction — all or nothing.

use std::path::{Path, PathBuf};

use sqlparser::ast::{CopyLegacyCsvOption, CopyLegacyOption, CopyOption, CopySource, CopyTarget};

use kura_storage::loader::{self, TextFormat};

use crate::ddl::object_name;
use crate::error::{KuraError, KuraResult};
use crate::result::QueryResult;
use crate::session::Progress;
use crate::txn::Tx;

/// Which files on the machine running kura a session's `COPY ... FROM 'file'`
/// may read. The embedded database and the shell read any file their user
/// can; a server reads none unless told a directory, because its clients are
/// not the user it runs as (PostgreSQL asks for `pg_read_server_files`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum FileAccess {
    /// Any file the process can read.
    #[default]
    Any,
    /// No file: server-side COPY is refused.
    Denied,
    /// Files below this directory (canonical); relative names are resolved in it.
    Under(PathBuf),
}

impl FileAccess {
    /// Files below `dir`, which must exist.
    pub fn under(dir: &Path) -> std::io::Result<FileAccess> {
        Ok(FileAccess::Under(dir.canonicalize()?))
    }

    /// The path to open for `name`, or why it may not be read.
    pub fn resolve(&self, name: &str) -> KuraResult<PathBuf> {
        match self {
            FileAccess::Any => Ok(PathBuf::from(name)),
            FileAccess::Denied => Err(KuraError::PermissionDenied(format!(
                "COPY from a file on the server is off for clients of this server \
                 (start `kura serve` with --copy-dir DIR to allow files below DIR): {name}"
            ))),
            FileAccess::Under(dir) => {
                let joined = dir.join(name);
                // Canonical, so neither `..` nor a symbolic link leads outside.
                let real = joined
                    .canonicalize()
                    .map_err(|e| KuraError::Invalid(format!("{name}: {e}")))?;
                if real.starts_with(dir) {
                    Ok(real)
                } else {
                    Err(KuraError::PermissionDenied(format!(
                        "{name} is not below the server's COPY directory {}",
                        dir.display()
                    )))
                }
            }
        }
    }
}

/// Parsed COPY options.
pub fn text_format(
    path: &str,
    options: &[CopyOption],
    legacy: &[CopyLegacyOption],
) -> KuraResult<TextFormat> {
    let mut csv = path.to_ascii_lowercase().ends_with(".csv");
    let mut delimiter: Option<u8> = None;
    let mut header = false;
    let mut null: Option<String> = None;
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
            CopyOption::Null(n) => null = Some(n.clone()),
            other => return Err(KuraError::Unsupported(format!("COPY option {other}"))),
        }
    }
    for o in legacy {
        match o {
            CopyLegacyOption::Delimiter(c) => delimiter = Some(byte(*c)?),
            CopyLegacyOption::Null(n) => null = Some(n.clone()),
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
    let delimiter = delimiter.unwrap_or(if csv { b',' } else { b'|' });
    if let Some(n) = &null {
        // As PostgreSQL: the marker must be readable as one whole field.
        if n.contains(['\n', '\r']) {
            return Err(KuraError::Invalid(
                "COPY null representation cannot use newline or carriage return".into(),
            ));
        }
        if n.as_bytes().contains(&delimiter) {
            return Err(KuraError::Invalid(
                "COPY delimiter must not appear in the NULL specification".into(),
            ));
        }
    }
    Ok(TextFormat {
        delimiter,
        header,
        quoted: csv,
        null: null.map(String::into_bytes),
    })
}

/// COPY ... TO is not supported: the error that says what to use instead.
pub fn copy_to_unsupported() -> KuraError {
    KuraError::Unsupported("COPY ... TO (export); use kura -c with --format csv".into())
}

/// Executes a COPY ... FROM statement.
pub(crate) fn copy_from(
    tx: &Tx,
    source: &CopySource,
    target: &CopyTarget,
    options: &[CopyOption],
    legacy: &[CopyLegacyOption],
    access: &FileAccess,
    progress: Option<&Progress>,
) -> KuraResult<QueryResult> {
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
    let path = access.resolve(filename)?;
    let rows = load_file(tx, &table, &path, &fmt, progress)?;
    Ok(QueryResult::command(format!("COPY {rows}")))
}

/// Loads one file into a table (all or nothing); returns rows loaded.
fn load_file(
    tx: &Tx,
    table: &str,
    path: &Path,
    fmt: &TextFormat,
    progress: Option<&Progress>,
) -> KuraResult<u64> {
    let total = std::fs::metadata(path)
        .map_err(|e| KuraError::Invalid(format!("{}: {e}", path.display())))?
        .len();
    let label = format!("{table} ← {}", path.display());
    let report = |done: u64| {
        if let Some(p) = progress {
            p(&label, done, total)
        }
    };
    tx.write(|txn| {
        Ok(loader::load_file(
            txn,
            table,
            path,
            fmt,
            loader::default_threads(),
            Some(&report),
        )?)
    })
}
