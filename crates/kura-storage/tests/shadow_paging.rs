//! Shadow paging: dropped tables' pages are reused by later loads (the file stops
//! growing), yet never while a reader's snapshot can still see them; a transaction
//! that fails or is abandoned leaves the committed state byte for byte untouched.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::*;
use kura_common::{Batch, DataType, Value, Vector};
use kura_storage::loader::{self, TextFormat};
use kura_storage::{Schema, Storage, Table};

fn schema() -> Schema {
    Schema::new(vec![
        col("id", DataType::BigInt, false),
        col("s", DataType::Varchar(None), true),
    ])
}

/// `n` rows whose text depends on `tag`, so two loads never look alike.
fn data(tag: u64, n: usize) -> Vec<Vector> {
    let ids: Vec<Value> = (0..n as i64)
        .map(|i| Value::BigInt(i * 3 + tag as i64))
        .collect();
    let texts: Vec<Value> = (0..n)
        .map(|i| {
            if i % 17 == 0 {
                Value::Null
            } else {
                Value::Text(format!(
                    "{tag}:{i}:{}",
                    "z".repeat((i * 7 + tag as usize) % 60)
                ))
            }
        })
        .collect();
    vec![
        Vector::from_values(DataType::BigInt, &ids).unwrap(),
        Vector::from_values(DataType::Varchar(None), &texts).unwrap(),
    ]
}

fn create_and_load(storage: &Storage, name: &str, rows: &[Vector]) {
    let mut txn = storage.begin().unwrap();
    txn.create_table(name, schema()).unwrap();
    let n = rows[0].len();
    for start in (0..n).step_by(10_000) {
        let len = 10_000.min(n - start);
        txn.append(
            name,
            &Batch::new(rows.iter().map(|v| v.slice(start, len)).collect()),
        )
        .unwrap();
    }
    txn.commit().unwrap();
}

fn drop_table(storage: &Storage, name: &str) {
    let mut txn = storage.begin().unwrap();
    txn.drop_table(name).unwrap();
    txn.commit().unwrap();
}

fn assert_table(table: &Table, rows: &[Vector], what: &str) {
    assert_eq!(table.row_count(), rows[0].len() as u64, "{what}: row count");
    let mut rng = Rng::new(11);
    for (c, expected) in rows.iter().enumerate() {
        let got = read_column(table, c, &mut rng);
        assert_same(&got, expected, &format!("{what}: column {c}"));
    }
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().len()
}

/// A small buffer, so reads of old snapshots really go to the file.
fn open_small(path: &Path) -> Arc<Storage> {
    Storage::open(path, options(16, "clock")).unwrap()
}

#[test]
fn a_catalog_snapshot_still_reads_a_table_dropped_and_overwritten_since() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snap.kura");
    let storage = open_small(&path);
    let a = data(1, 120_000);
    create_and_load(&storage, "t", &a);
    let snapshot = storage.catalog();
    drop_table(&storage, "t");
    assert!(
        storage.catalog().table("t").is_none(),
        "the drop is visible to new readers"
    );
    for k in 0..3 {
        create_and_load(&storage, "u", &data(100 + k, 150_000));
        drop_table(&storage, "u");
    }
    create_and_load(&storage, "t", &data(7, 130_000));
    let old = snapshot
        .table("t")
        .expect("the snapshot still lists the dropped table");
    assert_table(&old, &a, "dropped table read through the old snapshot");
    assert_eq!(storage.buffer().pinned_frames(), 0);
}

#[test]
fn a_table_handle_alone_keeps_the_dropped_tables_pages() {
    // A scan holds the `Table` it found, not the catalog it came from.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("handle.kura");
    let storage = open_small(&path);
    let a = data(2, 120_000);
    create_and_load(&storage, "t", &a);
    let old: Arc<Table> = storage.catalog().table("t").unwrap();
    drop_table(&storage, "t");
    for k in 0..2 {
        create_and_load(&storage, "u", &data(200 + k, 150_000));
        drop_table(&storage, "u");
    }
    create_and_load(&storage, "v", &data(9, 150_000));
    assert_table(
        &old,
        &a,
        "dropped table read through a Table handle held across the drop",
    );
}

