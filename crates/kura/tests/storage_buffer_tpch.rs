//! SF 0.01 lineitem read through buffers far smaller than the table (8 frames and
//! 1 MiB) under every replacement policy, serially and from several threads: the
//! data equals a large-buffer read, the counters add up and no frame stays pinned.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use kura::tpch::load::Source;
use kura::{Database, OpenOptions};
use kura_common::Vector;
use kura_storage::{Storage, StorageOptions, Table};

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("kura-storage-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn storage(path: &Path, bytes: u64, policy: &str) -> Arc<Storage> {
    let opts = StorageOptions {
        buffer_bytes: bytes,
        buffer_policy: policy.into(),
        ..StorageOptions::default()
    };
    Storage::open(path, opts).unwrap_or_else(|e| panic!("{policy}: {e}"))
}

/// Column `c` read in windows of `window` rows.
fn read(table: &Table, c: usize, window: usize) -> Vector {
    let mut out = Vector::new(table.schema().columns[c].data_type, 0);
    let mut row = 0;
    while row < table.row_count() {
        out.append(
            &table
                .read_range(c, row, window)
                .unwrap_or_else(|e| panic!("column {c} at {row}: {e}")),
        );
        row += window as u64;
    }
    out
}

#[test]
fn lineitem_through_tiny_buffers_matches_a_large_buffer() {
    let dir = TempDir::new("buftpch");
    let path = dir.0.join("tpch.kura");
    {
        let db = Database::open(
            &path,
            OpenOptions {
                buffer_bytes: Some(64 << 20),
                ..Default::default()
            },
        )
        .unwrap();
        kura::tpch::load(&mut db.session(), Source::Generate(0.01), &|_, _| {}).unwrap();
    }
    let big = storage(&path, 256 << 20, "lru");
    let li = big.catalog().table("lineitem").unwrap();
    assert_eq!(li.row_count(), 60_175);
    let cols = li.schema().len();
    let reference: Vec<Vector> = (0..cols).map(|c| read(&li, c, 65_536)).collect();
    let pages: usize = (0..cols).map(|c| li.zones(c).len()).sum();
    drop(li);
    drop(big);
    let policies: Vec<&str> = kura_cache::POLICY_NAMES
        .iter()
        .copied()
        .filter(|p| *p != "fix")
        .collect();
    for policy in &policies {
        for bytes in [8 * 16 * 1024u64, 1 << 20] {
            let s = storage(&path, bytes, policy);
            let bm = s.buffer().clone();
            assert!(
                pages > 2 * bm.capacity(),
                "{pages} pages vs {} frames",
                bm.capacity()
            );
            let table = s.catalog().table("lineitem").unwrap();
            let before = bm.stats();
            for (c, want) in reference.iter().enumerate() {
                assert!(
                    &read(&table, c, 1000 + 777 * c) == want,
                    "{policy}/{bytes}: column {c} differs"
                );
            }
            // Interleaved columns (a row-wise access pattern) on a few threads.
            std::thread::scope(|sc| {
                for t in 0..3usize {
                    let (table, reference) = (&table, &reference);
                    sc.spawn(move || {
                        for r in (t * 5000..60_175).step_by(15_000) {
                            for c in [t, t + 4, t + 8, 15] {
                                let v = table.read_range(c, r as u64, 2048).unwrap();
                                let n = v.len();
                                assert!(
                                    v == reference[c].slice(r, n),
                                    "{policy}: thread {t} column {c} row {r}"
                                );
                            }
                        }
                    });
                }
            });
            let d = bm.stats().since(&before);
            assert_eq!(d.fixes, d.hits + d.misses, "{policy}/{bytes}: {d:?}");
            assert_eq!(d.pages_read, d.misses, "{policy}/{bytes}: {d:?}");
            assert!(d.misses as usize >= pages, "{policy}/{bytes}: {d:?}");
            assert_eq!(bm.pinned_frames(), 0, "{policy}/{bytes}");
        }
    }
}
