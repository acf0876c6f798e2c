//! Errors of the storage layer: I/O, corruption, catalog and load errors.

use std::path::PathBuf;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum StorageError {
    #[error("{path}: {op}: {source}")]
    Io {
        path: PathBuf,
        op: &'static str,
        source: std::io::Error,
    },
    #[error("{path}: page {page}: checksum mismatch (expected {expected:#010x}, found {found:#010x}) — the page is damaged")]
    Checksum {
        path: PathBuf,
        page: u64,
        expected: u32,
        found: u32,
    },
    #[error("{path}: page {page}: {what}")]
    Corrupt {
        path: PathBuf,
        page: u64,
        what: String,
    },
    #[error("not a kura database file: {path}: {what}")]
    NotADatabase { path: PathBuf, what: String },
    /// A kura database written in another on-disk format; files are not
    /// converted between formats, so it is refused before anything is read.
    #[error(
        "{path}: kura database of format version {found}; this kura reads format versions \
         {oldest} to {supported} and does not convert older files"
    )]
    FormatVersion {
        path: PathBuf,
        found: u32,
        oldest: u32,
        supported: u32,
    },
    /// The header that names the committed state is damaged in a way that
    /// opening the database could lose a commit.
    #[error("{path}: damaged database header: {what}")]
    HeaderDamaged { path: PathBuf, what: String },
    #[error("{path}: the database is in use by another process (or is already open in this one)")]
    InUse { path: PathBuf },
    #[error("buffer pool exhausted: all {frames} frames are pinned")]
    BufferExhausted { frames: usize },
    /// Resident indexes that would crowd queries out of the buffer pool.
    #[error(
        "resident indexes need {pages} pages, but the buffer pool has {frames} frames and \
         {reserve} must stay free for queries; use a larger --buffer or fewer resident indexes"
    )]
    ResidentTooLarge {
        pages: u64,
        frames: usize,
        reserve: usize,
    },
    #[error("table \"{0}\" does not exist")]
    NoSuchTable(String),
    #[error("table \"{0}\" already exists")]
    TableExists(String),
    #[error("view \"{0}\" does not exist")]
    NoSuchView(String),
    #[error("index \"{0}\" does not exist")]
    NoSuchIndex(String),
    #[error("relation \"{0}\" already exists")]
    RelationExists(String),
    /// Two rows with equal keys in a unique index (a PRIMARY KEY or UNIQUE
    /// constraint is the index of its name).
    #[error("{}", if *.creating {
        format!("could not create unique index \"{index}\": key ({columns})=({values}) is duplicated")
    } else {
        format!("duplicate key value violates unique constraint \"{index}\": key ({columns})=({values}) already exists")
    })]
    UniqueViolation {
        index: String,
        columns: String,
        values: String,
        /// Raised while `CREATE UNIQUE INDEX` builds it, not by new rows.
        creating: bool,
    },
    /// An object others depend on (an index backing a constraint, a table a
    /// foreign key references).
    #[error("{0}")]
    DependentObjects(String),
    #[error("null value in column \"{column}\" of table \"{table}\" violates not-null constraint")]
    NotNull { table: String, column: String },
    #[error("column {column} of table \"{table}\": expected {expected}, got {got}")]
    TypeMismatch {
        table: String,
        column: String,
        expected: String,
        got: String,
    },
    /// A malformed input row: `file:line:column: what`.
    #[error("{file}:{line}:{column}: {what}")]
    BadInput {
        file: String,
        line: u64,
        column: u64,
        what: String,
        /// PostgreSQL's SQLSTATE for it (see `loader::parse::code`).
        code: &'static str,
    },
    /// A sequence error with PostgreSQL's code (2200H past its bounds,
    /// 22003 setval out of range, 42P01 dropped).
    #[error("{message}")]
    Sequence { code: &'static str, message: String },
    #[error("{0}")]
    Invalid(String),
    /// A value or batch beyond a size limit (PostgreSQL's program_limit_exceeded).
    #[error("{0}")]
    TooLarge(String),
    #[error("{0}")]
    Policy(String),
    /// Something kura cannot do yet (PostgreSQL's feature_not_supported).
    #[error("not supported: {0}")]
    Unsupported(String),
}

pub type StorageResult<T> = Result<T, StorageError>;

impl StorageError {
    pub(crate) fn io(path: &std::path::Path, op: &'static str, source: std::io::Error) -> Self {
        StorageError::Io {
            path: path.to_path_buf(),
            op,
            source,
        }
    }
}
