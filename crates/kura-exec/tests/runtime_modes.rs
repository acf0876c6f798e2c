//! The static and serial execution modes, and identical results across the
//! three modes for one computation.

use std::os::unix::io::AsRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use kura_exec::runtime::{
    buffer, completion, current_worker, read_at_blocking, read_exact_at, spawn, AlignedBuf,
    BoxError, Runtime, RuntimeConfig, RuntimeError,
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

fn runtime() -> Runtime {
    Runtime::new(RuntimeConfig {
        workers: 2,
        ..RuntimeConfig::default()
    })
    .expect("runtime starts")
}

#[test]
fn static_parts_run_one_per_worker_in_order() {
    bounded(60, || {
        let rt = runtime();
        let parts: Vec<_> = (0..6u64)
            .map(|i| move || Ok::<(u64, Option<usize>), BoxError>((i * i, current_worker())))
            .collect();
        let run = rt.run_static(parts).expect("parts succeed");
        assert_eq!(run.outputs.len(), 6);
        assert_eq!(run.finished_after.len(), 6);
        for (i, (square, worker)) in run.outputs.iter().enumerate() {
            assert_eq!(*square, (i * i) as u64);
            assert_eq!(*worker, Some(i % 2), "part {i} ran on the wrong worker");
        }
        assert_eq!(rt.stats().migrations(), 0);
    });
}

#[test]
fn static_part_failure_and_panic_are_errors() {
    bounded(60, || {
        let rt = runtime();
        let parts: Vec<Box<dyn FnOnce() -> Result<u32, BoxError> + Send>> =
            vec![Box::new(|| Ok(1)), Box::new(|| Err("part 1 failed".into()))];
        let err = rt.run_static(parts).expect_err("part 1 fails");
        assert_eq!(err.to_string(), "part 1 failed");
        let parts: Vec<Box<dyn FnOnce() -> Result<u32, BoxError> + Send>> =
            vec![Box::new(|| Ok(1)), Box::new(|| panic!("part 1 exploded"))];
        let err = rt.run_static(parts).expect_err("part 1 panics");
        assert!(
            matches!(err, RuntimeError::Panic(ref m) if m.contains("exploded")),
            "{err:?}"
        );
        let empty: Vec<fn() -> Result<u32, BoxError>> = Vec::new();
        assert!(rt
            .run_static(empty)
            .expect("no parts is fine")
            .outputs
            .is_empty());
    });
}

#[test]
fn serial_mode_runs_children_on_the_callers_thread() {
    bounded(60, || {
        let rt = runtime();
        let caller = std::thread::current().id();
        let seen = Arc::new(AtomicUsize::new(0));
        let s = seen.clone();
        rt.run_serial(async move {
            for _ in 0..1000 {
                let s = s.clone();
                spawn(async move {
                    assert_eq!(std::thread::current().id(), caller);
                    s.fetch_add(1, Ordering::Relaxed);
                    Ok::<(), BoxError>(())
                });
            }
            Ok::<(), BoxError>(())
        })
        .expect("serial run succeeds");
        assert_eq!(seen.load(Ordering::Relaxed), 1000);
        let stats = rt.stats();
        assert_eq!(stats.caller.spawned, 1001);
        assert_eq!(
            stats.workers.iter().map(|w| w.polled).sum::<u64>(),
            0,
            "workers stayed idle"
        );
        let err = rt
            .run_serial(async { Err::<(), BoxError>("serial failure".into()) })
            .expect_err("errors surface in serial mode too");
        assert_eq!(err.to_string(), "serial failure");
    });
}

const PAGE: usize = 4096;
const PAGES: usize = 256;

fn byte_at(pos: usize) -> u8 {
    ((pos * 131 + pos / PAGE) % 253) as u8
}

/// Sum of (page number × byte) over the file: order-independent, so equal
/// across modes only if every page is read exactly once and correctly.
fn weight(page: usize, bytes: &[u8]) -> u64 {
    bytes.iter().map(|&b| b as u64 * (page as u64 + 1)).sum()
}

#[test]
fn three_modes_compute_the_same_result() {
    bounded(60, || {
        let dir = std::env::temp_dir().join(format!("kura-runtime-modes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("data.bin");
        let data: Vec<u8> = (0..PAGES * PAGE).map(byte_at).collect();
        std::fs::write(&path, &data).expect("write");
        let want: u64 = (0..PAGES)
            .map(|p| weight(p, &data[p * PAGE..(p + 1) * PAGE]))
            .sum();
        let file = Arc::new(std::fs::File::open(&path).expect("open"));
        let rt = runtime();

        // Out-of-order: a task per page, each suspending on its read.
        let f = file.clone();
        let ooo = rt
            .block_on(async move {
                let mut parts = Vec::new();
                for page in 0..PAGES {
                    let (done, part) = completion::<u64>();
                    parts.push(part);
                    let f = f.clone();
                    spawn(async move {
                        let buf = read_exact_at(f.as_raw_fd(), (page * PAGE) as u64, buffer(PAGE))
                            .await?;
                        done.complete(weight(page, &buf));
                        Ok::<(), BoxError>(())
                    });
                }
                let mut total = 0;
                for part in parts {
                    total += part.wait().await?;
                }
                Ok::<u64, BoxError>(total)
            })
            .expect("ooo run");

        // Static: the pages split into one range per worker, read synchronously.
        let per = PAGES.div_ceil(rt.workers());
        let parts: Vec<_> = (0..rt.workers())
            .map(|w| {
                let f = file.clone();
                move || {
                    let mut buf = AlignedBuf::new(PAGE);
                    let mut total = 0;
                    for page in w * per..((w + 1) * per).min(PAGES) {
                        let n = read_at_blocking(f.as_raw_fd(), (page * PAGE) as u64, &mut buf)?;
                        total += weight(page, &buf[..n]);
                    }
                    Ok::<u64, BoxError>(total)
                }
            })
            .collect();
        let static_total: u64 = rt
            .run_static(parts)
            .expect("static run")
            .outputs
            .iter()
            .sum();

        // Serial: one task, pages in order, synchronous reads on this thread.
        let f = file.clone();
        let serial = rt
            .run_serial(async move {
                let mut total = 0;
                for page in 0..PAGES {
                    let buf =
                        read_exact_at(f.as_raw_fd(), (page * PAGE) as u64, buffer(PAGE)).await?;
                    total += weight(page, &buf);
                }
                Ok::<u64, BoxError>(total)
            })
            .expect("serial run");

        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(ooo, want);
        assert_eq!(static_total, want);
        assert_eq!(serial, want);
        let stats = rt.stats();
        assert!(stats.total().io_completed >= 3 * PAGES as u64, "{stats:?}");
    });
}
