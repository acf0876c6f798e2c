//! Property (fuzz) test of the CSV / `.tbl` loader: arbitrary bytes, and valid
//! rows with random damage, in CSV or plain text, with or without a header and a
//! NULL marker, cut into chunks at random line (CSV: record) boundaries. Every load either
//! commits exactly the rows it reports or fails with `file:line:column` —
//! never a panic, never half a load — and the lines before a reported bad line
//! load on their own. `PROPTEST_CASES=N` runs it longer.

mod common;

use common::col;
use kura_common::DataType;
use kura_storage::loader::{self, Chunk, TextFormat};
use kura_storage::{Schema, Storage, StorageError, StorageOptions};
use proptest::prelude::*;

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn schema() -> Schema {
    Schema::new(vec![
        col("id", DataType::Integer, false),
        col("b", DataType::Boolean, true),
        col(
            "d",
            DataType::Decimal {
                precision: 8,
                scale: 2,
            },
            true,
        ),
        col("day", DataType::Date, true),
        col("s", DataType::Varchar(Some(6)), true),
        col("c", DataType::Char(3), true),
        col("x", DataType::Double, true),
        col("big", DataType::BigInt, true),
    ])
}

/// A valid row drawn from `k`, fields joined by `d`.
fn good_row(k: u64, d: char, csv: bool) -> String {
    let s = ["", "ab", "x,y", "q\"t", "日本", "\\N", "NA"][(k % 7) as usize];
    let s = if csv {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.replace([d, '\n', '"'], "")
    };
    let fields = [
        (k % 1000).to_string(),
        ["t", "false", "", "1"][(k % 4) as usize].to_string(),
        format!("{}.{:02}", k % 10_000, k % 100),
        format!("199{}-0{}-1{}", k % 10, 1 + k % 9, k % 10),
        s,
        ["abc", "", "a  "][(k % 3) as usize].to_string(),
        format!("{}e{}", k % 97, k % 5),
        (k as i64).wrapping_mul(7919).to_string(),
    ];
    fields.join(&d.to_string())
}

/// Input: random rows, each possibly damaged by a few byte edits, or raw bytes.
fn input() -> impl Strategy<Value = (Vec<u8>, bool, bool, Option<Vec<u8>>)> {
    let edits = prop::collection::vec((any::<usize>(), any::<u8>(), 0u8..3), 0..4);
    let rows = prop::collection::vec((any::<u64>(), edits), 0..30);
    let raw = prop::collection::vec(any::<u8>(), 0..400);
    let null = prop::option::of(prop::sample::select(vec![
        b"".to_vec(),
        b"NA".to_vec(),
        b"\\N".to_vec(),
    ]));
    (
        prop::option::weighted(0.8, rows),
        raw,
        any::<bool>(),
        any::<bool>(),
        null,
    )
        .prop_map(|(rows, raw, csv, header, null)| {
            let d = if csv { ',' } else { '|' };
            let bytes = match rows {
                Some(rows) => {
                    let mut out = Vec::new();
                    if header {
                        out.extend_from_slice(b"id,b,d,day,s,c,x,big\n");
                    }
                    for (k, edits) in rows {
                        let mut line = good_row(k, d, csv).into_bytes();
                        for (at, byte, how) in edits {
                            let i = at % (line.len() + 1);
                            match how {
                                0 => line.insert(i, byte),
                                1 if i < line.len() => line[i] = byte,
                                _ if i < line.len() => {
                                    line.remove(i);
                                }
                                _ => {}
                            }
                        }
                        out.extend_from_slice(&line);
                        out.push(b'\n');
                    }
                    out
                }
                None => raw,
            };
            (bytes, csv, header, null)
        })
}

/// Whole lines of `data` (each with its `\n`).
fn lines(data: &[u8]) -> Vec<&[u8]> {
    data.split_inclusive(|&b| b == b'\n').collect()
}

/// Loads `data` in chunks cut after the lines in `cuts`; commits on success.
/// With quotes (CSV) chunks end only where records do, outside quotes, as the
/// loader's chunker cuts them.
fn load(
    storage: &Storage,
    data: &[u8],
    cuts: &[usize],
    fmt: &TextFormat,
) -> Result<u64, StorageError> {
    let all = lines(data);
    let mut in_quotes = false;
    let mut ends = vec![0];
    for (i, l) in all.iter().enumerate() {
        if fmt.quoted {
            in_quotes ^= l.iter().filter(|&&b| b == b'"').count() % 2 == 1;
        }
        if !in_quotes {
            ends.push(i + 1);
        }
    }
    let mut chunks = Vec::new();
    let mut start = 0;
    let mut bounds: Vec<usize> = cuts.iter().map(|c| ends[c % ends.len()]).collect();
    bounds.push(all.len());
    bounds.sort_unstable();
    for end in bounds {
        if end > start {
            chunks.push(Chunk {
                data: all[start..end].concat(),
                first_line: start as u64 + 1,
            });
            start = end;
        }
    }
    let mut chunks = chunks.into_iter();
    let mut txn = storage.begin().unwrap();
    let rows = loader::load_chunks(
        &mut txn,
        "t",
        "input.csv",
        move || Ok(chunks.next()),
        fmt,
        2,
        None,
    )?;
    txn.commit()?;
    Ok(rows)
}

fn fresh(dir: &std::path::Path, name: &str) -> std::sync::Arc<Storage> {
    let storage = Storage::open(
        &dir.join(name),
        StorageOptions {
            direct_io: false,
            ..common::options(64, "clock")
        },
    )
    .unwrap();
    let mut txn = storage.begin().unwrap();
    txn.create_table("t", schema()).unwrap();
    txn.commit().unwrap();
    storage
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(48)))]

    #[test]
    fn loads_commit_all_or_fail_at_a_line(
        (data, csv, header, null) in input(),
        cuts in prop::collection::vec(any::<usize>(), 0..4),
    ) {
        let fmt = TextFormat {
            delimiter: if csv { b',' } else { b'|' },
            header,
            quoted: csv,
            null,
            ..TextFormat::default()
        };
        let dir = tempfile::tempdir().unwrap();
        let storage = fresh(dir.path(), "a.kura");
        let generation = storage.catalog().generation();
        match load(&storage, &data, &cuts, &fmt) {
            Ok(rows) => {
                let table = storage.catalog().table("t").unwrap();
                prop_assert_eq!(table.row_count(), rows);
                for c in 0..schema().len() {
                    let v = table.read_range(c, 0, rows as usize).unwrap();
                    prop_assert_eq!(v.len() as u64, rows);
                    for i in 0..v.len() {
                        let _ = v.get_value(i);
                    }
                }
            }
            Err(StorageError::BadInput { file, line, column, what, .. }) => {
                prop_assert_eq!(file, "input.csv");
                prop_assert!(column >= 1 && !what.is_empty());
                let n = lines(&data).len() as u64;
                prop_assert!(line >= 1 && line <= n, "line {} of {}", line, n);
                // Nothing of the failed load is visible.
                prop_assert_eq!(storage.catalog().generation(), generation);
                prop_assert_eq!(storage.catalog().table("t").unwrap().row_count(), 0);
                // The lines before the bad one load by themselves.
                let before: Vec<u8> = lines(&data)[..line as usize - 1].concat();
                let again = fresh(dir.path(), "b.kura");
                let loaded = load(&again, &before, &cuts, &fmt);
                prop_assert!(loaded.is_ok(), "lines before {} fail: {:?}", line, loaded);
            }
            Err(e) => prop_assert!(false, "not a line error: {}", e),
        }
    }
}
