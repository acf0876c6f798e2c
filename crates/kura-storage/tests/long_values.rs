//! Text values longer than a page (overflow pages, format 3): random lengths
//! around the page boundary survive append → commit → reopen → read_range /
//! fetch_rows; zone maps stay bounds of what their pages hold; dropping a
//! table frees its overflow pages; a damaged overflow page is reported; values
//! beyond the limit are refused; a format-2 file opens and is upgraded by its
//! next commit. `PROPTEST_CASES=N` runs the property test longer.

mod common;

use std::path::Path;

use common::Rng;
use common::*;
use kura_common::{Batch, DataType, Value, Vector, MAX_VALUE_BYTES};
use kura_storage::file::header::SLOT_SIZE;
use kura_storage::file::FORMAT_VERSION;
use kura_storage::{Schema, StorageError};
use proptest::prelude::*;

/// The longest value a 16 KiB column page holds inline, near enough: lengths
/// are drawn around it and around multiples of an overflow page.
const PAGE_PAYLOAD: usize = 16384 - 16;

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn schema() -> Schema {
    Schema::new(vec![
        col("id", DataType::BigInt, false),
        col("s", DataType::Varchar(None), true),
    ])
}

/// A value of `len` bytes whose content depends on `seed` and position, so a
/// chunk read from the wrong page or offset is caught.
fn text(len: usize, seed: u64) -> String {
    let seed = seed % 26;
    (0..len)
        .map(|i| (b'a' + ((i as u64 * 7 + seed * 13 + (i as u64 >> 12)) % 26) as u8) as char)
        .collect()
}

fn batch(first_id: i64, values: &[Option<String>]) -> Batch {
    let ids: Vec<Value> = (0..values.len() as i64)
        .map(|i| Value::BigInt(first_id + i))
        .collect();
    let s: Vec<Value> = values
        .iter()
        .map(|v| v.clone().map_or(Value::Null, Value::Text))
        .collect();
    Batch::new(vec![
        Vector::from_values(DataType::BigInt, &ids).unwrap(),
        Vector::from_values(DataType::Varchar(None), &s).unwrap(),
    ])
}

fn expected(values: &[Option<String>]) -> Vector {
    let s: Vec<Value> = values
        .iter()
        .map(|v| v.clone().map_or(Value::Null, Value::Text))
        .collect();
    Vector::from_values(DataType::Varchar(None), &s).unwrap()
}

/// Writes `values` into a new table `t` of a new database at `path`.
fn write(path: &Path, values: &[Option<String>]) {
    let storage = open(path);
    let mut txn = storage.begin().unwrap();
    txn.create_table("t", schema()).unwrap();
    txn.append("t", &batch(0, values)).unwrap();
    txn.commit().unwrap();
}

/// Checks `t` holds exactly `values`, read whole, in windows and by row ids,
/// and that each page's zone map bounds the values on it.
fn check(path: &Path, values: &[Option<String>], seed: u64) {
    let storage = open(path);
    let table = storage.catalog().table("t").expect("table t");
    assert_eq!(table.row_count(), values.len() as u64);
    let want = expected(values);
    let mut rng = Rng::new(seed);
    assert_same(&read_column(&table, 1, &mut rng), &want, "read_range");
    let mut ids: Vec<u64> = (0..values.len() as u64).collect();
    for i in (1..ids.len()).rev() {
        ids.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let fetched = table.fetch_rows(1, &ids).unwrap();
    for (k, &id) in ids.iter().enumerate() {
        assert_eq!(
            fetched.get_value(k),
            want.get_value(id as usize),
            "fetch_rows of row {id}"
        );
    }
    for z in table.zones(1) {
        for r in z.first_row..z.first_row + z.row_count as u64 {
            if let Some(v) = &values[r as usize] {
                let (Value::Text(lo), Value::Text(hi)) = (&z.min, &z.max) else {
                    panic!("zone of row {r} has no text bounds")
                };
                assert!(lo.len() <= 256 && hi.len() <= 256, "zone bounds kept short");
                assert!(lo.as_str() <= v.as_str(), "zone min above row {r}");
                assert!(hi.as_str() >= v.as_str(), "zone max below row {r}");
                // CHAR reading: trailing blanks ignored, the bounds still hold.
                let t = |x: &str| x.trim_end_matches(' ').to_string();
                assert!(t(lo) <= t(v) && t(hi) >= t(v), "trimmed bounds of row {r}");
            }
        }
    }
}

fn around_the_page() -> impl Strategy<Value = usize> {
    prop_oneof![
        0usize..64,
        PAGE_PAYLOAD - 40..PAGE_PAYLOAD + 40,
        2 * PAGE_PAYLOAD - 60..2 * PAGE_PAYLOAD + 60,
        3 * PAGE_PAYLOAD - 60..3 * PAGE_PAYLOAD + 60,
        1usize..200_000,
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(12)))]

    #[test]
    fn random_lengths_around_the_page_round_trip(
        lens in prop::collection::vec(prop::option::weighted(0.9, around_the_page()), 1..12),
        seed in any::<u64>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("long.kura");
        let values: Vec<Option<String>> = lens
            .iter()
            .enumerate()
            .map(|(i, l)| l.map(|l| text(l, seed.wrapping_add(i as u64))))
            .collect();
        write(&path, &values);
        // A new open reads everything from disk.
        check(&path, &values, seed);
    }
}

