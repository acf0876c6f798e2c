//! The CLI's one error type: the façade's, the profiler's, kura-lab's and the server's errors, I/O, and bad option combinations, joined for `main` to print.

use std::io;

use thiserror::Error;

/// Why a `kura` command failed; `main` prints it after `ERROR: ` and exits with 1.
#[derive(Debug, Error)]
pub enum CliError {
    /// From the database (the façade).
    #[error(transparent)]
    Db(#[from] kura::KuraError),
    /// A database error in a step the message names (a query, a `--set`).
    #[error("{context}: {source}")]
    DbIn {
        context: String,
        #[source]
        source: kura::KuraError,
    },
    /// From the profiler (counters, samples, the simulated cache, saved profiles).
    #[error(transparent)]
    Profile(#[from] kura::profile::ProfileError),
    /// From kura-lab: benchmarks, the cache simulator, experiments.
    #[error(transparent)]
    Lab(#[from] kura_lab::LabError),
    /// From the PostgreSQL wire server (`kura serve`).
    #[error("{0}")]
    Server(String),
    /// From `kura cluster` (datafusion-distributed).
    #[cfg(feature = "cluster")]
    #[error(transparent)]
    Cluster(#[from] kura_dist::DistError),
    /// From the interactive shell's line editor.
    #[error(transparent)]
    Shell(#[from] rustyline::error::ReadlineError),
    /// Writing a profile as JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The shell's Ctrl-C handler (another is installed already).
    #[error("cannot install the Ctrl-C handler: {0}")]
    CtrlC(#[source] ctrlc::Error),
    /// Reading or writing (standard input and output, a file).
    #[error(transparent)]
    Io(#[from] io::Error),
    /// Reading or writing what `context` names.
    #[error("{context}: {source}")]
    IoIn {
        context: String,
        #[source]
        source: io::Error,
    },
    /// Options that do not go together, or a value an option cannot take.
    #[error("{0}")]
    Usage(String),
    /// What the command found instead of what it needs (no database, no TPC-H
    /// tables, a wrong answer).
    #[error("{0}")]
    Failed(String),
}

/// `Result` with a [`CliError`].
pub type CliResult<T> = Result<T, CliError>;

impl CliError {
    /// A database error in the step `context` names.
    pub fn db_in(context: impl Into<String>) -> impl FnOnce(kura::KuraError) -> CliError {
        let context = context.into();
        move |source| CliError::DbIn { context, source }
    }

    /// An I/O error on what `context` names.
    pub fn io_in(context: impl Into<String>) -> impl FnOnce(io::Error) -> CliError {
        let context = context.into();
        move |source| CliError::IoIn { context, source }
    }
}
