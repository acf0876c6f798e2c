//! Load balancing: the migration plan follows the "below the mean by a ratio"
//! rule, under a real imbalance tasks actually move to the idle worker, and a
//! sleeping worker is given work between the balancer's rounds.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use kura_exec::runtime::{
    current_worker, plan_migrations, spawn, BoxError, Migration, Runtime, RuntimeConfig,
};

fn bounded<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("test exceeded {secs} s"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("test body panicked"),
    }
}

#[test]
fn plan_moves_half_of_an_imbalance_to_the_idle_worker() {
    assert_eq!(
        plan_migrations(&[1000, 0], 0.5),
        vec![Migration {
            from: 0,
            to: 1,
            count: 500
        }]
    );
}

#[test]
fn plan_leaves_nearly_balanced_workers_alone() {
    // Mean 9.5; 9 is not below 9.5 * (1 - 0.5).
    assert!(plan_migrations(&[10, 9], 0.5).is_empty());
    // One runnable task cannot be split usefully.
    assert!(plan_migrations(&[1, 0], 0.5).is_empty());
    assert!(plan_migrations(&[0, 0, 0], 0.5).is_empty());
    assert!(plan_migrations(&[7], 0.5).is_empty());
}

#[test]
fn plan_respects_the_ratio() {
    // Mean 60: with ratio 0.5 the threshold is 30, so 40 receives nothing.
    assert_eq!(plan_migrations(&[80, 40], 0.5), vec![]);
    // With ratio 0.2 the threshold is 48: 40 receives up to the mean.
    assert_eq!(
        plan_migrations(&[80, 40], 0.2),
        vec![Migration {
            from: 0,
            to: 1,
            count: 20
        }]
    );
}

#[test]
fn plan_takes_from_several_donors_and_never_below_the_mean() {
    // Mean 30: worker 3 needs 30; donors 0 and 2 have surplus 20 and 10.
    let plan = plan_migrations(&[50, 30, 40, 0], 0.5);
    assert_eq!(
        plan,
        vec![
            Migration {
                from: 0,
                to: 3,
                count: 20
            },
            Migration {
                from: 2,
                to: 3,
                count: 10
            },
        ]
    );
}

/// Spins for `d` of wall time (CPU work that does not yield).
fn spin(d: Duration) -> u64 {
    let start = Instant::now();
    let mut x = 0u64;
    while start.elapsed() < d {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
    }
    x
}

/// Spawns `tasks` CPU-bound children from one root (so all start on the
/// root's worker) and counts where each one ran.
fn imbalanced_run(rt: &Runtime, tasks: usize) -> Vec<usize> {
    let ran_on: Arc<Vec<AtomicUsize>> =
        Arc::new((0..rt.workers()).map(|_| AtomicUsize::new(0)).collect());
    let r = ran_on.clone();
    rt.block_on(async move {
        for _ in 0..tasks {
            let r = r.clone();
            spawn(async move {
                let w = current_worker().ok_or("not on a worker")?;
                r[w].fetch_add(1, Ordering::Relaxed);
                std::hint::black_box(spin(Duration::from_micros(300)));
                Ok::<(), BoxError>(())
            });
        }
        Ok::<(), BoxError>(())
    })
    .expect("run succeeds");
    ran_on.iter().map(|c| c.load(Ordering::Relaxed)).collect()
}

#[test]
fn tasks_migrate_to_an_idle_worker() {
    bounded(120, || {
        let rt = Runtime::new(RuntimeConfig {
            workers: 2,
            balance_interval: Some(Duration::from_millis(1)),
            ..RuntimeConfig::default()
        })
        .expect("runtime starts");
        let ran_on = imbalanced_run(&rt, 600);
        let stats = rt.stats();
        assert_eq!(ran_on.iter().sum::<usize>(), 600);
        assert!(stats.migrations() > 0, "no migration happened: {stats:?}");
        assert!(
            ran_on.iter().all(|&n| n > 0),
            "one worker ran nothing: {ran_on:?}"
        );
        let migrated_in: u64 = stats.workers.iter().map(|w| w.migrated_in).sum();
        assert_eq!(migrated_in, stats.migrations());
    });
}

#[test]
fn an_idle_worker_gets_tasks_without_waiting_for_a_balancing_round() {
    bounded(120, || {
        // The balancer's first round is an hour away: only a busy worker
        // sharing with the sleeping one can move tasks.
        let rt = Runtime::new(RuntimeConfig {
            workers: 2,
            balance_interval: Some(Duration::from_secs(3600)),
            ..RuntimeConfig::default()
        })
        .expect("runtime starts");
        let ran_on = imbalanced_run(&rt, 600);
        assert_eq!(ran_on.iter().sum::<usize>(), 600);
        // Shared halves keep both busy; a tenth each leaves room for a noisy
        // machine's scheduling.
        assert!(
            ran_on.iter().all(|&n| n >= 60),
            "one worker ran (almost) nothing: {ran_on:?}"
        );
        assert!(rt.stats().migrations() > 0);
    });
}

#[test]
fn without_balancing_children_stay_on_their_parents_worker() {
    bounded(120, || {
        let rt = Runtime::new(RuntimeConfig {
            workers: 2,
            balance_interval: None,
            ..RuntimeConfig::default()
        })
        .expect("runtime starts");
        let ran_on = imbalanced_run(&rt, 200);
        assert_eq!(rt.stats().migrations(), 0);
        assert_eq!(
            ran_on.iter().filter(|&&n| n > 0).count(),
            1,
            "local binding: {ran_on:?}"
        );
    });
}
