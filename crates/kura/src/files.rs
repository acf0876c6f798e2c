//! Files read as tables (`read_parquet`, `read_csv`, `FROM "f.parquet"`): where this session may read
//! them (the same rule as `COPY ... FROM 'file'`), and the table source of each format.

use std::path::PathBuf;
use std::sync::Arc;

use kura_exec::files::csv::CsvTable;
use kura_exec::files::json::JsonTable;
use kura_exec::files::parquet::ParquetTable;
use kura_exec::{ExecError, TableSource};
use kura_sql::FileFormat;

use crate::file_access::FileAccess;

const PERMISSION_DENIED: &str = "42501";

/// The table of the files `patterns` (paths or globs) name, in `format`, in the order given.
pub(crate) fn open(
    access: &FileAccess,
    format: &FileFormat,
    patterns: &[String],
) -> Result<Arc<dyn TableSource>, ExecError> {
    let mut paths = Vec::new();
    for pattern in patterns {
        paths.extend(expand(access, pattern)?);
    }
    match format {
        FileFormat::Parquet => Ok(Arc::new(ParquetTable::open(&paths)?)),
        FileFormat::Csv(options) => Ok(Arc::new(CsvTable::open_csv(&paths, options)?)),
        FileFormat::Json => Ok(Arc::new(JsonTable::open_json(&paths)?)),
    }
}

/// The files `pattern` names, where this session may read them.
fn expand(access: &FileAccess, pattern: &str) -> Result<Vec<PathBuf>, ExecError> {
    let full = match access {
        FileAccess::Any => PathBuf::from(pattern),
        FileAccess::Under(dir) => dir.join(pattern),
        FileAccess::Denied => {
            return Err(ExecError::File {
                code: PERMISSION_DENIED,
                message: format!(
                    "reading files on the server is off for clients of this server \
                     (start `kura serve` with --copy-dir DIR to allow files below DIR): {pattern}"
                ),
            })
        }
    };
    let full = full.to_str().ok_or_else(|| ExecError::File {
        code: "22021",
        message: format!("file name {pattern:?} is not valid UTF-8"),
    })?;
    let mut paths = kura_exec::files::expand(full)?;
    if let FileAccess::Under(dir) = access {
        for p in &mut paths {
            // Canonical, so neither `..` nor a symbolic link leads outside.
            let real = p
                .canonicalize()
                .map_err(|e| kura_exec::files::io_error(p, e))?;
            if !real.starts_with(dir) {
                return Err(ExecError::File {
                    code: PERMISSION_DENIED,
                    message: format!(
                        "{} is not below the server's file directory {}",
                        p.display(),
                        dir.display()
                    ),
                });
            }
            *p = real;
        }
    }
    Ok(paths)
}