#[test]
fn a_reader_keeps_its_row_count_while_a_writer_appends() {
    let dir = tempfile::tempdir().unwrap();
    let storage = open_small(&dir.path().join("append.kura"));
    let a = data(3, 70_000);
    create_and_load(&storage, "t", &a);
    let before = storage.catalog();
    let more = data(4, 30_000);
    let mut txn = storage.begin().unwrap();
    txn.append("t", &Batch::new(more.clone())).unwrap();
    // Uncommitted rows are invisible.
    assert_eq!(storage.catalog().table("t").unwrap().row_count(), 70_000);
    txn.commit().unwrap();
    assert_table(
        &before.table("t").unwrap(),
        &a,
        "snapshot before the append",
    );
    let mut both = a.clone();
    for (v, m) in both.iter_mut().zip(&more) {
        v.append(m);
    }
    assert_table(
        &storage.catalog().table("t").unwrap(),
        &both,
        "after the append",
    );
}

#[test]
fn repeated_drop_create_load_cycles_do_not_grow_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cycles.kura");
    let storage = open_small(&path);
    let rows = data(5, 100_000);
    let mut sizes = Vec::new();
    for _ in 0..40 {
        create_and_load(&storage, "t", &rows);
        drop_table(&storage, "t");
        sizes.push(file_len(&path));
    }
    create_and_load(&storage, "t", &rows);
    assert_table(
        &storage.catalog().table("t").unwrap(),
        &rows,
        "after 40 cycles",
    );
    let page = storage.page_size() as u64;
    // One cycle's data is several hundred pages; once freed pages are reused the
    // file may wobble by a page or two, but must not keep growing cycle after cycle.
    let (early, late) = (sizes[9], sizes[39]);
    assert!(
        late <= early + 4 * page,
        "file grew from {early} bytes after 10 cycles to {late} after 40 ({} pages); sizes: {:?}",
        (late - early) / page,
        sizes.iter().map(|s| s / page).collect::<Vec<_>>()
    );
}

#[test]
fn a_failed_load_leaves_the_committed_state_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("failed.kura");
    let storage = open_small(&path);
    let a = data(6, 50_000);
    create_and_load(&storage, "t", &a);
    let header_before = std::fs::read(&path).unwrap()[..8192].to_vec();
    let generation = storage.catalog().generation();
    // 300 000 good rows (two parse chunks; the first one's row groups are written) and then a bad one.
    let file = dir.path().join("bad.tbl");
    let mut text = String::new();
    for i in 0..300_000 {
        text.push_str(&format!(
            "{i}|row {i} padded to make the file span two parse chunks|\n"
        ));
    }
    text.push_str("oops|bad|\n");
    std::fs::write(&file, text).unwrap();
    {
        let mut txn = storage.begin().unwrap();
        let err =
            loader::load_file(&mut txn, "t", &file, &TextFormat::default(), 2, None).unwrap_err();
        assert!(err.to_string().contains(":300001:1:"), "{err}");
        assert!(
            txn.pages_written() > 0,
            "the failed load had written pages before the bad row"
        );
    }
    assert_eq!(storage.catalog().generation(), generation);
    assert_eq!(
        &std::fs::read(&path).unwrap()[..8192],
        &header_before[..],
        "both header slots unchanged"
    );
    assert_table(
        &storage.catalog().table("t").unwrap(),
        &a,
        "after the failed load",
    );
    let grown = file_len(&path);
    drop(storage);
    let storage = open_small(&path);
    assert_eq!(storage.catalog().generation(), generation);
    assert_table(
        &storage.catalog().table("t").unwrap(),
        &a,
        "reopened after the failed load",
    );
    // The failed load's pages lie past the committed extent and are written over.
    let good = dir.path().join("good.tbl");
    std::fs::write(
        &good,
        (0..300_000)
            .map(|i| format!("{i}|row {i}|\n"))
            .collect::<String>(),
    )
    .unwrap();
    let mut txn = storage.begin().unwrap();
    assert_eq!(
        loader::load_file(&mut txn, "t", &good, &TextFormat::default(), 2, None).unwrap(),
        300_000
    );
    txn.commit().unwrap();
    let page = storage.page_size() as u64;
    assert!(
        file_len(&path) <= grown + 4 * page,
        "the good load reused the failed load's space"
    );
    assert_eq!(storage.catalog().table("t").unwrap().row_count(), 350_000);
}

