//! The buffer manager with far fewer frames than the table has pages: every policy
//! returns the same data as a large buffer, the counters add up (hits + misses =
//! fixes, pages read = misses), no frame stays pinned, concurrent readers agree, and
//! the try_fix / complete protocol behaves for hits, misses, in-flight reads,
//! failures, abandoned tickets and a fully pinned pool (paper 003).

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::*;
use kura_common::{Batch, DataType, Value, Vector};
use kura_storage::{FixAttempt, Schema, Storage, StorageError};

const ROWS: usize = 200_000;

fn schema() -> Schema {
    Schema::new(vec![
        col("k", DataType::BigInt, false),
        col("v", DataType::Integer, true),
        col("s", DataType::Varchar(None), true),
        col(
            "p",
            DataType::Decimal {
                precision: 12,
                scale: 2,
            },
            true,
        ),
    ])
}

fn build(dir: &Path) -> PathBuf {
    let path = dir.join("buf.kura");
    let storage = open(&path);
    let mut rng = Rng::new(99);
    let k: Vec<Value> = (0..ROWS as i64).map(Value::BigInt).collect();
    let v: Vec<Value> = (0..ROWS)
        .map(|_| {
            if rng.chance(0.05) {
                Value::Null
            } else {
                Value::Integer(rng.next_u64() as i32)
            }
        })
        .collect();
    let s: Vec<Value> = (0..ROWS)
        .map(|i| Value::Text(format!("s{i}{}", "#".repeat(rng.below(30) as usize))))
        .collect();
    let p: Vec<Value> = (0..ROWS)
        .map(|i| Value::Decimal(i as i128 * 101, 2))
        .collect();
    let cols = vec![
        Vector::from_values(DataType::BigInt, &k).unwrap(),
        Vector::from_values(DataType::Integer, &v).unwrap(),
        Vector::from_values(DataType::Varchar(None), &s).unwrap(),
        Vector::from_values(
            DataType::Decimal {
                precision: 12,
                scale: 2,
            },
            &p,
        )
        .unwrap(),
    ];
    let mut txn = storage.begin().unwrap();
    txn.create_table("t", schema()).unwrap();
    txn.append("t", &Batch::new(cols)).unwrap();
    txn.commit().unwrap();
    path
}

/// Every column read with a buffer large enough to hold the whole table.
fn reference(path: &Path) -> Vec<Vector> {
    let storage = Storage::open(path, options(4096, "lru")).unwrap();
    let table = storage.catalog().table("t").unwrap();
    let mut rng = Rng::new(1);
    (0..4).map(|c| read_column(&table, c, &mut rng)).collect()
}

/// The error of a result that must fail (page guards have no `Debug` for `unwrap_err`).
fn expect_err<T>(r: Result<T, StorageError>, what: &str) -> StorageError {
    match r {
        Ok(_) => panic!("expected an error: {what}"),
        Err(e) => e,
    }
}

fn policies() -> Vec<&'static str> {
    kura_cache::POLICY_NAMES
        .iter()
        .copied()
        .filter(|p| *p != "fix")
        .collect()
}

#[test]
fn every_policy_gives_identical_data_with_eight_frames() {
    let dir = tempfile::tempdir().unwrap();
    let path = build(dir.path());
    let expected = reference(&path);
    for policy in policies() {
        let storage =
            Storage::open(&path, options(8, policy)).unwrap_or_else(|e| panic!("{policy}: {e}"));
        let bm = storage.buffer();
        assert_eq!(bm.capacity(), 8);
        assert_eq!(bm.policy_name(), policy);
        let table = storage.catalog().table("t").unwrap();
        let pages: usize = (0..4).map(|c| table.zones(c).len()).sum();
        assert!(
            pages > 20 * bm.capacity(),
            "the table ({pages} pages) dwarfs the buffer"
        );
        let before = bm.stats();
        let mut rng = Rng::new(5);
        for (c, exp) in expected.iter().enumerate() {
            assert_same(
                &read_column(&table, c, &mut rng),
                exp,
                &format!("{policy}: column {c}"),
            );
            let ids: Vec<u64> = (0..2000).map(|_| rng.below(ROWS as u64)).collect();
            let idx: Vec<u32> = ids.iter().map(|&i| i as u32).collect();
            assert_same(
                &table.fetch_rows(c, &ids).unwrap(),
                &exp.take(&idx),
                &format!("{policy}: fetch {c}"),
            );
        }
        let d = bm.stats().since(&before);
        assert_eq!(d.fixes, d.hits + d.misses, "{policy}: {d:?}");
        assert_eq!(
            d.pages_read, d.misses,
            "{policy}: every miss is one page read: {d:?}"
        );
        assert_eq!(
            d.bytes_read,
            d.pages_read * storage.page_size() as u64,
            "{policy}"
        );
        assert!(
            d.misses as usize >= pages,
            "{policy}: every page had to be read at least once: {d:?}"
        );
        assert_eq!(d.pages_written, 0, "{policy}: reads write nothing");
        assert_eq!(bm.pinned_frames(), 0, "{policy}: frames left pinned");
        assert!(bm.resident_pages() <= 8, "{policy}");
    }
}

