//! The header slots under damage and torn writes: every byte of both slots is
//! flipped in turn (the newest slot refuses to open with an error naming it, or
//! opens the previous commit on request; the spare slot only warns), torn writes
//! of a commit's slot open the previous commit (also when a commit number is
//! written a second time), and old-format, empty, short and foreign files are
//! refused without being touched.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::*;
use kura_common::{Batch, DataType, Value, Vector};
use kura_storage::file::header::{decode, Slot, SLOT_SIZE};
use kura_storage::file::FORMAT_VERSION;
use kura_storage::{Schema, Storage, StorageError, StorageOptions};

fn ids(from: i64, n: i64) -> Batch {
    let v: Vec<Value> = (from..from + n).map(Value::BigInt).collect();
    Batch::new(vec![Vector::from_values(DataType::BigInt, &v).unwrap()])
}

fn opts(recover_header: bool) -> StorageOptions {
    StorageOptions {
        recover_header,
        direct_io: false,
        ..options(16, "clock")
    }
}

fn open_with(path: &Path, recover: bool) -> Result<Arc<Storage>, StorageError> {
    Storage::open(path, opts(recover))
}

/// Commit 2 creates `t` with 2 rows, commit 3 appends a third.
fn three_rows(dir: &Path) -> PathBuf {
    let path = dir.join("t.kura");
    let storage = open_with(&path, false).unwrap();
    let mut txn = storage.begin().unwrap();
    txn.create_table("t", Schema::new(vec![col("id", DataType::BigInt, false)]))
        .unwrap();
    txn.append("t", &ids(0, 2)).unwrap();
    txn.commit().unwrap();
    let mut txn = storage.begin().unwrap();
    txn.append("t", &ids(2, 1)).unwrap();
    txn.commit().unwrap();
    path
}

/// Rows of `t`, checking they are exactly 0, 1, ... (so a state is all there).
fn rows_of(storage: &Storage) -> usize {
    let table = storage.catalog().table("t").expect("table t");
    let n = table.row_count() as usize;
    let v = table.read_range(0, 0, n).unwrap();
    let expected = ids(0, n as i64);
    assert_same(&v, &expected.columns[0], "t.id");
    n
}

/// The slot holding the newest commit, and that commit's number.
fn active_slot(path: &Path) -> (usize, u64) {
    let bytes = std::fs::read(path).unwrap();
    let gens: Vec<u64> = (0..2)
        .map(
            |i| match decode(i, &bytes[i * SLOT_SIZE..(i + 1) * SLOT_SIZE]) {
                Slot::Valid(h) => h.generation,
                other => panic!("slot {i}: {other:?}"),
            },
        )
        .collect();
    let i = if gens[0] > gens[1] { 0 } else { 1 };
    (i, gens[i])
}

fn write_at(path: &Path, offset: usize, bytes: &[u8]) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(bytes, offset as u64).unwrap();
}

