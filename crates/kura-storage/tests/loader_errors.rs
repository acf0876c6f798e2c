//! Bad input rows: every kind of malformed field is reported as `file:line:column: what`
//! with the exact line and column — also when the bad line lies in a later parallel
//! chunk of a large file — and a failed load leaves the table exactly as it was.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use kura_common::{DataType, Vector};
use kura_storage::loader::{self, TextFormat, CHUNK_BYTES};
use kura_storage::{Schema, Storage, StorageError};

fn schema() -> Schema {
    Schema::new(vec![
        col("id", DataType::Integer, false),
        col(
            "price",
            DataType::Decimal {
                precision: 12,
                scale: 2,
            },
            true,
        ),
        col("day", DataType::Date, true),
        col("name", DataType::Varchar(Some(10)), true),
        col("code", DataType::Char(3), true),
    ])
}

/// A valid `.tbl` line for row `i` (dbgen style, trailing delimiter).
fn good_line(i: u64) -> String {
    format!(
        "{i}|{}.{:02}|1995-{:02}-{:02}|name{}|c{}|\n",
        i % 100_000,
        i % 100,
        1 + i % 12,
        1 + i % 28,
        i % 1000,
        i % 10
    )
}

/// Writes `lines` good lines, replacing line `n` (1-based) by `bad[n]`; returns the
/// path and the byte offset at which each replaced line starts.
fn write_file(dir: &Path, name: &str, lines: u64, bad: &[(u64, &str)]) -> PathBuf {
    let path = dir.join(name);
    let mut out = String::with_capacity(lines as usize * 40);
    for n in 1..=lines {
        match bad.iter().find(|(l, _)| *l == n) {
            Some((_, text)) => {
                out.push_str(text);
                out.push('\n');
            }
            None => out.push_str(&good_line(n)),
        }
    }
    std::fs::write(&path, out).unwrap();
    path
}

/// A database with table `t` already holding 1000 committed rows.
fn setup(dir: &Path) -> std::sync::Arc<Storage> {
    let storage = open(&dir.join("db.kura"));
    let seed = write_file(dir, "seed.tbl", 1000, &[]);
    let mut txn = storage.begin().unwrap();
    txn.create_table("t", schema()).unwrap();
    assert_eq!(
        loader::load_file(&mut txn, "t", &seed, &TextFormat::default(), 2, None).unwrap(),
        1000
    );
    txn.commit().unwrap();
    storage
}

fn snapshot(storage: &Storage) -> Vec<Vector> {
    let table = storage.catalog().table("t").unwrap();
    let mut rng = Rng::new(1);
    (0..table.schema().len())
        .map(|c| read_column(&table, c, &mut rng))
        .collect()
}

/// Loads `file` into `t`, expecting failure; returns the error's text after checking
/// that the table and the committed generation did not change.
fn failing_load(storage: &Storage, file: &Path, fmt: &TextFormat) -> (StorageError, String) {
    let before = snapshot(storage);
    let generation = storage.catalog().generation();
    let err = {
        let mut txn = storage.begin().unwrap();
        let r = loader::load_file(&mut txn, "t", file, fmt, 2, None);
        match r {
            Ok(rows) => panic!("{} loaded {rows} rows; expected an error", file.display()),
            Err(e) => e,
        }
        // Dropping the transaction discards the rows of the chunks before the bad one.
    };
    assert_eq!(
        storage.catalog().generation(),
        generation,
        "a failed load commits nothing"
    );
    let after = snapshot(storage);
    assert_eq!(after[0].len(), before[0].len(), "row count unchanged");
    for (c, (a, b)) in after.iter().zip(&before).enumerate() {
        assert_same(a, b, &format!("column {c} after the failed load"));
    }
    let text = err.to_string();
    (err, text)
}

/// Asserts `text` is `file:line:column: ...` with exactly this line and column and
/// that the rest mentions `needle`.
fn assert_position(text: &str, file: &Path, line: u64, column: u64, needle: &str) {
    let prefix = format!("{}:{line}:{column}: ", file.display());
    assert!(
        text.starts_with(&prefix),
        "expected an error starting with {prefix:?}, got {text:?}"
    );
    assert!(
        text[prefix.len()..].contains(needle),
        "error {text:?} should mention {needle:?}"
    );
}

