//! Opening a database: the storage engine behind one handle that hands out sessions.

use std::path::Path;
use std::sync::Arc;

use kura_storage::{Storage, StorageOptions};

use crate::error::KuraResult;
use crate::session::Session;

/// How to open a database (`--buffer`, `--buffered-io`, `--buffer-policy`,
/// `--recover-header`).
#[derive(Debug, Clone, Default)]
pub struct OpenOptions {
    /// Buffer pool bytes; `None` = a quarter of RAM.
    pub buffer_bytes: Option<u64>,
    /// Use the OS page cache instead of O_DIRECT.
    pub buffered_io: bool,
    /// Replacement policy name (default CLOCK).
    pub buffer_policy: Option<String>,
    /// Page size for a new database (default 16 KiB).
    pub page_size: Option<usize>,
    /// `--recover-header`: if the newest header slot is damaged, open the
    /// previous commit (giving up the newest, with a warning) instead of refusing.
    pub recover_header: bool,
}

/// An open kura database; cheap to clone, shared by all sessions.
#[derive(Clone)]
pub struct Database {
    storage: Arc<Storage>,
}

impl Database {
    /// Opens the database file at `path`, creating it if no file exists there
    /// (an existing file that is not a kura database is refused).
    pub fn open(path: &Path, opts: OpenOptions) -> KuraResult<Database> {
        let defaults = StorageOptions::default();
        let storage = Storage::open(
            path,
            StorageOptions {
                page_size: opts.page_size.unwrap_or(defaults.page_size),
                buffer_bytes: opts.buffer_bytes.unwrap_or(defaults.buffer_bytes),
                direct_io: !opts.buffered_io,
                buffer_policy: opts.buffer_policy.unwrap_or(defaults.buffer_policy),
                recover_header: opts.recover_header,
            },
        )?;
        Ok(Database { storage })
    }

    /// Warnings from opening the database (see `Storage::open_warnings`).
    pub fn open_warnings(&self) -> &[String] {
        self.storage.open_warnings()
    }

    /// A new session with default settings.
    pub fn session(&self) -> Session {
        Session::new(self.storage.clone())
    }

    pub fn storage(&self) -> &Arc<Storage> {
        &self.storage
    }
}
