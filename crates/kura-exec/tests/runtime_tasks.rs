//! Stress tests of the task runtime: many tasks, deep spawn trees, tasks
//! awaiting each other, errors and panics turned into scope errors.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use kura_exec::runtime::{
    completion, spawn, yield_now, BoxError, Runtime, RuntimeConfig, RuntimeError,
};

/// Runs `f` on its own thread and fails the test if it takes longer than `secs`.
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

fn runtime(workers: usize) -> Runtime {
    Runtime::new(RuntimeConfig {
        workers,
        ..RuntimeConfig::default()
    })
    .expect("runtime starts")
}

#[test]
fn hundred_thousand_tasks_all_run_once() {
    bounded(60, || {
        let rt = runtime(2);
        let counter = Arc::new(AtomicUsize::new(0));
        let c = counter.clone();
        rt.block_on(async move {
            for _ in 0..100_000 {
                let c = c.clone();
                spawn(async move {
                    c.fetch_add(1, Ordering::Relaxed);
                    Ok::<(), BoxError>(())
                });
            }
            Ok::<(), BoxError>(())
        })
        .expect("scope succeeds");
        assert_eq!(counter.load(Ordering::Relaxed), 100_000);
        let total = rt.stats().total();
        assert_eq!(total.spawned, 100_001, "root plus children");
        assert!(
            total.polled >= 100_001,
            "every task polled at least once: {total:?}"
        );
    });
}

// Recursive futures need the explicit `Send` bound that `async fn` cannot state.
#[allow(clippy::manual_async_fn)]
fn tree(depth: u32, leaves: Arc<AtomicUsize>) -> impl Future<Output = Result<(), BoxError>> + Send {
    async move {
        if depth == 0 {
            leaves.fetch_add(1, Ordering::Relaxed);
        } else {
            spawn(tree(depth - 1, leaves.clone()));
            spawn(tree(depth - 1, leaves));
        }
        Ok(())
    }
}

#[test]
fn deep_binary_spawn_tree_finishes_every_leaf() {
    bounded(60, || {
        let rt = runtime(2);
        let leaves = Arc::new(AtomicUsize::new(0));
        rt.block_on(tree(16, leaves.clone())).expect("tree runs");
        assert_eq!(leaves.load(Ordering::Relaxed), 1 << 16);
    });
}

fn chain(
    remaining: usize,
    reached: Arc<AtomicUsize>,
) -> std::pin::Pin<Box<dyn Future<Output = Result<(), BoxError>> + Send>> {
    Box::pin(async move {
        reached.fetch_add(1, Ordering::Relaxed);
        if remaining > 0 {
            spawn(chain(remaining - 1, reached));
        }
        Ok(())
    })
}

#[test]
fn long_spawn_chain_does_not_grow_the_stack() {
    bounded(60, || {
        let rt = runtime(2);
        let reached = Arc::new(AtomicUsize::new(0));
        rt.block_on(chain(50_000, reached.clone()))
            .expect("chain runs");
        assert_eq!(reached.load(Ordering::Relaxed), 50_001);
    });
}

/// Each node sums its subtree by awaiting its children's completions: tasks
/// suspend on other tasks and are woken across workers.
#[allow(clippy::manual_async_fn)]
fn subtree_sum(lo: u64, hi: u64) -> impl Future<Output = Result<u64, BoxError>> + Send {
    async move {
        if hi - lo <= 64 {
            yield_now().await;
            return Ok((lo..hi).sum());
        }
        let mid = (lo + hi) / 2;
        let (left_done, left) = completion::<u64>();
        let (right_done, right) = completion::<u64>();
        spawn(async move {
            left_done.complete(Box::pin(subtree_sum(lo, mid)).await?);
            Ok::<(), BoxError>(())
        });
        spawn(async move {
            right_done.complete(Box::pin(subtree_sum(mid, hi)).await?);
            Ok::<(), BoxError>(())
        });
        Ok(left.wait().await? + right.wait().await?)
    }
}

#[test]
fn tasks_awaiting_children_compute_the_right_sum() {
    bounded(60, || {
        let rt = runtime(2);
        let n = 200_000u64;
        let sum = rt.block_on(subtree_sum(0, n)).expect("sum runs");
        assert_eq!(sum, n * (n - 1) / 2);
    });
}

#[derive(Debug, thiserror::Error)]
#[error("row {0} is bad")]
struct BadRow(usize);

