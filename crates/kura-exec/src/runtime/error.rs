//! The runtime's error type: a task's own error, a caught panic, or a failure of the runtime itself.

/// Any error a task may return; operators return their own error type and
/// recover it with [`RuntimeError::into_task_error`].
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What can go wrong while running tasks.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// A task returned an error; the first one of a scope is kept.
    #[error("{0}")]
    Task(BoxError),
    /// A task panicked; the panic was caught and the runtime stays usable.
    #[error("internal error: a task panicked: {0}")]
    Panic(String),
    /// The awaited completion was dropped without ever being completed
    /// (its owner failed or was cancelled).
    #[error("the awaited operation was abandoned before it completed")]
    Abandoned,
    /// `block_on`/`run_serial` was called from inside a runtime task, which
    /// would block a worker on its own work.
    #[error(
        "cannot block on the runtime from inside one of its tasks; spawn a child task instead"
    )]
    Reentrant,
    /// The runtime could not be started (threads, event descriptors).
    #[error("cannot start the task runtime: {0}")]
    Start(String),
    /// An operating-system I/O error.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

impl RuntimeError {
    /// Recovers a task error of a known type (e.g. the operators' own error),
    /// or gives `self` back when it is something else.
    pub fn into_task_error<E: std::error::Error + 'static>(self) -> Result<E, RuntimeError> {
        match self {
            RuntimeError::Task(e) => match e.downcast::<E>() {
                Ok(e) => Ok(*e),
                Err(e) => Err(RuntimeError::Task(e)),
            },
            other => Err(other),
        }
    }
}
