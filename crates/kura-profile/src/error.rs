//! The crate's one error type.

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The event, period or option cannot be used; the message says why in one line.
    #[error("{0}")]
    Invalid(String),
    /// The machine or kernel does not offer what was asked (no PMU, perf disabled, no tool).
    #[error("{0}")]
    Unavailable(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl ProfileError {
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        ProfileError::Io {
            context: context.into(),
            source,
        }
    }
}
