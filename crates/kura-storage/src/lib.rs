//! kura-storage: the storage layer — one database file of checksummed pages with
//! shadow-paged atomic commits, the buffer manager (policies from kura-cache), columnar
//! tables with zone maps, the catalog, and the parallel bulk loader. It knows pages
//! and rows, never SQL (paper 003's storage and buffer manager).

mod blob;
pub mod buffer;
pub mod catalog;
pub mod error;
pub mod file;
pub mod index;
pub mod loader;
mod memory;
pub mod resident;
pub mod rules;
pub mod schema;
pub mod sequence;
pub mod storage;
pub mod table;
mod txn_io;

pub use buffer::{
    forbid_blocking_waits, set_sync_read_observer, thread_io, BufferManager, BufferStats,
    FixAttempt, InFlight, PageGuard, ReadRequest, ReadTicket, SyncRead, TierCapacity, TierConfig,
    TierKind, TierStats, TraceKind,
};
pub use catalog::{Catalog, IndexEntry, ViewDef};
pub use error::{StorageError, StorageResult};
pub use file::{PageId, DEFAULT_PAGE_SIZE};
pub use memory::physical_memory;
pub use schema::{ColumnDef, Schema};
pub use storage::{default_buffer_bytes, Storage, StorageOptions, TxnSavepoint, WriteTxn};
pub use table::{ColumnStats, PageZone, Table, TableMeta};
