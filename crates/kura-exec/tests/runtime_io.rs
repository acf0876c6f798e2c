//! Asynchronous reads through the runtime: right bytes at the right offsets,
//! errors, many tasks sharing one read, reads dropped in flight, and the
//! synchronous fallback.

use std::fs::File;
use std::future::Future;
use std::io::Write;
use std::os::unix::io::AsRawFd;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use kura_exec::runtime::{
    buffer, completion, open_direct, read_at, read_exact_at, spawn, yield_now, AlignedBuf,
    BoxError, IoBackend, Runtime, RuntimeConfig, RuntimeError, IO_ALIGN,
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

const PAGE: usize = 4096;
const PAGES: usize = 512;

/// The byte stored at file position `pos`: varies within and across pages.
fn expected_byte(pos: usize) -> u8 {
    ((pos * 31 + pos / PAGE * 7) % 251) as u8
}

/// A directory under the system temp dir, removed when dropped.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "kura-runtime-io-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&path).expect("create temp dir");
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A temporary file of PAGES pages filled with `expected_byte`, opened with
/// O_DIRECT where the file system supports it.
fn test_file() -> (TempDir, Arc<File>) {
    let dir = TempDir::new();
    let path = dir.0.join("pages.bin");
    let data: Vec<u8> = (0..PAGES * PAGE).map(expected_byte).collect();
    File::create(&path)
        .and_then(|mut f| f.write_all(&data))
        .expect("write test file");
    let file = open_direct(&path)
        .or_else(|_| File::open(&path))
        .expect("open test file");
    (dir, Arc::new(file))
}

fn runtime(io: IoBackend) -> Runtime {
    Runtime::new(RuntimeConfig {
        workers: 2,
        io,
        ..RuntimeConfig::default()
    })
    .expect("runtime starts")
}

fn check_page(page: usize, bytes: &[u8]) -> Result<(), BoxError> {
    for (i, &b) in bytes.iter().enumerate() {
        let want = expected_byte(page * PAGE + i);
        if b != want {
            return Err(format!("page {page} byte {i}: got {b}, want {want}").into());
        }
    }
    Ok(())
}

/// Every page read by its own task, in a scrambled order, lands with its bytes.
fn read_every_page(rt: &Runtime, file: Arc<File>) -> usize {
    let verified = Arc::new(AtomicUsize::new(0));
    let v = verified.clone();
    rt.block_on(async move {
        for k in 0..PAGES {
            let page = (k * 197) % PAGES; // 197 is coprime with 512: a permutation
            let (file, v) = (file.clone(), v.clone());
            spawn(async move {
                let buf =
                    read_exact_at(file.as_raw_fd(), (page * PAGE) as u64, buffer(PAGE)).await?;
                check_page(page, &buf)?;
                v.fetch_add(1, Ordering::Relaxed);
                Ok::<(), BoxError>(())
            });
        }
        Ok::<(), BoxError>(())
    })
    .expect("all reads succeed");
    verified.load(Ordering::Relaxed)
}

#[test]
fn async_reads_return_the_right_bytes() {
    bounded(60, || {
        let (_dir, file) = test_file();
        let rt = runtime(IoBackend::Auto);
        let before = rt.stats().total();
        assert_eq!(read_every_page(&rt, file), PAGES);
        let after = rt.stats().total();
        assert_eq!(after.io_completed - before.io_completed, PAGES as u64);
        assert_eq!(after.io_submitted - before.io_submitted, PAGES as u64);
        if rt.uses_io_uring() {
            assert!(
                after.suspended - before.suspended >= PAGES as u64,
                "every reading task suspends on its read: {after:?}"
            );
        }
    });
}

#[test]
fn io_uring_is_used_where_the_kernel_allows_it() {
    bounded(60, || {
        let rt = runtime(IoBackend::Auto);
        let sync = runtime(IoBackend::Sync);
        assert!(!sync.uses_io_uring());
        if !rt.uses_io_uring() {
            eprintln!("io_uring unavailable here: asynchronous path not exercised");
        }
    });
}

#[test]
fn synchronous_fallback_reads_the_same_bytes() {
    bounded(60, || {
        let (_dir, file) = test_file();
        let rt = runtime(IoBackend::Sync);
        assert_eq!(read_every_page(&rt, file), PAGES);
    });
}

#[test]
fn multi_page_read_and_short_read_at_end_of_file() {
    bounded(60, || {
        let (_dir, file) = test_file();
        let rt = runtime(IoBackend::Auto);
        let fd = file.as_raw_fd();
        rt.block_on(async move {
            let _keep_open = file;
            let buf = read_exact_at(fd, (10 * PAGE) as u64, buffer(8 * PAGE)).await?;
            for p in 0..8 {
                check_page(10 + p, &buf[p * PAGE..(p + 1) * PAGE])?;
            }
            // Two pages requested, one left before the end of the file.
            let (n, buf) = read_at(fd, ((PAGES - 1) * PAGE) as u64, buffer(2 * PAGE)).await;
            assert_eq!(n?, PAGE);
            check_page(PAGES - 1, &buf[..PAGE])?;
            let past_end = read_exact_at(fd, (PAGES * PAGE) as u64, buffer(PAGE)).await;
            assert_eq!(
                past_end.expect_err("nothing past the end").kind(),
                std::io::ErrorKind::UnexpectedEof
            );
            Ok::<(), BoxError>(())
        })
        .expect("reads succeed");
    });
}

#[test]
fn read_errors_reach_the_task() {
    bounded(60, || {
        let rt = runtime(IoBackend::Auto);
        let err = rt
            .block_on(async {
                let (result, _buf) = read_at(-1, 0, AlignedBuf::new(PAGE)).await;
                Ok::<i32, BoxError>(
                    result
                        .expect_err("bad descriptor")
                        .raw_os_error()
                        .unwrap_or(0),
                )
            })
            .expect("scope itself succeeds");
        assert_eq!(err, libc::EBADF);
    });
}

#[test]
fn many_tasks_wait_on_one_read() {
    bounded(60, || {
        let (_dir, file) = test_file();
        let rt = runtime(IoBackend::Auto);
        let before = rt.stats().total().io_submitted;
        let got = Arc::new(AtomicUsize::new(0));
        let g = got.clone();
        rt.block_on(async move {
            let (reader, page) = completion::<Arc<AlignedBuf>>();
            for _ in 0..1000 {
                let (page, g) = (page.clone(), g.clone());
                spawn(async move {
                    let bytes = page.wait().await?;
                    check_page(42, &bytes)?;
                    g.fetch_add(1, Ordering::Relaxed);
                    Ok::<(), BoxError>(())
                });
            }
            spawn(async move {
                // Let the waiters register before the read is even issued.
                yield_now().await;
                let buf = read_exact_at(file.as_raw_fd(), (42 * PAGE) as u64, buffer(PAGE)).await?;
                reader.complete(Arc::new(buf));
                Ok::<(), BoxError>(())
            });
            Ok::<(), BoxError>(())
        })
        .expect("shared read succeeds");
        assert_eq!(got.load(Ordering::Relaxed), 1000);
        assert_eq!(
            rt.stats().total().io_submitted - before,
            1,
            "one read served every waiter"
        );
    });
}

#[test]
fn abandoned_read_releases_waiters_with_an_error() {
    bounded(60, || {
        let rt = runtime(IoBackend::Auto);
        let outcomes = Arc::new(Mutex::new(Vec::new()));
        let o = outcomes.clone();
        rt.block_on(async move {
            let (reader, page) = completion::<u64>();
            for _ in 0..50 {
                let (page, o) = (page.clone(), o.clone());
                spawn(async move {
                    let r = page.wait().await;
                    o.lock()
                        .unwrap()
                        .push(matches!(r, Err(RuntimeError::Abandoned)));
                    Ok::<(), BoxError>(())
                });
            }
            spawn(async move {
                yield_now().await;
                drop(reader);
                Ok::<(), BoxError>(())
            });
            Ok::<(), BoxError>(())
        })
        .expect("scope succeeds");
        let outcomes = outcomes.lock().unwrap();
        assert_eq!(outcomes.len(), 50);
        assert!(outcomes.iter().all(|&abandoned| abandoned));
    });
}

/// Polls a future once and then drops it, whatever its state.
struct PollOnce<F>(Option<Pin<Box<F>>>);

impl<F: Future> Future for PollOnce<F> {
    type Output = bool;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<bool> {
        let mut f = self.0.take().expect("polled once");
        Poll::Ready(f.as_mut().poll(cx).is_pending())
    }
}

#[test]
fn reads_dropped_in_flight_are_safe() {
    bounded(60, || {
        let (_dir, file) = test_file();
        let rt = runtime(IoBackend::Auto);
        let fd = file.as_raw_fd();
        for _ in 0..3 {
            rt.block_on(async move {
                for k in 0..256 {
                    spawn(async move {
                        let read = read_at(fd, ((k % PAGES) * PAGE) as u64, buffer(PAGE));
                        PollOnce(Some(Box::pin(read))).await;
                        Ok::<(), BoxError>(())
                    });
                }
                Ok::<(), BoxError>(())
            })
            .expect("dropping reads is fine");
        }
        // The runtime still reads correctly afterwards, and shuts down with
        // reads possibly still in flight.
        assert_eq!(read_every_page(&rt, file.clone()), PAGES);
        drop(rt);
        let _ = IO_ALIGN;
    });
}

#[test]
fn serial_mode_reads_on_the_callers_thread() {
    bounded(60, || {
        let (_dir, file) = test_file();
        let rt = runtime(IoBackend::Auto);
        let caller = std::thread::current().id();
        let workers_before = rt.stats().workers.iter().map(|w| w.polled).sum::<u64>();
        let sum = rt
            .run_serial(async move {
                let mut sum = 0u64;
                for page in 0..PAGES {
                    assert_eq!(std::thread::current().id(), caller);
                    let buf =
                        read_exact_at(file.as_raw_fd(), (page * PAGE) as u64, buffer(PAGE)).await?;
                    check_page(page, &buf)?;
                    sum += buf.iter().map(|&b| b as u64).sum::<u64>();
                }
                Ok::<u64, BoxError>(sum)
            })
            .expect("serial run succeeds");
        let want: u64 = (0..PAGES * PAGE).map(|p| expected_byte(p) as u64).sum();
        assert_eq!(sum, want);
        let stats = rt.stats();
        assert_eq!(stats.caller.io_completed, PAGES as u64);
        assert_eq!(
            stats.workers.iter().map(|w| w.polled).sum::<u64>(),
            workers_before
        );
    });
}

#[test]
fn pool_reuses_buffers_of_a_worker() {
    bounded(60, || {
        let pool = kura_exec::runtime::BufferPool::new(1 << 20);
        let a = pool.take(5000);
        assert_eq!(a.len(), 5000);
        assert_eq!(a.capacity(), 8192);
        assert_eq!(a.as_ptr() as usize % IO_ALIGN, 0);
        let addr = a.as_ptr() as usize;
        drop(a);
        assert_eq!(pool.cached_bytes(), 8192);
        let b = pool.take(8192);
        assert_eq!(b.as_ptr() as usize, addr, "the freed buffer is reused");
        assert_eq!(pool.counts(), (1, 1));
        drop(b);
        // Past the cache limit, buffers are freed rather than kept.
        let big: Vec<_> = (0..3).map(|_| pool.take(512 * 1024)).collect();
        drop(big);
        assert!(pool.cached_bytes() <= 1 << 20);
    });
}