#[test]
fn policies_can_be_switched_between_reads() {
    let dir = tempfile::tempdir().unwrap();
    let path = build(dir.path());
    let expected = reference(&path);
    let storage = Storage::open(&path, options(8, "clock")).unwrap();
    let table = storage.catalog().table("t").unwrap();
    let mut rng = Rng::new(8);
    for (i, policy) in policies().into_iter().enumerate() {
        storage.buffer().set_policy(policy).unwrap();
        let c = i % 4;
        assert_same(
            &read_column(&table, c, &mut rng),
            &expected[c],
            &format!("after switching to {policy}"),
        );
    }
    let e = storage.buffer().set_policy("fix").unwrap_err();
    assert!(matches!(e, StorageError::Policy(_)), "{e:?}");
    let e = storage.buffer().set_policy("no-such-policy").unwrap_err();
    assert!(e.to_string().contains("no-such-policy"), "{e}");
    assert!(Storage::open(&path, options(8, "bogus")).is_err());
    let s = storage.buffer().stats();
    assert_eq!(s.fixes, s.hits + s.misses);
    assert_eq!(s.pages_read, s.misses);
}

#[test]
fn concurrent_readers_on_a_small_buffer_agree() {
    let dir = tempfile::tempdir().unwrap();
    let path = build(dir.path());
    let expected = Arc::new(reference(&path));
    for policy in ["clock", "lru", "s3fifo"] {
        // fetch_rows may hold two pages for a moment, so 4 threads × 2 ≤ 8 frames.
        let storage = Storage::open(&path, options(8, policy)).unwrap();
        let before = storage.buffer().stats();
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let storage = storage.clone();
                let expected = expected.clone();
                s.spawn(move || {
                    let table = storage.catalog().table("t").unwrap();
                    let mut rng = Rng::new(t);
                    for round in 0..6 {
                        // Threads often read the same column at once: in-flight reads collide.
                        let c = ((t as usize) + round) % 2 * 2;
                        let start = rng.below(ROWS as u64 - 20_000);
                        let v = table.read_range(c, start, 20_000).unwrap();
                        assert_same(
                            &v,
                            &expected[c].slice(start as usize, 20_000),
                            &format!("{policy} thread {t}"),
                        );
                        let ids: Vec<u64> = (0..500).map(|_| rng.below(ROWS as u64)).collect();
                        let idx: Vec<u32> = ids.iter().map(|&i| i as u32).collect();
                        let v = table.fetch_rows(c + 1, &ids).unwrap();
                        assert_same(
                            &v,
                            &expected[c + 1].take(&idx),
                            &format!("{policy} thread {t} fetch"),
                        );
                    }
                });
            }
        });
        let d = storage.buffer().stats().since(&before);
        assert_eq!(d.fixes, d.hits + d.misses, "{policy}: {d:?}");
        assert_eq!(d.pages_read, d.misses, "{policy}: {d:?}");
        assert_eq!(storage.buffer().pinned_frames(), 0, "{policy}");
    }
}

