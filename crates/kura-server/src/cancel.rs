//! Which connection a CancelRequest means: process id and secret key to the
//! canceller of that connection's session.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use bytes::Bytes;
use pgwire::api::cancel::CancelHandler;
use pgwire::messages::cancel::CancelRequest;

use crate::engine::Canceller;

/// Live connections by backend process id.
#[derive(Default)]
pub struct CancelRegistry {
    by_pid: Mutex<HashMap<i32, (Bytes, Canceller)>>,
}

impl CancelRegistry {
    pub fn register(&self, pid: i32, secret: Bytes, canceller: Canceller) {
        self.lock().insert(pid, (secret, canceller));
    }

    pub fn unregister(&self, pid: i32) {
        self.lock().remove(&pid);
    }

    /// Cancels the query of `pid` if the secret matches; false when it does not
    /// (a wrong key must not let one client cancel another's query).
    pub fn cancel(&self, pid: i32, secret: &[u8]) -> bool {
        let target = self
            .lock()
            .get(&pid)
            .filter(|(s, _)| s.as_ref() == secret)
            .map(|(_, c)| c.clone());
        match target {
            Some(c) => {
                c();
                true
            }
            None => false,
        }
    }

    /// Cancels every running query (shutdown).
    pub fn cancel_all(&self) {
        let all: Vec<Canceller> = self.lock().values().map(|(_, c)| c.clone()).collect();
        for c in all {
            c();
        }
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<i32, (Bytes, Canceller)>> {
        self.by_pid.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// pgwire's hook for CancelRequest messages (which arrive on a new connection).
pub struct CancelByKey(pub std::sync::Arc<CancelRegistry>);

#[async_trait]
impl CancelHandler for CancelByKey {
    async fn on_cancel_request(&self, request: CancelRequest) {
        let found = self.0.cancel(request.pid, &request.secret_key.to_bytes());
        tracing::debug!(pid = request.pid, found, "cancel request");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn cancels_only_with_the_right_key() {
        let reg = CancelRegistry::default();
        let hits = Arc::new(AtomicUsize::new(0));
        let h = hits.clone();
        reg.register(
            7,
            Bytes::from_static(b"key1"),
            Arc::new(move || {
                h.fetch_add(1, Ordering::SeqCst);
            }),
        );
        assert!(!reg.cancel(7, b"nope"));
        assert!(!reg.cancel(8, b"key1"));
        assert_eq!(hits.load(Ordering::SeqCst), 0);
        assert!(reg.cancel(7, b"key1"));
        assert_eq!(hits.load(Ordering::SeqCst), 1);
        reg.cancel_all();
        assert_eq!(hits.load(Ordering::SeqCst), 2);
        reg.unregister(7);
        assert!(reg.is_empty());
    }
}
