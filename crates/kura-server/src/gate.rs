//! Admission of connections. Logged-in sessions are bounded by
//! `--max-connections`; connections still logging in (TLS, startup packet,
//! password) have a small pool of their own in which the oldest gives way to a
//! newcomer. A real client logs in within milliseconds, so a flood of
//! half-open connections — which used to take every slot until the
//! authentication timeout — cannot lock it out.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

/// Connections logging in at once, by default.
pub const DEFAULT_MAX_PENDING: usize = 64;

/// The server's admission state.
pub struct Gate {
    max_pending: usize,
    /// Connections logging in, oldest first.
    pending: Mutex<VecDeque<Arc<Admission>>>,
    logged_in: AtomicUsize,
    next_id: AtomicUsize,
}

/// One connection's place: pending until it logs in, then a session.
pub struct Admission {
    id: usize,
    gate: Arc<Gate>,
    evicted: Notify,
    logged_in: AtomicBool,
}

impl Gate {
    pub fn new(max_pending: usize) -> Arc<Gate> {
        Arc::new(Gate {
            max_pending: max_pending.max(1),
            pending: Mutex::new(VecDeque::new()),
            logged_in: AtomicUsize::new(0),
            next_id: AtomicUsize::new(0),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Arc<Admission>>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Admits a new connection to the login pool; when the pool is full, the
    /// connection that has been logging in longest is told to close.
    pub fn admit(self: &Arc<Self>) -> Arc<Admission> {
        let a = Arc::new(Admission {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            gate: self.clone(),
            evicted: Notify::new(),
            logged_in: AtomicBool::new(false),
        });
        let mut pending = self.lock();
        while pending.len() >= self.max_pending {
            if let Some(oldest) = pending.pop_front() {
                // A stored permit: the connection closes even if it is not
                // waiting on the notification yet.
                oldest.evicted.notify_one();
            }
        }
        pending.push_back(a.clone());
        a
    }

    /// Sessions logged in now.
    pub fn sessions(&self) -> usize {
        self.logged_in.load(Ordering::SeqCst)
    }

    /// Connections logging in now.
    pub fn pending(&self) -> usize {
        self.lock().len()
    }

    fn remove(&self, id: usize) {
        self.lock().retain(|a| a.id != id);
    }
}

impl Admission {
    /// The client logged in: it leaves the login pool and counts as a session.
    pub fn logged_in(&self) {
        if !self.logged_in.swap(true, Ordering::SeqCst) {
            self.gate.remove(self.id);
            self.gate.logged_in.fetch_add(1, Ordering::SeqCst);
        }
    }

    pub fn is_logged_in(&self) -> bool {
        self.logged_in.load(Ordering::SeqCst)
    }

    /// Resolves when a newer connection took this one's place in the pool.
    pub async fn evicted(&self) {
        self.evicted.notified().await
    }

    /// The connection ended: it leaves the pool, or stops counting as a session.
    pub fn close(&self) {
        if self.logged_in.swap(false, Ordering::SeqCst) {
            self.gate.logged_in.fetch_sub(1, Ordering::SeqCst);
        } else {
            self.gate.remove(self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_pending_connection_gives_way_and_sessions_are_counted_apart() {
        let gate = Gate::new(3);
        let a: Vec<_> = (0..3).map(|_| gate.admit()).collect();
        assert_eq!(gate.pending(), 3);
        a[1].logged_in();
        assert_eq!((gate.pending(), gate.sessions()), (2, 1));
        // Two more: the pool holds 3, so the oldest pending (a[0]) is evicted.
        let b = gate.admit();
        let c = gate.admit();
        assert_eq!(gate.pending(), 3);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            tokio::time::timeout(std::time::Duration::from_secs(1), a[0].evicted())
                .await
                .expect("the oldest was evicted");
            assert!(
                tokio::time::timeout(std::time::Duration::from_millis(50), c.evicted())
                    .await
                    .is_err(),
                "the newest stays"
            );
        });
        a[0].close();
        a[1].close();
        assert_eq!(gate.sessions(), 0);
        b.logged_in();
        c.close();
        assert_eq!((gate.pending(), gate.sessions()), (1, 1));
        b.close();
        a[2].close();
        assert_eq!((gate.pending(), gate.sessions()), (0, 0));
    }
}