#[test]
fn an_abandoned_transaction_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("abandon.kura");
    let a = data(8, 1000);
    {
        let storage = open_small(&path);
        create_and_load(&storage, "t", &a);
        let mut txn = storage.begin().unwrap();
        txn.create_table("x", schema()).unwrap();
        txn.append("x", &Batch::new(data(9, 80_000))).unwrap();
        txn.drop_table("t").unwrap();
        drop(txn);
        assert!(storage.catalog().table("x").is_none());
        assert_table(&storage.catalog().table("t").unwrap(), &a, "after rollback");
        // The writer lock was released: another transaction can run.
        let mut txn = storage.begin().unwrap();
        txn.drop_table("t").unwrap();
        txn.create_table("t", schema()).unwrap();
        txn.append("t", &Batch::new(data(10, 5000))).unwrap();
        txn.create_view("w", "SELECT 1", vec!["x".into()]).unwrap();
        txn.commit().unwrap();
    }
    let storage = open_small(&path);
    assert_eq!(storage.catalog().table_names(), vec!["t".to_string()]);
    assert_table(
        &storage.catalog().table("t").unwrap(),
        &data(10, 5000),
        "recreated in one transaction",
    );
    assert_eq!(
        storage.catalog().view("w").map(|v| v.sql.as_str()),
        Some("SELECT 1")
    );
}

#[test]
fn concurrent_readers_always_see_one_whole_committed_table() {
    // A writer replaces the table again and again (freed pages are reused) while
    // readers scan whatever snapshot is current; each scan must be exactly one load.
    let dir = tempfile::tempdir().unwrap();
    let storage = open_small(&dir.path().join("concurrent.kura"));
    const ROWS: usize = 20_000;
    create_and_load(&storage, "t", &data(0, ROWS));
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        for r in 0..2 {
            let (storage, done) = (&storage, &done);
            s.spawn(move || {
                let mut scans = 0;
                while !done.load(std::sync::atomic::Ordering::Acquire) || scans < 3 {
                    let catalog = storage.catalog();
                    let table = catalog.table("t").expect("t always exists");
                    let ids = table.read_range(0, 0, 1).unwrap();
                    let tag = match ids.get_value(0) {
                        Value::BigInt(v) => v as u64,
                        other => panic!("reader {r}: id {other:?}"),
                    };
                    assert_table(
                        &table,
                        &data(tag, ROWS),
                        &format!("reader {r} scan {scans} (load {tag})"),
                    );
                    scans += 1;
                }
            });
        }
        for tag in 1..=12 {
            let mut txn = storage.begin().unwrap();
            txn.drop_table("t").unwrap();
            txn.create_table("t", schema()).unwrap();
            txn.append("t", &Batch::new(data(tag, ROWS))).unwrap();
            txn.commit().unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::Release);
    });
    assert_table(
        &storage.catalog().table("t").unwrap(),
        &data(12, ROWS),
        "final",
    );
    assert_eq!(storage.buffer().pinned_frames(), 0);
}

#[test]
fn a_second_open_of_the_same_file_cannot_lose_commits() {
    // Two handles on one file (say a server and a `kura load` in another process)
    // each believe they own the free space and the header.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("twice.kura");
    let first = open_small(&path);
    create_and_load(&first, "a", &data(1, 1000));
    match Storage::open(&path, options(16, "clock")) {
        Err(e) => {
            // Refusing the second open is the safe answer; it must say why.
            let msg = e.to_string();
            assert!(msg.contains(&path.display().to_string()), "{msg}");
        }
        Ok(second) => {
            create_and_load(&second, "b", &data(2, 1000));
            create_and_load(&first, "c", &data(3, 1000));
            drop((first, second));
            let reopened = open_small(&path);
            let names = reopened.catalog().table_names();
            assert_eq!(
                names,
                vec!["a".to_string(), "b".to_string(), "c".to_string()],
                "every committed table survives"
            );
        }
    }
}