#[test]
fn task_error_fails_the_scope_and_keeps_its_type() {
    bounded(60, || {
        let rt = runtime(2);
        let err = rt
            .block_on(async {
                for i in 0..1000 {
                    spawn(async move {
                        if i == 777 {
                            Err(BadRow(i))
                        } else {
                            Ok(())
                        }
                    });
                }
                Ok::<(), BoxError>(())
            })
            .expect_err("one child fails");
        assert_eq!(err.to_string(), "row 777 is bad");
        let bad = err
            .into_task_error::<BadRow>()
            .expect("downcasts to the task's error type");
        assert_eq!(bad.0, 777);
    });
}

#[test]
fn panicking_task_becomes_an_error_and_the_runtime_stays_usable() {
    bounded(60, || {
        let rt = runtime(2);
        for round in 0..3 {
            let err = rt
                .block_on(async move {
                    for i in 0..500 {
                        spawn(async move {
                            yield_now().await;
                            if i == 250 {
                                panic!("boom in round {round}");
                            }
                            Ok::<(), BoxError>(())
                        });
                    }
                    Ok::<(), BoxError>(())
                })
                .expect_err("the panic surfaces");
            match err {
                RuntimeError::Panic(msg) => {
                    assert!(msg.contains(&format!("boom in round {round}")), "{msg}")
                }
                other => panic!("expected a panic error, got {other:?}"),
            }
            let value = rt
                .block_on(async { Ok::<u32, BoxError>(41 + 1) })
                .expect("runtime still works after a panic");
            assert_eq!(value, 42);
        }
    });
}

#[test]
fn panic_while_holding_a_completer_releases_its_waiters() {
    bounded(60, || {
        let rt = runtime(2);
        let err = rt
            .block_on(async {
                let (done, waited) = completion::<u32>();
                for _ in 0..10 {
                    let waited = waited.clone();
                    spawn(async move {
                        waited.wait().await?;
                        Ok::<(), BoxError>(())
                    });
                }
                spawn(async move {
                    yield_now().await;
                    let _owned = done;
                    panic!("reader died");
                    #[allow(unreachable_code)]
                    Ok::<(), BoxError>(())
                });
                Ok::<(), BoxError>(())
            })
            .expect_err("the panic surfaces");
        assert!(
            matches!(err, RuntimeError::Panic(ref m) if m.contains("reader died")),
            "{err:?}"
        );
    });
}

#[test]
fn blocking_on_the_runtime_from_a_task_is_refused() {
    bounded(60, || {
        let rt = Arc::new(runtime(2));
        let inner = rt.clone();
        let result = rt
            .block_on(async move {
                let nested = inner.block_on(async { Ok::<(), BoxError>(()) });
                Ok::<bool, BoxError>(matches!(nested, Err(RuntimeError::Reentrant)))
            })
            .expect("outer scope runs");
        assert!(result, "nested block_on must return Reentrant");
    });
}

#[test]
fn runtimes_start_and_stop_repeatedly() {
    bounded(60, || {
        for i in 0..20u64 {
            let rt = runtime(2);
            let v = rt
                .block_on(async move { Ok::<u64, BoxError>(i * 2) })
                .expect("runs");
            assert_eq!(v, i * 2);
        }
    });
}

#[test]
fn every_worker_gives_its_free_memory_back_when_asked_even_asleep() {
    bounded(30, || {
        let rt = runtime(2);
        // Each worker allocates and frees on its own thread first.
        rt.block_on(async move {
            for _ in 0..8 {
                spawn(async move {
                    let block = vec![1u8; 8 << 20];
                    std::hint::black_box(&block);
                    Ok::<(), BoxError>(())
                });
            }
            Ok::<(), BoxError>(())
        })
        .expect("scope succeeds");
        let releases = |rt: &Runtime| -> Vec<u64> {
            rt.stats()
                .workers
                .iter()
                .map(|w| w.memory_releases)
                .collect()
        };
        assert_eq!(releases(&rt), vec![0, 0], "nobody asked yet");
        // The workers sleep now: the request must wake them.
        std::thread::sleep(Duration::from_millis(50));
        rt.release_free_memory();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while releases(&rt) != vec![1, 1] {
            assert!(
                std::time::Instant::now() < deadline,
                "workers released {:?}",
                releases(&rt)
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    });
}