#[test]
fn the_longest_value_round_trips_and_one_byte_more_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("max.kura");
    let values = vec![Some(text(MAX_VALUE_BYTES, 3)), Some("after".into())];
    write(&path, &values);
    check(&path, &values, 1);
    let storage = open(&path);
    let mut txn = storage.begin().unwrap();
    txn.append("t", &batch(2, &[Some(text(MAX_VALUE_BYTES + 1, 4))]))
        .unwrap();
    let e = txn.commit().expect_err("too long a value was stored");
    let msg = e.to_string();
    assert!(
        msg.contains("16777217 bytes long") && msg.contains("column \"s\""),
        "{msg}"
    );
    drop(storage);
    check(&path, &values, 2);
}

#[test]
fn dropped_and_truncated_tables_free_their_overflow_pages() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("free.kura");
    let values: Vec<Option<String>> = (0..6).map(|i| Some(text(300_000, i))).collect();
    write(&path, &values);
    let storage = open(&path);
    let pages = storage.page_count();
    // Each cycle frees what the one before wrote: the file stops growing.
    for _ in 0..3 {
        let mut txn = storage.begin().unwrap();
        txn.drop_table("t").unwrap();
        txn.create_table("t", schema()).unwrap();
        txn.append("t", &batch(0, &values)).unwrap();
        txn.commit().unwrap();
        let mut txn = storage.begin().unwrap();
        txn.truncate("t").unwrap();
        txn.append("t", &batch(0, &values)).unwrap();
        txn.commit().unwrap();
    }
    assert!(
        storage.page_count() <= pages * 2 + 4,
        "file grew from {pages} to {} pages",
        storage.page_count()
    );
    drop(storage);
    check(&path, &values, 5);
}

#[test]
fn a_damaged_overflow_page_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.kura");
    let values = vec![Some(text(100_000, 9))];
    write(&path, &values);
    let overflow = {
        let storage = open(&path);
        let table = storage.catalog().table("t").unwrap();
        let o = table.meta().columns[1].overflow.clone();
        assert_eq!(o.len(), 6, "100,000 bytes take 6 overflow pages");
        o[3]
    };
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[overflow as usize * 16384 + 5000] ^= 0x10;
    std::fs::write(&path, &bytes).unwrap();
    let storage = open(&path);
    let table = storage.catalog().table("t").unwrap();
    match table.read_range(1, 0, 1) {
        Err(StorageError::Checksum { page, .. }) => assert_eq!(page, overflow),
        other => panic!("damage not reported: {other:?}"),
    }
    // Column 0 has no long values and still reads.
    assert_eq!(
        table.read_range(0, 0, 1).unwrap().get_value(0),
        Value::BigInt(0)
    );
}

#[test]
fn a_format_2_file_opens_and_its_next_commit_writes_format_3() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v2.kura");
    let short = vec![Some("a".to_string()), None, Some("b".into())];
    write(&path, &short);
    // Rewrite both header slots as format 2 (the layout is unchanged).
    let mut bytes = std::fs::read(&path).unwrap();
    for s in bytes[..2 * SLOT_SIZE].chunks_mut(512) {
        s[12..16].copy_from_slice(&2u32.to_le_bytes());
        let crc = crc32fast::hash(&s[4..]);
        s[0..4].copy_from_slice(&crc.to_le_bytes());
    }
    std::fs::write(&path, &bytes).unwrap();
    check(&path, &short, 7);
    let version = |path: &Path| {
        let b = std::fs::read(path).unwrap();
        let active = if u64::from_le_bytes(b[16..24].try_into().unwrap())
            > u64::from_le_bytes(b[SLOT_SIZE + 16..SLOT_SIZE + 24].try_into().unwrap())
        {
            0
        } else {
            SLOT_SIZE
        };
        u32::from_le_bytes(b[active + 12..active + 16].try_into().unwrap())
    };
    assert_eq!(version(&path), 2);
    let mut all = short.clone();
    all.push(Some(text(50_000, 1)));
    {
        let storage = open(&path);
        let mut txn = storage.begin().unwrap();
        txn.append("t", &batch(3, &all[3..])).unwrap();
        txn.commit().unwrap();
    }
    assert_eq!(version(&path), FORMAT_VERSION);
    check(&path, &all, 8);
}
