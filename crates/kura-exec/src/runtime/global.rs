//! The one task runtime of the process (paper 003): created on first use with a
//! worker per core and shared by every query, so concurrent queries share the
//! cores instead of each starting its own threads.

use std::sync::OnceLock;

use super::config::RuntimeConfig;
use super::error::RuntimeError;
use super::executor::Runtime;

static SHARED: OnceLock<Result<Runtime, String>> = OnceLock::new();

/// The process-wide runtime, started with the default configuration on first call.
/// A failure to start is remembered and reported on every call.
pub fn shared_runtime() -> Result<&'static Runtime, RuntimeError> {
    SHARED
        .get_or_init(|| {
            let runtime = Runtime::new(RuntimeConfig::default()).map_err(|e| e.to_string())?;
            // Before it is published: whoever sees the runtime sees its reads counted.
            runtime.count_outside_workers();
            Ok(runtime)
        })
        .as_ref()
        .map_err(|e| RuntimeError::Start(e.clone()))
}

/// The process-wide runtime if it has been started (never starts it).
pub fn started_shared_runtime() -> Option<&'static Runtime> {
    SHARED.get().and_then(|r| r.as_ref().ok())
}
