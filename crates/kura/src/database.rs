//! Opening a database: the storage engine behind one handle that hands out sessions.

use std::path::Path;
use std::sync::Arc;

use kura_common::settings::DatabaseSettings;
use kura_common::size::format_setting;
use kura_exec::context::MemoryTracker;
use kura_storage::{Storage, StorageOptions};

use crate::error::{KuraError, KuraResult};
use crate::session::Session;

/// How to open a database (`--buffer`, `--buffered-io`, `--buffer-policy`,
/// `--recover-header`, `--tier2`, `--tier2-mode`, `--tier2-policy`).
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
    /// `--max-memory`: what all running queries together may hold in hash
    /// tables, sorts and results; `None` = [`default_max_memory`].
    pub max_memory: Option<u64>,
    /// Where resctrl is mounted (default `/sys/fs/resctrl`); tests point it at a
    /// tree laid out in a temporary directory.
    pub resctrl_root: Option<std::path::PathBuf>,
    /// The LLC size pipelines are classified against; `None` = this machine's (sysfs).
    pub llc_bytes: Option<u64>,
    /// `--tier2`: a second buffer tier of compressed pages below the pool;
    /// `None` = none (the default).
    pub tier2: Option<kura_storage::TierConfig>,
}

/// Three fifths of physical memory (at least 256 MiB): with the buffer pool's
/// quarter, the process stays below what the machine has even when every
/// session runs a large query at once.
pub fn default_max_memory() -> u64 {
    kura_storage::physical_memory()
        .map(|m| (m / 5 * 3).max(256 << 20))
        .unwrap_or(4 << 30)
}

/// The settings of a database as opened: the server settings (the pool's
/// size, the query memory budget), the actual values, and the database-wide
/// ones its startup options set (the pool's policy, the second tier).
/// `given`: whether `--buffer`, `--max-memory` and `--buffer-policy` were.
fn open_settings(
    storage: &Storage,
    shared_memory: &MemoryTracker,
    given: (bool, bool, bool),
) -> KuraResult<DatabaseSettings> {
    let invalid = |e: kura_common::settings::SettingError| KuraError::Internal(e.to_string());
    let settings = DatabaseSettings::default();
    let bm = storage.buffer();
    let pool = bm.capacity() as u64 * bm.page_size() as u64;
    let boot = format_setting(kura_storage::default_buffer_bytes());
    settings
        .init(
            "shared_buffers",
            &format_setting(pool),
            Some(&boot),
            given.0,
        )
        .map_err(invalid)?;
    let boot = format_setting(default_max_memory());
    let limit = format_setting(shared_memory.limit());
    settings
        .init("max_memory", &limit, Some(&boot), given.1)
        .map_err(invalid)?;
    settings
        .init("buffer_policy", bm.policy_name(), None, given.2)
        .map_err(invalid)?;
    if let Some(tier) = bm.tier_config() {
        let bytes = match tier.capacity {
            kura_storage::TierCapacity::Bytes(b) => b,
            kura_storage::TierCapacity::Pages(n) => n as u64 * bm.page_size() as u64,
        };
        for (name, value) in [
            ("tier2", format_setting(bytes)),
            ("tier2_mode", tier.mode.name().to_string()),
            ("tier2_kind", tier.kind.name().to_string()),
            ("tier2_policy", tier.policy.clone()),
        ] {
            settings.init(name, &value, None, true).map_err(invalid)?;
        }
    }
    Ok(settings)
}

/// An open kura database; cheap to clone, shared by all sessions.
#[derive(Clone)]
pub struct Database {
    storage: Arc<Storage>,
    /// The memory budget every query of every session is also counted against.
    shared_memory: Arc<MemoryTracker>,
    /// LLC partitioning by memory object (paper 000).
    llc: Arc<crate::llc::Llc>,
    /// The database-wide settings and the server settings it was opened with,
    /// which every session reads.
    settings: Arc<DatabaseSettings>,
}

impl Database {
    /// Opens the database file at `path`, creating it if no file exists there
    /// (an existing file that is not a kura database is refused).
    pub fn open(path: &Path, opts: OpenOptions) -> KuraResult<Database> {
        kura_common::allocator::keep_freed_memory();
        let defaults = StorageOptions::default();
        let given = (
            opts.buffer_bytes.is_some(),
            opts.max_memory.is_some(),
            opts.buffer_policy.is_some(),
        );
        let storage = Storage::open(
            path,
            StorageOptions {
                page_size: opts.page_size.unwrap_or(defaults.page_size),
                buffer_bytes: opts.buffer_bytes.unwrap_or(defaults.buffer_bytes),
                direct_io: !opts.buffered_io,
                buffer_policy: opts.buffer_policy.unwrap_or(defaults.buffer_policy),
                recover_header: opts.recover_header,
                tier2: opts.tier2,
            },
        )?;
        // Spill files a crash left behind (they normally have no name at all
        // once open, see kura_exec::spill).
        kura_exec::spill::remove_stale(&crate::query_context::default_temp_directory(path));
        let shared_memory = Arc::new(MemoryTracker::new(
            opts.max_memory.unwrap_or_else(default_max_memory),
        ));
        let root = opts
            .resctrl_root
            .unwrap_or_else(|| kura_rdt::DEFAULT_ROOT.into());
        let settings = Arc::new(open_settings(&storage, &shared_memory, given)?);
        Ok(Database {
            settings,
            storage,
            shared_memory,
            llc: Arc::new(match opts.llc_bytes {
                Some(bytes) => crate::llc::Llc::with_llc_bytes(&root, bytes),
                None => crate::llc::Llc::new(&root),
            }),
        })
    }

    /// Warnings from opening the database (see `Storage::open_warnings`).
    pub fn open_warnings(&self) -> &[String] {
        self.storage.open_warnings()
    }

    /// A new session with default settings.
    pub fn session(&self) -> Session {
        Session::new(
            self.storage.clone(),
            self.shared_memory.clone(),
            self.llc.clone(),
            self.settings.clone(),
        )
    }

    /// The database's LLC control (`kura cache`, `SET llc_protect`).
    pub fn llc(&self) -> &Arc<crate::llc::Llc> {
        &self.llc
    }

    pub fn storage(&self) -> &Arc<Storage> {
        &self.storage
    }

    /// Bytes all running queries hold now, and the most they may hold.
    pub fn shared_memory(&self) -> (u64, u64) {
        (self.shared_memory.used(), self.shared_memory.limit())
    }
}
