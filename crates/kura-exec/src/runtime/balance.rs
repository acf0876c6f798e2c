//! Conservative load balancing (paper 003): periodically compare the workers'
//! runnable counts with their mean and move tasks only to a worker clearly
//! below it, from the workers above it.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::shared::Shared;

/// One planned move of runnable tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migration {
    pub from: usize,
    pub to: usize,
    pub count: usize,
}

/// Plans migrations for the given runnable counts. A worker receives tasks
/// only when its count is below `mean * (1 - ratio)`; it receives up to its
/// deficit to the mean, taken from the workers with the largest surplus over
/// the mean (never leaving a donor below the mean). A donor serves at most one
/// target per round.
pub fn plan_migrations(counts: &[usize], ratio: f64) -> Vec<Migration> {
    let n = counts.len();
    if n < 2 {
        return Vec::new();
    }
    let mean = counts.iter().sum::<usize>() as f64 / n as f64;
    let threshold = mean * (1.0 - ratio.clamp(0.0, 1.0));
    let mut targets: Vec<usize> = (0..n).filter(|&i| (counts[i] as f64) < threshold).collect();
    targets.sort_by_key(|&i| counts[i]);
    let mut donors: Vec<(usize, usize)> = (0..n)
        .filter_map(|i| {
            let surplus = (counts[i] as f64 - mean).floor();
            (surplus >= 1.0).then_some((i, surplus as usize))
        })
        .collect();
    donors.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut donors = donors.into_iter();
    let mut plan = Vec::new();
    'targets: for to in targets {
        let mut need = (mean - counts[to] as f64).floor() as usize;
        while need > 0 {
            let Some((from, surplus)) = donors.next() else {
                break 'targets;
            };
            let count = need.min(surplus);
            plan.push(Migration { from, to, count });
            need -= count;
        }
    }
    plan
}

/// Body of the monitor thread: balances at `balance_interval` and samples the
/// timeline at its interval, until shutdown.
pub(crate) fn monitor_main(shared: Arc<Shared>) {
    let balance_every = shared.config.balance_interval;
    let mut next_balance = balance_every.map(|d| Instant::now() + d);
    loop {
        let now = Instant::now();
        let mut wait: Option<Duration> = next_balance.map(|t| t.saturating_duration_since(now));
        if let Some(due) = timeline_due(&shared) {
            let until = due.saturating_duration_since(now);
            wait = Some(wait.map_or(until, |w| w.min(until)));
        }
        {
            let guard = shared
                .monitor_lock
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if shared.shutdown.load(Ordering::SeqCst) {
                return;
            }
            let _guard = match wait {
                Some(w) => {
                    shared
                        .monitor_cv
                        .wait_timeout(guard, w)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
                None => shared
                    .monitor_cv
                    .wait(guard)
                    .unwrap_or_else(|e| e.into_inner()),
            };
            if shared.shutdown.load(Ordering::SeqCst) {
                return;
            }
        }
        let now = Instant::now();
        if let (Some(at), Some(every)) = (next_balance, balance_every) {
            if now >= at {
                balance_once(&shared);
                next_balance = Some(now + every);
            }
        }
        if let Some(recorder) = shared
            .timeline
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
        {
            recorder.sample_if_due(&*shared, now);
        }
    }
}

fn timeline_due(shared: &Shared) -> Option<Instant> {
    shared
        .timeline
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .map(|r| r.next_due())
}

fn balance_once(shared: &Shared) {
    let counts: Vec<usize> = shared.slots[..shared.workers]
        .iter()
        .map(|s| s.runnable.load(Ordering::Relaxed))
        .collect();
    for m in plan_migrations(&counts, shared.config.balance_ratio) {
        shared.slots[m.from].request_migration(m.to, m.count);
    }
}
