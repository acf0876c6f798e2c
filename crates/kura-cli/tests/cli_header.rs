//! The header through the CLI: a flipped byte in the newest header slot refuses
//! the database with an error naming the slot, `--recover-header` opens the
//! previous commit and warns which commit is lost, an empty file given as the
//! database is refused rather than turned into a new one, and a file of the
//! old format is refused naming both format versions.

mod common;

use common::*;

#[test]
fn a_damaged_newest_header_slot_is_refused_then_recovered_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.kura");
    // Commit 2 creates the table (slot 0), commit 3 inserts the rows (slot 1).
    run_ok(&db, &["-c", "CREATE TABLE t (id INTEGER)"]);
    run_ok(&db, &["-c", "INSERT INTO t VALUES (1), (2), (3)"]);
    let mut bytes = std::fs::read(&db).unwrap();
    bytes[4110] ^= 0x01;
    std::fs::write(&db, &bytes).unwrap();

    let count = ["--format", "csv", "-c", "SELECT count(*) AS n FROM t"];
    let out = kura().arg("--db").arg(&db).args(count).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    for part in [
        "damaged database header",
        "header slot 1 (file offset 4096..8192)",
        "at offset 4096",
        "holds commit 3",
        "--recover-header",
    ] {
        assert!(err.contains(part), "no {part:?} in:\n{err}");
    }
    assert_eq!(
        std::fs::read(&db).unwrap(),
        bytes,
        "a refused open writes nothing"
    );

    let out = kura()
        .env("KURA_LOG", "warn")
        .arg("--db")
        .arg(&db)
        .args(count)
        .arg("--recover-header")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("commit 3 is lost"), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "n\n0\n");
    // The recovered state is now the committed one.
    let out = run_ok(&db, &count);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "n\n0\n");
}

#[test]
fn an_empty_file_is_not_made_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("empty.kura");
    std::fs::write(&db, b"").unwrap();
    let out = kura()
        .arg("--db")
        .arg(&db)
        .args(["-c", "CREATE TABLE t (id INTEGER)"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not a kura database file") && err.contains("empty (0 bytes)"),
        "{err}"
    );
    assert_eq!(std::fs::metadata(&db).unwrap().len(), 0);
}

#[test]
fn an_old_format_file_is_refused_by_version() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("v1.kura");
    // A format-1 file: one CRC over the whole first slot, an empty database.
    let mut page = vec![0u8; 16384];
    page[4..12].copy_from_slice(b"KURADB\0\x01");
    page[12..16].copy_from_slice(&1u32.to_le_bytes());
    page[16..20].copy_from_slice(&16384u32.to_le_bytes());
    page[20..28].copy_from_slice(&1u64.to_le_bytes());
    page[36..44].copy_from_slice(&1u64.to_le_bytes());
    let crc = crc32fast::hash(&page[4..4096]);
    page[0..4].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&db, &page).unwrap();
    let out = kura()
        .arg("--db")
        .arg(&db)
        .args(["-c", "SELECT 1", "--recover-header"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "kura database of format version 1; this kura reads format versions 2 to {}",
            kura_storage::file::FORMAT_VERSION
        )),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&db).unwrap(),
        page,
        "a refused file was changed"
    );
}
