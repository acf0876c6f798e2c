//! A resctrl control group kura created: its directory holds `schemata` (the way
//! masks its tasks may fill), `tasks` (thread ids) and `mon_data` (occupancy).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{io, RdtError};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub(crate) name: String,
    pub(crate) path: PathBuf,
}

impl Group {
    /// Directory name (`kura-<pid>-<label>`).
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// How a control file is written, as the shell's `>` and `>>` would: `schemata` is
/// replaced, a thread id is appended to `tasks`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WriteMode {
    Replace,
    Append,
}

/// Writes `text` to a resctrl control file in one `write`; if the kernel refuses it,
/// the reason is in `info/last_cmd_status`.
pub(crate) fn write_control(
    root: &Path,
    path: &Path,
    text: &str,
    mode: WriteMode,
) -> Result<(), RdtError> {
    let mut options = fs::OpenOptions::new();
    // O_CREAT as the shell uses it: the kernel's files already exist, so it only
    // matters to a tree laid out by hand.
    options.create(true);
    match mode {
        WriteMode::Replace => options.write(true).truncate(true),
        WriteMode::Append => options.append(true),
    };
    let result = options
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()));
    match result {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Err(io(path, e)),
        Err(e) => {
            let status_path = root.join("info").join("last_cmd_status");
            match fs::read_to_string(&status_path) {
                Ok(status) if !status.trim().is_empty() && status.trim() != "ok" => {
                    Err(RdtError::Refused {
                        path: path.to_path_buf(),
                        status: status.trim().to_string(),
                    })
                }
                _ => Err(io(path, e)),
            }
        }
    }
}

/// Removes a group directory. The kernel removes a group's control files with it;
/// a tree laid out by hand needs them removed first.
pub(crate) fn remove_dir(path: &Path) -> Result<(), RdtError> {
    match fs::remove_dir(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::ENOTEMPTY) => {
            fs::remove_dir_all(path).map_err(|e| io(path, e))
        }
        Err(e) => Err(io(path, e)),
    }
}