#[test]
fn each_kind_of_bad_field_names_its_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let storage = setup(dir.path());
    // (bad line, 1-based byte column of the offending field, what the message names)
    let cases: &[(&str, u64, &str)] = &[
        ("7|1.00|1995-01-01|", 1, "expected 5 fields, found 3"),
        ("7|1.00|1995-01-01|x|ab|extra|", 1, "expected 5 fields"),
        ("7", 1, "expected 5 fields, found 1"),
        ("12x|1.00|1995-01-01|x|ab|", 1, "invalid integer \"12x\""),
        ("3000000000|1.00|1995-01-01|x|ab|", 1, "out of range"),
        ("|1.00|1995-01-01|x|ab|", 1, "NOT NULL"),
        ("\\N|1.00|1995-01-01|x|ab|", 1, "NOT NULL"),
        ("42|1.2.3|1995-01-01|x|ab|", 4, "invalid number \"1.2.3\""),
        ("42|12e3|1995-01-01|x|ab|", 4, "12e3"),
        ("42|12345678901.00|1995-01-01|x|ab|", 4, "out of range"),
        ("42|1.00|1995-02-30|x|ab|", 9, "invalid date \"1995-02-30\""),
        ("42|1.00|1995-13-01|x|ab|", 9, "invalid date"),
        ("42|1.00|1995/01/01|x|ab|", 9, "invalid date"),
        ("42|1.00|1995-01-01|abcdefghijk|ab|", 20, "too long"),
        ("42|1.00|1995-01-01|ääääääääääx|ab|", 20, "too long"),
        ("42|1.00|1995-01-01|x|abcd|", 22, "too long"),
        ("42|1.00|1995-01-01|x|ab|", 0, ""), // a good line: placeholder, skipped below
    ];
    for (k, &(bad, column, needle)) in cases.iter().enumerate() {
        if needle.is_empty() {
            continue;
        }
        let line = 3 + k as u64 * 7;
        let file = write_file(dir.path(), &format!("bad{k}.tbl"), 200, &[(line, bad)]);
        let (err, text) = failing_load(&storage, &file, &TextFormat::default());
        assert!(
            matches!(err, StorageError::BadInput { .. }),
            "{bad:?}: {err:?}"
        );
        assert_position(&text, &file, line, column, needle);
    }
    // The column name and type appear in value errors.
    let file = write_file(
        dir.path(),
        "named.tbl",
        5,
        &[(2, "42|1.00|1995-02-30|x|ab|")],
    );
    let (_, text) = failing_load(&storage, &file, &TextFormat::default());
    assert!(text.contains("day") && text.contains("DATE"), "{text}");
}

#[test]
fn csv_columns_count_bytes_through_quoted_fields_and_crlf() {
    let dir = tempfile::tempdir().unwrap();
    let storage = setup(dir.path());
    let csv = TextFormat {
        delimiter: b',',
        header: true,
        quoted: true,
        null: None,
        ..TextFormat::default()
    };
    let path = dir.path().join("q.csv");
    // Header on line 1; the bad date sits after a quoted field holding the delimiter and a quote.
    std::fs::write(&path, "id,price,day,name,code\r\n1,2.50,1995-01-01,\"a,b\",x\r\n2,3.50,\"1995-01-01\",\"q\"\"t,\",y\r\n3,1.00,1995-02-29,\"n\",z\r\n").unwrap();
    let (_, text) = failing_load(&storage, &path, &csv);
    assert_position(&text, &path, 4, 8, "1995-02-29");
    // A field after a quoted field: the column is that field's first byte.
    std::fs::write(
        &path,
        "id,price,day,name,code\n5,1,1995-01-01,\"a,b\",toolong\n",
    )
    .unwrap();
    let (_, text) = failing_load(&storage, &path, &csv);
    assert_position(&text, &path, 2, 22, "too long");
    std::fs::write(
        &path,
        "id,price,day,name,code\n5,1,1995-01-01,\"unterminated,x\n",
    )
    .unwrap();
    let (_, text) = failing_load(&storage, &path, &csv);
    assert_position(&text, &path, 2, 16, "unterminated");
}