#[test]
fn every_byte_of_both_slots_damaged_never_loses_a_commit_silently() {
    let dir = tempfile::tempdir().unwrap();
    let path = three_rows(dir.path());
    let (active, newest) = active_slot(&path);
    assert_eq!(newest, 3);
    let original = std::fs::read(&path).unwrap()[..2 * SLOT_SIZE].to_vec();
    let masks = [0x01u8, 0x80, 0xFF, 0x5A];
    let (mut intact, mut refused, mut recovered) = (0, 0, 0);
    for slot in 0..2 {
        for off in 0..SLOT_SIZE {
            let at = slot * SLOT_SIZE + off;
            let mut damaged = original.clone();
            damaged[at] ^= masks[off % masks.len()];
            write_at(&path, 0, &damaged);
            let what = format!("slot {slot} byte {off}");
            match open_with(&path, false) {
                Ok(storage) => {
                    assert_eq!(rows_of(&storage), 3, "{what}: silently lost a commit");
                    assert_ne!(
                        slot, active,
                        "{what}: damage to the newest slot went unnoticed"
                    );
                    let w = storage.open_warnings().join("\n");
                    assert!(
                        w.contains("spare slot") && w.contains("commit 2"),
                        "{what}: {w}"
                    );
                    intact += 1;
                }
                Err(e) => {
                    assert_eq!(slot, active, "{what}: damaged spare slot refused: {e}");
                    assert!(
                        matches!(e, StorageError::HeaderDamaged { .. }),
                        "{what}: {e:?}"
                    );
                    let msg = e.to_string();
                    let sector = slot * SLOT_SIZE + off / 512 * 512;
                    for part in [
                        format!("header slot {slot} (file offset {}..", slot * SLOT_SIZE),
                        format!("at offset {sector}"),
                        "holds commit 3".to_string(),
                        "--recover-header".to_string(),
                        path.display().to_string(),
                    ] {
                        assert!(msg.contains(&part), "{what}: no '{part}' in: {msg}");
                    }
                    refused += 1;
                    // The refused open changed nothing.
                    assert_eq!(std::fs::read(&path).unwrap()[..2 * SLOT_SIZE], damaged[..]);
                    let storage = open_with(&path, true).unwrap();
                    assert_eq!(rows_of(&storage), 2, "{what}: recovery opens commit 2");
                    let w = storage.open_warnings().join("\n");
                    assert!(w.contains("commit 3 is lost"), "{what}: {w}");
                    drop(storage);
                    // Recovery rewrote the damaged slot: the file opens plainly now.
                    let storage = open_with(&path, false).unwrap();
                    assert_eq!(rows_of(&storage), 2);
                    assert!(storage.open_warnings().is_empty());
                    recovered += 1;
                }
            }
        }
    }
    write_at(&path, 0, &original);
    println!(
        "{} byte offsets x 2 slots: {intact} open intact, {refused} clear error \
         ({recovered} recovered on request), 0 silent loss",
        SLOT_SIZE
    );
    assert_eq!(intact, SLOT_SIZE);
    assert_eq!(refused, SLOT_SIZE);
    assert_eq!(rows_of(&open_with(&path, false).unwrap()), 3);
}

/// The file before and after commit 4 (a fourth row), whose slot is slot 0.
fn before_and_after(dir: &Path) -> (PathBuf, Vec<u8>, Vec<u8>) {
    let path = three_rows(dir);
    let before = std::fs::read(&path).unwrap();
    {
        let storage = open_with(&path, false).unwrap();
        let mut txn = storage.begin().unwrap();
        txn.append("t", &ids(3, 1)).unwrap();
        txn.commit().unwrap();
    }
    let after = std::fs::read(&path).unwrap();
    assert_eq!(active_slot(&path), (0, 4));
    (path, before, after)
}

#[test]
fn a_torn_write_of_any_sectors_opens_the_previous_commit() {
    let dir = tempfile::tempdir().unwrap();
    let (path, before, after) = before_and_after(dir.path());
    for mask in 0u32..256 {
        // The data pages of commit 4 are on disk (synced first); its slot has
        // the sectors in `mask` written, the others still hold commit 2.
        let mut file = after.clone();
        for k in 0..8 {
            if mask & (1 << k) == 0 {
                let r = k * 512..(k + 1) * 512;
                file[r.clone()].copy_from_slice(&before[r]);
            }
        }
        std::fs::write(&path, &file).unwrap();
        let storage = open_with(&path, false).unwrap_or_else(|e| panic!("mask {mask:#x}: {e}"));
        let w = storage.open_warnings().join("\n");
        match mask {
            0 => assert_eq!((rows_of(&storage), w.as_str()), (3, "")),
            255 => assert_eq!((rows_of(&storage), w.as_str()), (4, "")),
            _ => {
                assert_eq!(rows_of(&storage), 3, "mask {mask:#x}");
                assert!(w.contains("interrupted write of commit 4"), "{w}");
            }
        }
    }
    // A commit after an interrupted one rewrites the torn slot.
    let mut file = after.clone();
    file[..512].copy_from_slice(&before[..512]);
    std::fs::write(&path, &file).unwrap();
    {
        let storage = open_with(&path, false).unwrap();
        let mut txn = storage.begin().unwrap();
        txn.append("t", &ids(3, 2)).unwrap();
        txn.commit().unwrap();
    }
    let storage = open_with(&path, false).unwrap();
    assert_eq!(rows_of(&storage), 5);
    assert!(storage.open_warnings().is_empty());
}

