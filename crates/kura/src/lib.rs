//! kura: the database façade every front end uses — `Database::open`, sessions
//! that `execute` SQL, loading, settings — joining the layers' errors into one.

pub mod arrow;
pub mod buffer;
mod cancel;
mod client_settings;
mod copy;
mod copy_arrow;
pub mod copy_binary;
mod copy_out;
mod cursor;
pub mod database;
pub mod ddl;
mod describe;
mod dml;
mod enforce;
pub mod error;
mod export;
mod file_access;
mod files;
pub mod identity;
mod limits;
pub mod llc;
pub mod load_file;
mod names;
mod on_conflict;
pub mod params;
mod parsing;
pub mod pg_numeric;
mod prepared;
pub mod profile;
mod progress;
mod query;
mod query_context;
mod registered;
pub mod result;
mod returning;
mod sequences;
pub mod session;
pub mod stack;
mod storage_table;
mod system_catalog;
mod table_rules;
mod temp;
pub mod tpch;
mod txn;

pub use copy::CopyInput;
pub use copy_out::CopyOutput;
pub use database::{default_max_memory, Database, OpenOptions};
pub use error::{KuraError, KuraResult};
pub use file_access::FileAccess;
pub use result::{QueryResult, ResultColumn, RowSink};
pub use session::{CancelHandle, Prepared, Progress, Session};

pub use kura_common::{Batch, DataType, Value};

/// Gives the memory the allocator keeps free for reuse back to the system: the
/// calling thread's and, when the query runtime has started, every worker's.
/// For a long-running process after large statements (the server calls it).
pub fn release_free_memory() {
    kura_common::allocator::release_free_memory();
    if let Some(runtime) = kura_exec::runtime::started_shared_runtime() {
        runtime.release_free_memory();
    }
}
pub use kura_storage::Storage;
