//! Damaged files: a flipped byte in any page is caught by its checksum, and the
//! error names the file and the page; a damaged newest header slot stops the open
//! (never a silent fall back to the older commit) unless recovery is asked for; a
//! file with no kura header is "not a kura database". Nothing panics.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::*;
use kura_common::{Batch, DataType, Value, Vector};
use kura_storage::{Schema, Storage, StorageError, StorageOptions, Table};

const FIRST: usize = 100_000;
const SECOND: usize = 20_000;

fn schema() -> Schema {
    Schema::new(vec![
        col("id", DataType::BigInt, false),
        col("s", DataType::Varchar(None), true),
        col("x", DataType::Double, true),
    ])
}

fn rows(from: usize, n: usize) -> Vec<Vector> {
    let ids: Vec<Value> = (from..from + n).map(|i| Value::BigInt(i as i64)).collect();
    let s: Vec<Value> = (from..from + n)
        .map(|i| Value::Text(format!("row-{i}-{}", "q".repeat(i % 50))))
        .collect();
    let x: Vec<Value> = (from..from + n)
        .map(|i| {
            if i % 9 == 0 {
                Value::Null
            } else {
                Value::Double(i as f64 * 0.5)
            }
        })
        .collect();
    vec![
        Vector::from_values(DataType::BigInt, &ids).unwrap(),
        Vector::from_values(DataType::Varchar(None), &s).unwrap(),
        Vector::from_values(DataType::Double, &x).unwrap(),
    ]
}

/// A clean database: `FIRST` rows in one commit, `SECOND` more in the next, so the
/// two header slots hold two different committed states.
fn clean_db(dir: &Path) -> PathBuf {
    let path = dir.join("clean.kura");
    let storage = open(&path);
    let mut txn = storage.begin().unwrap();
    txn.create_table("t", schema()).unwrap();
    txn.append("t", &Batch::new(rows(0, FIRST))).unwrap();
    txn.commit().unwrap();
    let mut txn = storage.begin().unwrap();
    txn.append("t", &Batch::new(rows(FIRST, SECOND))).unwrap();
    txn.commit().unwrap();
    path
}

fn copy_of(path: &Path, name: &str) -> PathBuf {
    let to = path.with_file_name(name);
    std::fs::copy(path, &to).unwrap();
    to
}

/// XORs a non-zero byte into `offset` of the file.
fn flip(path: &Path, offset: u64, mask: u8) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[offset as usize] ^= mask.max(1);
    std::fs::write(path, bytes).unwrap();
}

fn open_small(path: &Path) -> Result<Arc<Storage>, StorageError> {
    Storage::open(path, options(16, "clock"))
}

fn page_of(e: &StorageError) -> Option<u64> {
    match e {
        StorageError::Checksum { page, .. } | StorageError::Corrupt { page, .. } => Some(*page),
        _ => None,
    }
}

/// Reads every zone of every column of `table` separately; returns the pages whose
/// reads failed, after checking each failure is a checksum error naming file and
/// page and each success returns the expected rows.
fn read_zones(table: &Table, path: &Path, expected: &[Vector]) -> BTreeSet<u64> {
    let mut failed = BTreeSet::new();
    for (c, exp) in expected.iter().enumerate() {
        for zone in table.zones(c) {
            let n = zone.row_count as usize;
            match table.read_range(c, zone.first_row, n) {
                Ok(v) => assert_same(
                    &v,
                    &exp.slice(zone.first_row as usize, n),
                    &format!("column {c} page {}", zone.page),
                ),
                Err(e) => {
                    assert!(
                        matches!(e, StorageError::Checksum { .. }),
                        "page {}: expected a checksum error, got {e:?}",
                        zone.page
                    );
                    assert_eq!(
                        page_of(&e),
                        Some(zone.page),
                        "the error names the page read"
                    );
                    let text = e.to_string();
                    assert!(
                        text.contains(&path.display().to_string()),
                        "error names the file: {text}"
                    );
                    assert!(
                        text.contains(&format!("page {}", zone.page)),
                        "error names the page: {text}"
                    );
                    failed.insert(zone.page);
                    // fetch_rows of a row on that page fails the same way.
                    let e = table
                        .fetch_rows(c, &[zone.first_row + n as u64 / 2])
                        .unwrap_err();
                    assert_eq!(page_of(&e), Some(zone.page));
                }
            }
        }
    }
    assert_eq!(
        table.buffer().pinned_frames(),
        0,
        "failed reads leave no frame pinned"
    );
    failed
}