#[test]
fn a_commit_number_written_twice_is_never_mixed_into_one_header() {
    let dir = tempfile::tempdir().unwrap();
    let (path, before, first) = before_and_after(dir.path());
    // Commit 4's slot write is interrupted (its last sector still holds commit 2).
    let mut torn = first.clone();
    torn[7 * 512..SLOT_SIZE].copy_from_slice(&before[7 * 512..SLOT_SIZE]);
    std::fs::write(&path, &torn).unwrap();
    // The next commit is numbered 4 again, with other contents, and may reuse
    // the pages the first attempt wrote.
    {
        let storage = open_with(&path, false).unwrap();
        assert_eq!(rows_of(&storage), 3);
        let mut txn = storage.begin().unwrap();
        txn.append("t", &ids(3, 50_000)).unwrap();
        txn.commit().unwrap();
    }
    let second = std::fs::read(&path).unwrap();
    let header = |b: &[u8]| match decode(0, &b[..SLOT_SIZE]) {
        Slot::Valid(h) => h,
        other => panic!("{other:?}"),
    };
    let (h1, h2) = (header(&first), header(&second));
    assert_eq!((h1.generation, h2.generation), (4, 4));
    assert_ne!(
        h1, h2,
        "the two attempts must differ for this test to mean anything"
    );
    // The second attempt's slot write is torn too, over the first attempt's
    // sectors: every sector names commit 4, yet the slot is not one write.
    for mask in 1u32..255 {
        let mut file = second.clone();
        for k in 0..8 {
            if mask & (1 << k) == 0 {
                let r = k * 512..(k + 1) * 512;
                file[r.clone()].copy_from_slice(&first[r]);
            }
        }
        std::fs::write(&path, &file).unwrap();
        let storage = open_with(&path, false).unwrap_or_else(|e| panic!("mask {mask:#x}: {e}"));
        assert_eq!(rows_of(&storage), 3, "mask {mask:#x}");
        let w = storage.open_warnings().join("\n");
        assert!(
            w.contains("interrupted write of commit 4"),
            "mask {mask:#x}: {w}"
        );
    }
}

#[test]
fn a_recovery_whose_older_state_does_not_load_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = three_rows(dir.path());
    let (active, _) = active_slot(&path);
    let mut bytes = std::fs::read(&path).unwrap();
    let spare = 1 - active;
    let older = match decode(spare, &bytes[spare * SLOT_SIZE..(spare + 1) * SLOT_SIZE]) {
        Slot::Valid(h) => h,
        other => panic!("{other:?}"),
    };
    assert_ne!(older.catalog_root, 0);
    // The newest slot is damaged, and so is the older commit's catalog page.
    bytes[active * SLOT_SIZE + 30] ^= 0x10;
    bytes[older.catalog_root as usize * older.page_size as usize + 100] ^= 0x10;
    std::fs::write(&path, &bytes).unwrap();
    let e = open_with(&path, true).err().expect("opened");
    assert!(
        matches!(e, StorageError::Checksum { page, .. } if page == older.catalog_root),
        "{e:?}"
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bytes,
        "a failed recovery wrote to the file"
    );
}

#[test]
fn a_write_torn_at_any_byte_never_loses_a_commit() {
    let dir = tempfile::tempdir().unwrap();
    let (path, before, after) = before_and_after(dir.path());
    let (mut previous, mut new, mut refused) = (0, 0, 0);
    for cut in 0..=SLOT_SIZE {
        // Bytes of slot 0 before `cut` are new, from `cut` on still old.
        let mut file = after.clone();
        file[cut..SLOT_SIZE].copy_from_slice(&before[cut..SLOT_SIZE]);
        std::fs::write(&path, &file).unwrap();
        match open_with(&path, false) {
            Ok(storage) => match rows_of(&storage) {
                3 => previous += 1,
                // Commit 4's pages were synced before its slot, so once the
                // slot is complete that state is whole.
                4 => new += 1,
                n => panic!("cut {cut}: {n} rows"),
            },
            Err(e) => {
                // A sector torn inside itself looks like damage to commit 4's
                // slot: refused, and recovery opens commit 3.
                assert!(
                    matches!(e, StorageError::HeaderDamaged { .. }),
                    "cut {cut}: {e:?}"
                );
                let storage = open_with(&path, true).unwrap();
                assert_eq!(rows_of(&storage), 3, "cut {cut}");
                refused += 1;
            }
        }
    }
    println!("tear points: {previous} open commit 3, {new} open commit 4, {refused} refused");
    assert!(previous > 0 && new > 0);
}

