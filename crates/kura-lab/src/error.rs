//! The experiments' one error type: what failed, by kind, in the words each study prints.

use std::fmt::Display;

/// Why a study stopped. Each layer's error keeps its own words (`Db`, `Io`, `Cache`,
/// ...); the `...At` variants put first what the study was doing or where (a path,
/// a query, a step), as `what: error`.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// The engine refused or failed: opening a database, a query, a setting, a load.
    #[error(transparent)]
    Db(#[from] kura::KuraError),
    /// The same, with the database, query or shape it happened on (boxed: the
    /// engine's error is large, and every `LabResult` would carry its size).
    #[error("{what}: {source}")]
    DbAt {
        what: String,
        #[source]
        source: Box<kura::KuraError>,
    },
    /// Storage below the engine: a page file, the buffer pool, a transaction.
    #[error(transparent)]
    Storage(#[from] kura_storage::StorageError),
    /// The same, with the step it happened in (boxed, as `DbAt`).
    #[error("{what}: {source}")]
    StorageAt {
        what: String,
        #[source]
        source: Box<kura_storage::StorageError>,
    },
    /// The task runtime: starting it, or one of the measurement's tasks.
    #[error(transparent)]
    Runtime(#[from] kura_exec::runtime::RuntimeError),
    /// The same, with the measurement that failed.
    #[error("{what}: {source}")]
    RuntimeAt {
        what: String,
        #[source]
        source: kura_exec::runtime::RuntimeError,
    },
    /// The cache simulators: a policy, a trace, a cache geometry.
    #[error(transparent)]
    Cache(#[from] kura_cache::CacheError),
    /// The same, with the directory the geometry was read from.
    #[error("{what}: {source}")]
    CacheAt {
        what: String,
        #[source]
        source: kura_cache::CacheError,
    },
    /// The profiler: counters, Valgrind, a foreign process's trace.
    #[error(transparent)]
    Profile(#[from] kura_profile::ProfileError),
    /// Cache allocation (resctrl).
    #[error(transparent)]
    Rdt(#[from] kura_rdt::RdtError),
    /// A size that does not parse.
    #[error(transparent)]
    Size(#[from] kura_common::CommonError),
    /// An I/O error whose words need nothing more: mostly writing the report to
    /// the caller's output.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// An I/O error on a file or a process, with which one and what was being done.
    #[error("{what}: {source}")]
    IoAt {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A file opened with O_DIRECT on a file system without it.
    #[error("{0} (tmpfs?); choose another --dir")]
    NoDirectIo(#[source] std::io::Error),
    /// Reading or writing a CSV file.
    #[error(transparent)]
    Csv(#[from] csv::Error),
    /// The same, with the file.
    #[error("{what}: {source}")]
    CsvAt {
        what: String,
        #[source]
        source: csv::Error,
    },
    /// A chart could not be drawn (plotters' error as text: its type depends on
    /// the backend).
    #[error("drawing chart: {0}")]
    Plot(String),
    /// The chart font embedded in the crate could not be registered.
    #[error("the embedded chart font could not be loaded")]
    Font,
    /// An option or argument the study cannot run with.
    #[error("{0}")]
    Invalid(String),
    /// Something the study needs is not there: a database, an index, a query's
    /// text, a column of a CSV, requests in a trace.
    #[error("{0}")]
    Missing(String),
    /// The machine lacks what the study needs: a cache description, PostgreSQL's
    /// programs, an account to run them as.
    #[error("{0}")]
    Unavailable(String),
    /// The study refuses: the premise its paper's effect rests on does not hold here.
    #[error("{0}")]
    Premise(String),
    /// An outside program (PostgreSQL, pgbench, the benchmark suite) failed.
    #[error("{0}")]
    External(String),
    /// A query failed in a runner that reports failures as text (its status).
    #[error("{0}")]
    QueryFailed(String),
    /// A check of the measurement itself failed: frames left pinned, two replays
    /// that disagree, a trace without its measured part.
    #[error("{0}")]
    Check(String),
}

pub type LabResult<T> = Result<T, LabError>;

/// Errors that take what a study was doing in front of their words.
pub(crate) trait WithWhat {
    fn with_what(self, what: String) -> LabError;
}

impl WithWhat for kura::KuraError {
    fn with_what(self, what: String) -> LabError {
        LabError::DbAt {
            what,
            source: Box::new(self),
        }
    }
}

impl WithWhat for kura_storage::StorageError {
    fn with_what(self, what: String) -> LabError {
        LabError::StorageAt {
            what,
            source: Box::new(self),
        }
    }
}

impl WithWhat for kura_exec::runtime::RuntimeError {
    fn with_what(self, what: String) -> LabError {
        LabError::RuntimeAt { what, source: self }
    }
}

impl WithWhat for kura_cache::CacheError {
    fn with_what(self, what: String) -> LabError {
        LabError::CacheAt { what, source: self }
    }
}

impl WithWhat for std::io::Error {
    fn with_what(self, what: String) -> LabError {
        LabError::IoAt { what, source: self }
    }
}

impl WithWhat for csv::Error {
    fn with_what(self, what: String) -> LabError {
        LabError::CsvAt { what, source: self }
    }
}

/// `result.at(path.display())?`: the error printed as `path: error`, its kind kept.
pub(crate) trait At<T> {
    fn at(self, what: impl Display) -> LabResult<T>;
}

impl<T, E: WithWhat> At<T> for Result<T, E> {
    fn at(self, what: impl Display) -> LabResult<T> {
        self.map_err(|e| e.with_what(what.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_keep_the_words_of_the_text_errors() {
        let io = || std::io::Error::other("boom");
        let at = Err::<(), _>(io()).at(format_args!("creating {}", "out"));
        assert_eq!(at.unwrap_err().to_string(), "creating out: boom");
        assert_eq!(LabError::from(io()).to_string(), "boom");
        assert_eq!(
            LabError::NoDirectIo(io()).to_string(),
            "boom (tmpfs?); choose another --dir"
        );
        assert_eq!(
            LabError::Plot("bad".into()).to_string(),
            "drawing chart: bad"
        );
        assert_eq!(LabError::Invalid("--x".into()).to_string(), "--x");
    }
}