#[test]
fn try_fix_hit_miss_in_flight_and_failures() {
    let dir = tempfile::tempdir().unwrap();
    let path = build(dir.path());
    let storage = Storage::open(&path, options(8, "lru")).unwrap();
    let bm = storage.buffer().clone();
    let table = storage.catalog().table("t").unwrap();
    let pages: Vec<u64> = table.zones(0).iter().map(|z| z.page).collect();
    let expected_first = table.read_range(0, 0, 3).unwrap();
    let (a, b) = (pages[1], pages[2]);

    // Miss: the caller reads into the frame and completes; another fix meanwhile is in flight.
    let before = bm.stats();
    let FixAttempt::Miss(mut ticket) = bm.try_fix(a).unwrap() else {
        panic!("page {a} should miss")
    };
    assert_eq!(ticket.page(), a);
    let FixAttempt::InFlight(waiter) = bm.try_fix(a).unwrap() else {
        panic!("second fix of {a} should be in flight")
    };
    assert!(!waiter.is_done());
    let read = bm.file().read_page_raw(a, ticket.buffer());
    let guard = bm.complete(ticket, read).unwrap();
    assert!(waiter.is_done());
    let shared = waiter.wait().expect("the read succeeded");
    assert_eq!(&guard[..], &shared[..], "both see the same frame");
    assert_eq!(bm.pinned_frames(), 1, "one frame, pinned twice");
    drop(guard);
    drop(shared);
    assert!(matches!(bm.try_fix(a).unwrap(), FixAttempt::Hit(_)));
    let d = bm.stats().since(&before);
    assert_eq!((d.fixes, d.misses, d.pages_read), (3, 1, 1), "{d:?}");

    // A failed read is reported, not cached, and wakes the waiter with None.
    let FixAttempt::Miss(ticket) = bm.try_fix(b).unwrap() else {
        panic!()
    };
    let FixAttempt::InFlight(waiter) = bm.try_fix(b).unwrap() else {
        panic!()
    };
    let e = expect_err(
        bm.complete(
            ticket,
            Err(StorageError::Invalid("simulated I/O failure".into())),
        ),
        "failed read",
    );
    assert!(e.to_string().contains("simulated"));
    assert!(waiter.wait().is_none());
    assert_eq!(bm.pinned_frames(), 0);
    // A ticket whose page bytes are garbage fails its checksum.
    let FixAttempt::Miss(mut ticket) = bm.try_fix(b).unwrap() else {
        panic!("a failed read is not cached")
    };
    ticket.buffer().fill(0xAB);
    let e = expect_err(bm.complete(ticket, Ok(())), "garbage fails its checksum");
    assert!(
        matches!(e, StorageError::Checksum { page, .. } if page == b),
        "{e:?}"
    );
    // An abandoned ticket releases its frame and lets the waiter retry.
    let FixAttempt::Miss(ticket) = bm.try_fix(b).unwrap() else {
        panic!()
    };
    let FixAttempt::InFlight(waiter) = bm.try_fix(b).unwrap() else {
        panic!()
    };
    drop(ticket);
    assert!(waiter.wait().is_none());
    assert_eq!(bm.pinned_frames(), 0);
    let g = bm.fix(b).unwrap();
    assert_eq!(g.page(), b);
    drop(g);

    // Pin every frame: the next miss fails clearly, and succeeds once a pin goes.
    let mut guards: Vec<_> = pages[10..18].iter().map(|&p| bm.fix(p).unwrap()).collect();
    assert_eq!(bm.pinned_frames(), 8);
    let e = expect_err(bm.fix(pages[20]), "no frame is free");
    assert!(
        matches!(e, StorageError::BufferExhausted { frames: 8 }),
        "{e:?}"
    );
    assert!(e.to_string().contains("8 frames"));
    // A resident page can still be fixed.
    drop(bm.fix(pages[12]).unwrap());
    guards.pop();
    drop(bm.fix(pages[20]).unwrap());
    drop(guards);
    assert_eq!(bm.pinned_frames(), 0);
    let s = bm.stats();
    assert_eq!(s.fixes, s.hits + s.misses);
    // The table still reads correctly after all that.
    assert_same(
        &table.read_range(0, 0, 3).unwrap(),
        &expected_first,
        "after the protocol test",
    );
}
