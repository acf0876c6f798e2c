//! A synchronous page fix on a runtime worker never waits for a read that a
//! task queued on the same worker must finish (that wait could never end): it
//! reads a private copy instead. Index operators and transforms fix pages
//! synchronously inside tasks while other tasks read pages asynchronously.

use std::sync::mpsc;
use std::time::Duration;

use kura::{Database, OpenOptions};
use kura_exec::runtime::{fix_async, spawn, BoxError, Runtime, RuntimeConfig};

#[test]
fn sync_fix_of_a_page_read_by_a_task_on_the_same_worker_completes() {
    let dir = std::env::temp_dir().join(format!("kura-page-waits-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.kura");
    {
        let db = Database::open(&path, OpenOptions::default()).unwrap();
        let mut s = db.session();
        s.execute("CREATE TABLE t (a BIGINT)").unwrap();
        let values: Vec<String> = (0..20_000).map(|i| format!("({i})")).collect();
        s.execute(&format!("INSERT INTO t VALUES {}", values.join(", ")))
            .unwrap();
    }
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
