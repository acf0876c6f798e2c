//! Which server files a session may read and write (COPY to and from files, files read as tables).

use std::path::{Path, PathBuf};

use crate::error::{KuraError, KuraResult};

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

    /// Whether this session may write server file `name` (`COPY ... TO 'file'`, in any
    /// format): only where it may read any (the embedded database and the shell), never
    /// for a server's clients (PostgreSQL asks for `pg_write_server_files`; a client
    /// writes its own files with TO STDOUT).
    pub fn check_write(&self, name: &str) -> KuraResult<()> {
        if *self == FileAccess::Any {
            return Ok(());
        }
        Err(KuraError::PermissionDenied(format!(
            "COPY to a file on the server is off for clients of this server; \
             use COPY ... TO STDOUT (psql's \\copy ... TO '{name}'): {name}"
        )))
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