#[test]
fn old_format_versions_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    // A format-1 file: one CRC over each whole slot, a fresh database in slot 0.
    let v1 = dir.path().join("v1.kura");
    let mut page = vec![0u8; 16384];
    page[4..12].copy_from_slice(b"KURADB\0\x01");
    page[12..16].copy_from_slice(&1u32.to_le_bytes());
    page[16..20].copy_from_slice(&16384u32.to_le_bytes());
    page[20..28].copy_from_slice(&1u64.to_le_bytes());
    page[36..44].copy_from_slice(&1u64.to_le_bytes());
    let crc = crc32fast::hash(&page[4..SLOT_SIZE]);
    page[0..4].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&v1, &page).unwrap();
    // A file of a later format that keeps this layout.
    let later = three_rows(dir.path());
    let mut bytes = std::fs::read(&later).unwrap();
    for s in bytes[..2 * SLOT_SIZE].chunks_mut(512) {
        s[12..16].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
        let crc = crc32fast::hash(&s[4..]);
        s[0..4].copy_from_slice(&crc.to_le_bytes());
    }
    std::fs::write(&later, &bytes).unwrap();
    for (path, v) in [(&v1, 1), (&later, FORMAT_VERSION + 1)] {
        let before = std::fs::read(path).unwrap();
        let e = open_with(path, true).err().expect("opened");
        assert!(
            matches!(e, StorageError::FormatVersion { found, .. } if found == v),
            "{e:?}"
        );
        let msg = e.to_string();
        assert!(
            msg.contains(&format!(
                "kura database of format version {v}; this kura reads format versions 2 to {FORMAT_VERSION}"
            )),
            "{msg}"
        );
        assert!(msg.contains(&path.display().to_string()), "{msg}");
        assert_eq!(
            std::fs::read(path).unwrap(),
            before,
            "refused file was changed"
        );
    }
}

#[test]
fn empty_short_and_foreign_files_are_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    png.resize(70_000, 7);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty.kura", Vec::new(), "the file is empty (0 bytes)"),
        ("short.kura", vec![0u8; 100], "only 100 bytes long"),
        ("header-short.kura", vec![0u8; 5000], "only 5000 bytes long"),
        (
            "text.kura",
            "id,name\n1,hello\n".repeat(1000).into_bytes(),
            "no kura header",
        ),
        ("image.png", png, "no kura header"),
        ("zeros.kura", vec![0u8; 64 * 1024], "no kura header"),
    ];
    for (name, bytes, why) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes).unwrap();
        for recover in [false, true] {
            let e = open_with(&path, recover)
                .err()
                .unwrap_or_else(|| panic!("{name} opened"));
            assert!(
                matches!(e, StorageError::NotADatabase { .. }),
                "{name}: {e:?}"
            );
            let msg = e.to_string();
            assert!(msg.starts_with("not a kura database file: "), "{msg}");
            assert!(msg.contains(&path.display().to_string()), "{msg}");
            assert!(msg.contains(why), "{name}: {msg}");
            assert_eq!(std::fs::read(&path).unwrap(), bytes, "{name} was changed");
        }
    }
    // Only a path where nothing exists becomes a new database.
    let fresh = dir.path().join("new.kura");
    let storage = open_with(&fresh, false).unwrap();
    assert!(storage.catalog().table("t").is_none());
    assert!(storage.open_warnings().is_empty());
    drop(storage);
    assert!(open_with(&fresh, false).unwrap().open_warnings().is_empty());
    // The file was built under a temporary name, which is gone.
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("new.kura"))
        .collect();
    names.sort();
    assert_eq!(names, ["new.kura"]);
}