/// Good lines until the file passes `bytes`.
fn lines_for(bytes: usize) -> u64 {
    let mut total = 0;
    let mut n = 0;
    while total < bytes {
        n += 1;
        total += good_line(n).len();
    }
    n
}

/// The 1-based line holding byte `offset` of a file of good lines.
fn line_at(offset: usize) -> u64 {
    let mut total = 0;
    let mut n = 0;
    loop {
        n += 1;
        total += good_line(n).len();
        if total > offset {
            return n;
        }
    }
}

#[test]
fn bad_lines_in_later_chunks_report_their_exact_line() {
    let dir = tempfile::tempdir().unwrap();
    let storage = setup(dir.path());
    let lines = lines_for(3 * CHUNK_BYTES + CHUNK_BYTES / 2);
    let fmt = TextFormat::default();
    // The line straddling the first chunk boundary, the one right after it, one deep
    // in the third chunk, and the very last line.
    let straddle = line_at(CHUNK_BYTES);
    let bad = "77|1.00|1995-02-30|x|ab|";
    for line in [
        straddle,
        straddle + 1,
        straddle - 1,
        line_at(2 * CHUNK_BYTES + 12345),
        lines,
    ] {
        let file = write_file(dir.path(), "big.tbl", lines, &[(line, bad)]);
        let (_, text) = failing_load(&storage, &file, &fmt);
        assert_position(&text, &file, line, 9, "1995-02-30");
    }
    // Several bad lines in different chunks: the first in file order is reported,
    // whichever parser thread finishes first.
    let later = line_at(3 * CHUNK_BYTES + 100);
    let earlier = line_at(CHUNK_BYTES + CHUNK_BYTES / 2);
    let file = write_file(
        dir.path(),
        "two.tbl",
        lines,
        &[
            (later, "1|x|1995-01-01|a|b|"),
            (earlier, "oops|1|1995-01-01|a|b|"),
        ],
    );
    let (_, text) = failing_load(&storage, &file, &fmt);
    assert_position(&text, &file, earlier, 1, "invalid integer");
    // A last line without a newline is still numbered.
    let file = dir.path().join("nolf.tbl");
    let mut body: String = (1..=10).map(good_line).collect();
    body.push_str("11|1.00|1995-01-01|x|abcd|");
    std::fs::write(&file, body).unwrap();
    let (_, text) = failing_load(&storage, &file, &fmt);
    assert_position(&text, &file, 11, 22, "too long");
}

#[test]
fn a_good_large_load_after_failures_commits_every_row_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let storage = setup(dir.path());
    let lines = lines_for(2 * CHUNK_BYTES + 1000);
    let bad = write_file(
        dir.path(),
        "bad.tbl",
        lines,
        &[(lines - 1, "x|1|1995-01-01|a|b|")],
    );
    failing_load(&storage, &bad, &TextFormat::default());
    let good = write_file(dir.path(), "good.tbl", lines, &[]);
    let mut txn = storage.begin().unwrap();
    assert_eq!(
        loader::load_file(&mut txn, "t", &good, &TextFormat::default(), 2, None).unwrap(),
        lines
    );
    txn.commit().unwrap();
    let table = storage.catalog().table("t").unwrap();
    assert_eq!(table.row_count(), 1000 + lines);
    // Rows keep file order across chunks: id column is 1..=1000 then 1..=lines.
    let ids = read_column(&table, 0, &mut Rng::new(3));
    for (r, expect) in (1..=1000u64).chain(1..=lines).enumerate() {
        assert_eq!(cell(&ids, r), Cell::I32(expect as i32), "row {r}");
    }
}

#[test]
fn a_tbl_row_missing_its_last_field_is_rejected() {
    // In a dbgen file every row ends with the delimiter, so `7|1.00|1995-01-01|x|`
    // has four fields; reading it as five with an empty last one silently loads a
    // truncated row (e.g. a lineitem without its l_comment).
    let dir = tempfile::tempdir().unwrap();
    let storage = setup(dir.path());
    let file = write_file(dir.path(), "short.tbl", 50, &[(20, "7|1.00|1995-01-01|x|")]);
    let (_, text) = failing_load(&storage, &file, &TextFormat::default());
    assert_position(&text, &file, 20, 1, "expected 5 fields, found 4");
}
