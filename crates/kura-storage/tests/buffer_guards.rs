//! Page guards hold no reference count on the pool: a guard that outlives every
//! handle of its pool still reads its page (the pool leaves its frames
//! allocated then), and a frame invalidated while pinned returns to the free
//! list once its last guard is gone.

mod common;

use std::sync::Arc;

use common::*;
use kura_common::{Batch, DataType, Value, Vector};
use kura_storage::{BufferManager, PageId, Schema, Storage, TraceKind};

fn setup(dir: &std::path::Path) -> (Arc<Storage>, Vec<PageId>) {
    let path = dir.join("guards.kura");
    let storage = open(&path);
    // Scattered over all 64 bits, so the values are stored plain: many pages.
    let k: Vec<Value> = (0..50_000i64)
        .map(|i| Value::BigInt(i.wrapping_mul(0x9E37_79B9_7F4A_7C15_u64 as i64)))
        .collect();
    let mut txn = storage.begin().unwrap();
    txn.create_table("t", Schema::new(vec![col("k", DataType::BigInt, false)]))
        .unwrap();
    txn.append(
        "t",
        &Batch::new(vec![Vector::from_values(DataType::BigInt, &k).unwrap()]),
    )
    .unwrap();
    txn.commit().unwrap();
    let trace = dir.join("pages.trace");
    let bm = storage.buffer();
    bm.start_trace(TraceKind::Requests, &trace).unwrap();
    read_column(&storage.catalog().table("t").unwrap(), 0, &mut Rng::new(1));
    bm.stop_trace().unwrap();
    let mut pages = kura_cache::trace::text::read(&trace, 1).unwrap().requests;
    pages.sort_unstable();
    pages.dedup();
    (storage, pages)
}

#[test]
fn a_guard_outliving_its_pool_still_reads_its_page() {
    let dir = tempfile::tempdir().unwrap();
    let (storage, pages) = setup(dir.path());
    let reference = BufferManager::new(storage.buffer().file().clone(), 256, "clock").unwrap();
    let expected = reference.fix(pages[0]).unwrap().to_vec();
    let bm = BufferManager::new(storage.buffer().file().clone(), 16, "clock").unwrap();
    let guard = bm.fix(pages[0]).unwrap();
    drop(bm);
    // The pool is gone; its frame memory is not (the guard pins it).
    assert_eq!(&*guard, &expected[..]);
    drop(guard);
}

#[test]
fn a_frame_invalidated_while_pinned_is_freed_after_its_guard() {
    let dir = tempfile::tempdir().unwrap();
    let (storage, pages) = setup(dir.path());
    assert!(pages.len() > 8);
    let bm = BufferManager::new(storage.buffer().file().clone(), 4, "lru").unwrap();
    let held: Vec<_> = pages[..3].iter().map(|&p| bm.fix(p).unwrap()).collect();
    for &p in &pages[..3] {
        bm.invalidate(p);
    }
    // Detached and pinned: the fourth frame is all the pool can use.
    for &p in &pages[3..8] {
        drop(bm.fix(p).unwrap());
    }
    assert!(bm.fix(pages[8]).is_ok());
    let pinned = bm.pinned_frames();
    drop(held);
    assert_eq!(bm.pinned_frames(), pinned - 3);
    bm.check_consistency().unwrap();
    // All four frames serve fixes again.
    let again: Vec<_> = pages[..4].iter().map(|&p| bm.fix(p).unwrap()).collect();
    assert_eq!(again.len(), 4);
    drop(again);
    assert_eq!(bm.pinned_frames(), 0);
    bm.check_consistency().unwrap();
}