fn all_rows() -> Vec<Vector> {
    rows(0, FIRST + SECOND)
}

#[test]
fn damaged_column_pages_fail_with_a_checksum_error_naming_file_and_page() {
    let dir = tempfile::tempdir().unwrap();
    let clean = clean_db(dir.path());
    let zones: Vec<u64> = {
        let storage = open_small(&clean).unwrap();
        let table = storage.catalog().table("t").unwrap();
        (0..3)
            .flat_map(|c| table.zones(c).iter().map(|z| z.page).collect::<Vec<_>>())
            .collect()
    };
    let page_size = kura_storage::DEFAULT_PAGE_SIZE as u64;
    let mut rng = Rng::new(0xC0DE);
    for round in 0..4 {
        let path = copy_of(&clean, &format!("damaged{round}.kura"));
        let mut damaged = BTreeSet::new();
        for _ in 0..12 {
            let page = zones[rng.below(zones.len() as u64) as usize];
            // Anywhere in the page: checksum, kind, page number or payload.
            flip(
                &path,
                page * page_size + rng.below(page_size),
                rng.next_u64() as u8,
            );
            damaged.insert(page);
        }
        let storage = open_small(&path).expect("column pages are not read at open");
        let table = storage.catalog().table("t").unwrap();
        let expected = all_rows();
        let failed = read_zones(&table, &path, &expected);
        assert_eq!(
            failed, damaged,
            "round {round}: exactly the damaged pages fail"
        );
        // A damaged page is never cached as good: reading it again fails again.
        let failed_again = read_zones(&table, &path, &expected);
        assert_eq!(failed_again, damaged);
        // A whole-column read stops at the first damaged page of that column.
        for (c, exp) in expected.iter().enumerate() {
            let first_bad = table
                .zones(c)
                .iter()
                .map(|z| z.page)
                .find(|p| damaged.contains(p));
            let r = table.read_range(c, 0, FIRST + SECOND);
            match first_bad {
                Some(p) => assert_eq!(page_of(&r.unwrap_err()), Some(p)),
                None => assert_same(&r.unwrap(), exp, "undamaged column"),
            }
        }
        let stats = storage.buffer().stats();
        assert_eq!(stats.fixes, stats.hits + stats.misses);
    }
}

#[test]
fn random_damage_anywhere_gives_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let clean = clean_db(dir.path());
    let len = std::fs::metadata(&clean).unwrap().len();
    let page_size = kura_storage::DEFAULT_PAGE_SIZE as u64;
    let mut rng = Rng::new(0xBAD5EED);
    // Damage never opens the older commit silently: the last one or an error.
    let states = [all_rows()];
    for round in 0..12 {
        let path = copy_of(&clean, &format!("random{round}.kura"));
        let mut damaged = BTreeSet::new();
        for _ in 0..1 + rng.below(4) {
            let offset = rng.below(len);
            flip(&path, offset, rng.next_u64() as u8);
            damaged.insert(offset / page_size);
        }
        let storage = match open_small(&path) {
            Ok(s) => s,
            Err(e) => {
                // Only damage to metadata stops the open, and it says where.
                match page_of(&e) {
                    Some(p) => assert!(
                        damaged.contains(&p),
                        "round {round}: open blames undamaged page {p}: {e}"
                    ),
                    None => assert!(
                        matches!(e, StorageError::HeaderDamaged { .. }),
                        "round {round}: {e:?}"
                    ),
                }
                continue;
            }
        };
        let Some(table) = storage.catalog().table("t") else {
            panic!("round {round}: table lost")
        };
        let expected = states
            .iter()
            .find(|s| s[0].len() as u64 == table.row_count())
            .unwrap_or_else(|| {
                panic!(
                    "round {round}: {} rows is no committed state",
                    table.row_count()
                )
            });
        let failed = read_zones(&table, &path, expected);
        assert!(
            failed.is_subset(&damaged),
            "round {round}: undamaged pages failed: {failed:?} vs {damaged:?}"
        );
    }
}

