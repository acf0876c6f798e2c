//! Files as tables (DESIGN.md "Files and Arrow"): `read_parquet`, `read_csv` and `read_json` are table
//! sources the scan reads by row group, like stored tables, so the out-of-order runtime
//! runs them as morsels and zone maps (row-group statistics) skip what a filter excludes.

mod cache;
pub mod csv;
pub mod json;
pub mod parquet;
mod prefetched;
mod split;
pub mod text;

use std::path::PathBuf;

use crate::error::{ExecError, ExecResult};

/// SQLSTATE of a file that does not exist (PostgreSQL's `undefined_file`).
pub const UNDEFINED_FILE: &str = "58P01";
/// SQLSTATE of a file that exists but cannot be read as its format says.
pub const BAD_FILE: &str = "22000";

/// The files `pattern` names: itself, or — when it holds `*`, `?` or `[` — every file the
/// glob matches, in name order. No match is an error naming the pattern.
pub fn expand(pattern: &str) -> ExecResult<Vec<PathBuf>> {
    if !pattern.contains(['*', '?', '[']) {
        return Ok(vec![PathBuf::from(pattern)]);
    }
    let paths = glob::glob(pattern).map_err(|e| ExecError::File {
        code: "22023",
        message: format!("bad file pattern {pattern:?}: {e}"),
    })?;
    let mut out = Vec::new();
    for p in paths {
        let p = p.map_err(|e| ExecError::File {
            code: UNDEFINED_FILE,
            message: format!("{pattern}: {e}"),
        })?;
        if p.is_file() {
            out.push(p);
        }
    }
    if out.is_empty() {
        return Err(ExecError::File {
            code: UNDEFINED_FILE,
            message: format!("no file matches {pattern:?}"),
        });
    }
    out.sort();
    Ok(out)
}

/// An I/O error on `path` as a file error with PostgreSQL's SQLSTATE for its kind.
pub fn io_error(path: &std::path::Path, e: std::io::Error) -> ExecError {
    let code = match e.kind() {
        std::io::ErrorKind::NotFound => UNDEFINED_FILE,
        std::io::ErrorKind::PermissionDenied => "42501",
        _ => "58030",
    };
    ExecError::File {
        code,
        message: format!("could not open file \"{}\": {e}", path.display()),
    }
}

/// A file that cannot be read as its format says, named in the message.
pub(crate) fn bad(path: &std::path::Path, what: impl std::fmt::Display) -> ExecError {
    ExecError::File {
        code: BAD_FILE,
        message: format!("{}: {what}", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_expand_in_name_order_and_no_match_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        for n in ["b.parquet", "a.parquet", "c.csv"] {
            std::fs::write(dir.path().join(n), b"x").unwrap();
        }
        let pattern = format!("{}/*.parquet", dir.path().display());
        let got = expand(&pattern).unwrap();
        let names: Vec<_> = got
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a.parquet", "b.parquet"]);
        let none = format!("{}/*.json", dir.path().display());
        let e = expand(&none).unwrap_err();
        assert!(e.to_string().contains("no file matches"), "{e}");
        assert_eq!(e.sqlstate(), UNDEFINED_FILE);
        // A plain name is taken as it is (its absence is found when it is opened).
        assert_eq!(
            expand("plain.parquet").unwrap(),
            [PathBuf::from("plain.parquet")]
        );
    }
}
