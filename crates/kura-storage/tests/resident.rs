//! Resident indexes (paper 001): an index's pages held in the pool survive scans
//! that evict everything else, a set too large for the pool is refused before
//! anything changes, and releasing the set lets its pages go again.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use kura_common::{Batch, DataType, Value, Vector};
use kura_storage::{Storage, StorageError};

const ROWS: usize = 120_000;

fn build(dir: &Path) -> PathBuf {
    let path = dir.join("resident.kura");
    let storage = open(&path);
    let k: Vec<Value> = (0..ROWS as i64)
        .map(|i| Value::BigInt(i * 7 % 1_000_003))
        .collect();
    let s: Vec<Value> = (0..ROWS)
        .map(|i| Value::Text(format!("row {i} {}", "x".repeat(i % 40))))
        .collect();
    let cols = vec![
        Vector::from_values(DataType::BigInt, &k).unwrap(),
        Vector::from_values(DataType::Varchar(None), &s).unwrap(),
    ];
    let mut txn = storage.begin().unwrap();
    txn.create_table(
        "t",
        kura_storage::Schema::new(vec![
            col("k", DataType::BigInt, false),
            col("s", DataType::Varchar(None), false),
        ]),
    )
    .unwrap();
    txn.append("t", &Batch::new(cols)).unwrap();
    txn.create_index("t_k", "t", &["k".to_string()], false, &mut |_, _| {})
        .unwrap();
    txn.commit().unwrap();
    path
}

/// Pages of index `t_k`, interior first, as the resident set lists them.
fn index_pages(storage: &Storage) -> Vec<u64> {
    pages_of(storage, false)
}

/// Pages of index `t_k` held for `resident_indexes`, or only its interior nodes.
fn pages_of(storage: &Storage, interior_only: bool) -> Vec<u64> {
    kura_storage::resident::resident_pages(
        storage.buffer().file(),
        &storage.catalog(),
        &kura_storage::resident::ResidentSpec {
            indexes: vec!["t_k".to_string()],
            interior_only,
        },
    )
    .unwrap()
}

#[test]
fn resident_index_pages_survive_scans_and_are_released() {
    let dir = tempfile::tempdir().unwrap();
    let path = build(dir.path());
    // 320 frames: the table's columns alone are larger, so a scan evicts.
    let storage = Storage::open(&path, options(320, "lru")).unwrap();
    let pages = index_pages(&storage);
    assert!(
        pages.len() > 10 && pages.len() < 200,
        "{} index pages",
        pages.len()
    );
    let held = storage.set_resident_indexes("t_k").unwrap();
    assert_eq!(held, pages.len());
    assert_eq!(storage.buffer().resident_frames(), pages.len());
    let table = storage.catalog().table("t").unwrap();
    let mut rng = Rng::new(3);
    let before_scan = storage.buffer().stats();
    for c in 0..2 {
        read_column(&table, c, &mut rng);
    }
    let scan = storage.buffer().stats().since(&before_scan);
    // More pages than the frames left to queries: without the pins, the scans
    // would have evicted the index.
    let free = 320 - held as u64;
    assert!(
        scan.pages_read > free,
        "the scans must overflow the pool: {scan:?}"
    );
    // Every index page is still there: fixing them all reads nothing.
    let before = storage.buffer().stats();
    for &p in &pages {
        drop(storage.buffer().fix(p).unwrap());
    }
    let after = storage.buffer().stats().since(&before);
    assert_eq!(
        after.pages_read, 0,
        "resident pages were evicted: {after:?}"
    );
    assert_eq!(after.hits, pages.len() as u64);
    // Released: they are evictable again, and nothing stays pinned.
    storage.set_resident_indexes("none").unwrap();
    assert_eq!(storage.buffer().resident_frames(), 0);
    assert_eq!(storage.buffer().pinned_frames(), 0);
    for c in 0..2 {
        read_column(&table, c, &mut rng);
    }
    let before = storage.buffer().stats();
    for &p in &pages {
        drop(storage.buffer().fix(p).unwrap());
    }
    assert!(storage.buffer().stats().since(&before).pages_read > 0);
}

#[test]
fn a_resident_set_too_large_for_the_pool_is_refused_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = build(dir.path());
    // 80 frames, 64 of which must stay free: the index does not fit.
    let storage = Storage::open(&path, options(80, "clock")).unwrap();
    let err = storage.set_resident_indexes("all").unwrap_err();
    assert!(
        matches!(
            err,
            StorageError::ResidentTooLarge {
                frames: 80,
                reserve: 64,
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string().contains("must stay free for queries"),
        "{err}"
    );
    assert_eq!(storage.buffer().resident_frames(), 0);
    assert_eq!(storage.buffer().pinned_frames(), 0);
    // Queries still run over the whole pool.
    let table = storage.catalog().table("t").unwrap();
    read_column(&table, 0, &mut Rng::new(1));
    // Its interior nodes alone fit, and stay while scans evict everything else.
    let interior = pages_of(&storage, true);
    let all = index_pages(&storage);
    assert!(!interior.is_empty() && interior.len() < all.len() / 10);
    assert_eq!(
        interior[..],
        all[..interior.len()],
        "interior nodes come first"
    );
    assert_eq!(
        storage.set_resident_indexes("interior:all").unwrap(),
        interior.len()
    );
    read_column(&table, 1, &mut Rng::new(2));
    let before = storage.buffer().stats();
    for &p in &interior {
        drop(storage.buffer().fix(p).unwrap());
    }
    assert_eq!(storage.buffer().stats().since(&before).pages_read, 0);
    storage.set_resident_indexes("none").unwrap();
    // Unknown names are refused by name.
    let err = storage.set_resident_indexes("t_k, nope").unwrap_err();
    assert!(
        matches!(err, StorageError::NoSuchIndex(ref n) if n == "nope"),
        "{err}"
    );
}

#[test]
fn dropping_a_resident_index_releases_its_frames() {
    let dir = tempfile::tempdir().unwrap();
    let path = build(dir.path());
    let storage = Storage::open(&path, options(512, "density")).unwrap();
    let held = storage.set_resident_indexes("all").unwrap();
    assert!(held > 0);
    let mut txn = storage.begin().unwrap();
    txn.drop_index("t_k").unwrap();
    txn.commit().unwrap();
    assert_eq!(storage.buffer().resident_frames(), 0);
    assert_eq!(storage.buffer().pinned_frames(), 0);
}