#[test]
fn a_damaged_newest_slot_is_refused_and_recovered_only_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let clean = clean_db(dir.path());
    let recovering = || StorageOptions {
        recover_header: true,
        ..options(16, "clock")
    };
    let mut refused = Vec::new();
    for slot in 0..2u64 {
        for offset in [0u64, 5, 14, 22, 30, 4000] {
            let path = copy_of(&clean, &format!("slot{slot}-{offset}.kura"));
            flip(&path, slot * 4096 + offset, 0x40);
            match open_small(&path) {
                Ok(storage) => {
                    // The spare slot: the last commit opens, with a warning.
                    let table = storage.catalog().table("t").unwrap();
                    assert!(read_zones(&table, &path, &all_rows()).is_empty());
                    assert_eq!(table.row_count() as usize, FIRST + SECOND);
                    assert!(!storage.open_warnings().is_empty());
                }
                Err(e) => {
                    let msg = e.to_string();
                    assert!(matches!(e, StorageError::HeaderDamaged { .. }), "{e:?}");
                    assert!(
                        msg.contains(&format!("header slot {slot} (file offset {}", slot * 4096)),
                        "{msg}"
                    );
                    refused.push(slot);
                    let storage = Storage::open(&path, recovering()).unwrap();
                    let table = storage.catalog().table("t").unwrap();
                    assert_eq!(table.row_count() as usize, FIRST);
                    assert!(
                        read_zones(&table, &path, &rows(0, FIRST)).is_empty(),
                        "no page of the older state was overwritten"
                    );
                    let w = storage.open_warnings().join(" ");
                    assert!(w.contains("is lost"), "{w}");
                }
            }
        }
    }
    // Exactly the newest slot's damage was refused.
    assert_eq!(refused.len(), 6, "{refused:?}");
    let newest = refused[0];
    assert!(refused.iter().all(|s| *s == newest));
    // A recovered state can be written to again, and reopens without recovery.
    let path = copy_of(&clean, "resume.kura");
    flip(&path, newest * 4096 + 22, 0x40);
    {
        let storage = Storage::open(&path, recovering()).unwrap();
        assert_eq!(
            storage.catalog().table("t").unwrap().row_count(),
            FIRST as u64
        );
        let mut txn = storage.begin().unwrap();
        txn.append("t", &Batch::new(rows(FIRST, 5))).unwrap();
        txn.commit().unwrap();
    }
    let storage = open_small(&path).unwrap();
    assert!(storage.open_warnings().is_empty());
    let table = storage.catalog().table("t").unwrap();
    assert!(read_zones(&table, &path, &rows(0, FIRST + 5)).is_empty());
}

#[test]
fn no_valid_header_is_not_a_kura_database() {
    let dir = tempfile::tempdir().unwrap();
    let clean = clean_db(dir.path());
    let both = copy_of(&clean, "both.kura");
    flip(&both, 10, 0x01);
    flip(&both, 4096 + 10, 0x01);
    let text = dir.path().join("text.kura");
    std::fs::write(&text, "id,name\n1,hello\n".repeat(1000)).unwrap();
    let tiny = dir.path().join("tiny.kura");
    std::fs::write(&tiny, [0u8; 100]).unwrap();
    let zeros = dir.path().join("zeros.kura");
    std::fs::write(&zeros, vec![0u8; 64 * 1024]).unwrap();
    let empty = dir.path().join("empty.kura");
    std::fs::write(&empty, []).unwrap();
    for path in [&text, &tiny, &zeros, &empty] {
        let err = open_small(path)
            .err()
            .unwrap_or_else(|| panic!("{} opened", path.display()));
        assert!(
            matches!(err, StorageError::NotADatabase { .. }),
            "{}: {err:?}",
            path.display()
        );
        let msg = err.to_string();
        assert!(msg.contains("not a kura database file"), "{msg}");
        assert!(msg.contains(&path.display().to_string()), "{msg}");
    }
    // A kura file with both slots damaged is a damaged database, not a foreign file.
    let err = open_small(&both).err().expect("opened");
    assert!(matches!(err, StorageError::HeaderDamaged { .. }), "{err:?}");
    assert!(
        err.to_string().contains("neither header slot is intact"),
        "{err}"
    );
    // The damaged file was not "repaired" into an empty database by the failed open.
    assert!(open_small(&both).is_err());
}

#[test]
fn a_truncated_file_gives_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let clean = clean_db(dir.path());
    let len = std::fs::metadata(&clean).unwrap().len();
    for keep in [len / 2, len - 1, 20_000] {
        let path = copy_of(&clean, &format!("cut{keep}.kura"));
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(keep)
            .unwrap();
        match open_small(&path) {
            Err(e) => assert!(
                page_of(&e).is_some() || matches!(e, StorageError::NotADatabase { .. }),
                "{e:?}"
            ),
            Ok(storage) => {
                let table = storage.catalog().table("t").unwrap();
                for c in 0..3 {
                    if let Err(e) = table.read_range(c, 0, FIRST + SECOND) {
                        assert!(page_of(&e).is_some(), "{e:?}");
                    }
                }
            }
        }
    }
}
