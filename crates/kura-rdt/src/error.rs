//! The crate's one error type.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum RdtError {
    #[error("{0}")]
    Unavailable(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: permission denied — resctrl groups need root (or write access to the resctrl mount)")]
    Permission { path: PathBuf },
    #[error("{path}: unexpected content '{content}'")]
    Parse { path: PathBuf, content: String },
    #[error("way mask {mask:#x} rejected: {reason}")]
    InvalidMask { mask: u64, reason: String },
    #[error("{path}: the kernel refused the write: {status}")]
    Refused { path: PathBuf, status: String },
    #[error("{0}")]
    Busy(String),
}

/// Maps an I/O error on `path`, naming missing permission plainly.
pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> RdtError {
    let path = path.into();
    if source.kind() == std::io::ErrorKind::PermissionDenied {
        RdtError::Permission { path }
    } else {
        RdtError::Io { path, source }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_permission_says_what_is_needed() {
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let text = io("/sys/fs/resctrl/kura-1-scan", denied).to_string();
        assert!(text.contains("need root"), "{text}");
        let other = std::io::Error::from(std::io::ErrorKind::NotFound);
        assert!(matches!(io("/x", other), RdtError::Io { .. }));
    }
}
