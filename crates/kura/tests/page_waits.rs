//! A synchronous page fix on a runtime worker never waits for a read that a
//! task queued on the same worker must finish (that wait could never end): it
//! reads a private copy instead. Index operators and transforms fix pages
//! synchronously inside tasks while other tasks read pages asynchronously.
//! And an asynchronous fix that finds every frame pinned waits for a pin to go
//! rather than failing the query.

use std::sync::mpsc;
use std::time::Duration;

use kura::{Database, OpenOptions};
use kura_exec::runtime::{fix_async, page_fix_stats, spawn, BoxError, Runtime, RuntimeConfig};

#[test]
fn sync_fix_of_a_page_read_by_a_task_on_the_same_worker_completes() {
    let (dir, path) = table_file("page-waits", "a BIGINT", |i| format!("({i})"));
    // Reopened: nothing is resident.
    let db = Database::open(&path, OpenOptions::default()).unwrap();
    let table = db.storage().catalog().table("t").unwrap();
    let pages: Vec<u64> = table.zones(0).iter().map(|z| z.page).collect();
    assert!(pages.len() > 2);
    let bm = db.storage().buffer().clone();
    let rt = Runtime::new(RuntimeConfig {
        workers: 1,
        ..RuntimeConfig::default()
    })
    .expect("runtime");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let outcome = rt.block_on(async move {
            let mut firsts = Vec::new();
            for &p in &pages {
                // Each reader task submits its read and suspends ...
                let reader = bm.clone();
                spawn(async move {
                    let g = fix_async(&reader, p).await?;
                    drop(g);
                    Ok::<(), BoxError>(())
                });
                // ... and a task right behind it on the one worker fixes the
                // same page synchronously.
                let fixer = bm.clone();
                spawn(async move {
                    let g = fixer.fix(p)?;
                    drop(g);
                    Ok::<(), BoxError>(())
                });
                firsts.push(p);
            }
            Ok::<usize, BoxError>(firsts.len())
        });
        let _ = tx.send(outcome.map_err(|e| e.to_string()));
    });
    let n = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("a synchronous fix waited for a read its own worker had to finish")
        .expect("the tasks ran");
    assert!(n > 2);
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn async_fix_with_every_frame_pinned_waits_for_a_frame() {
    let full = PinnedFull::new("frame-waits");
    let (bm, wanted) = (full.db.storage().buffer().clone(), full.wanted);
    assert!(
        matches!(
            bm.fix(wanted),
            Err(kura_storage::StorageError::BufferExhausted { .. })
        ),
        "a synchronous fix off the runtime fails at once"
    );
    // The holder lets its pins go a moment after the task asked for a page.
    let waits_before = page_fix_stats().frame_waits;
    let held = full.held;
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        drop(held);
    });
    let fixer = bm.clone();
    let got = on_a_worker(async move { Ok(fix_async(&fixer, wanted).await?.page()) })
        .expect("the fix waited for a frame instead of failing");
    assert_eq!(got, wanted);
    assert!(page_fix_stats().frame_waits > waits_before);
    releaser.join().unwrap();
    assert_eq!(bm.pinned_frames(), 0);
    drop(full.db);
    let _ = std::fs::remove_dir_all(&full.dir);
}

#[test]
fn sync_fix_on_a_worker_with_every_frame_pinned_reads_a_private_copy() {
    let full = PinnedFull::new("frame-private");
    let (bm, wanted) = (full.db.storage().buffer().clone(), full.wanted);
    let reads_before = bm.stats().pages_read;
    let resident_before = bm.resident_pages();
    // A worker may not block for the pins to go (they could be its own tasks'):
    // it reads the page into a buffer of its own, and the pool stays as it was.
    let fixer = bm.clone();
    let (got, bytes) = on_a_worker(async move {
        let g = fixer.fix(wanted)?;
        Ok((g.page(), g.to_vec()))
    })
    .expect("a worker's fix failed with every frame pinned");
    assert_eq!(got, wanted);
    assert_eq!(bm.stats().pages_read, reads_before + 1);
    assert_eq!(bm.pinned_frames(), bm.capacity());
    assert_eq!(
        bm.resident_pages(),
        resident_before,
        "the copy took a frame"
    );
    drop(full.held);
    assert_eq!(bytes, bm.fix(wanted).unwrap().to_vec(), "the copy's bytes");
    drop(full.db);
    let _ = std::fs::remove_dir_all(&full.dir);
}

/// A database with an 8-frame pool whose every frame a holder pins, and a page
/// none of them holds.
struct PinnedFull {
    dir: std::path::PathBuf,
    held: Vec<kura_storage::PageGuard>,
    wanted: u64,
    db: Database,
}

impl PinnedFull {
    fn new(name: &str) -> PinnedFull {
        let (dir, path) = table_file(name, "a BIGINT, b VARCHAR", |i| {
            format!("({i}, 'row {i} of a table spread over many pages')")
        });
        let opts = OpenOptions {
            buffer_bytes: Some(8 * 16 * 1024),
            ..OpenOptions::default()
        };
        let db = Database::open(&path, opts).unwrap();
        let bm = db.storage().buffer().clone();
        let frames = bm.capacity();
        let table = db.storage().catalog().table("t").unwrap();
        let pages: Vec<u64> = (0..2)
            .flat_map(|c| table.zones(c).iter().map(|z| z.page).collect::<Vec<_>>())
            .collect();
        assert!(
            pages.len() > frames,
            "{} pages, {frames} frames",
            pages.len()
        );
        let held: Vec<_> = pages[..frames]
            .iter()
            .map(|&p| bm.fix(p).unwrap())
            .collect();
        assert_eq!(bm.pinned_frames(), frames);
        PinnedFull {
            dir,
            held,
            wanted: pages[frames],
            db,
        }
    }
}

/// Runs `work` as a task on a one-worker runtime; its outcome, or a panic if it
/// neither finishes nor fails within 30 s.
fn on_a_worker<T: Send + 'static>(
    work: impl std::future::Future<Output = Result<T, BoxError>> + Send + 'static,
) -> Result<T, String> {
    let rt = Runtime::new(RuntimeConfig {
        workers: 1,
        ..RuntimeConfig::default()
    })
    .expect("runtime");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(rt.block_on(work).map_err(|e| e.to_string()));
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("the task neither finished nor failed")
}

/// A database file in a fresh temporary directory named after `name`, holding
/// table `t` with `columns` and 20,000 rows, `row(i)` each; closed.
fn table_file(
    name: &str,
    columns: &str,
    row: impl Fn(usize) -> String,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("kura-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.kura");
    let db = Database::open(&path, OpenOptions::default()).unwrap();
    let mut s = db.session();
    s.execute(&format!("CREATE TABLE t ({columns})")).unwrap();
    let values: Vec<String> = (0..20_000).map(row).collect();
    s.execute(&format!("INSERT INTO t VALUES {}", values.join(", ")))
        .unwrap();
    (dir, path)
}
