//! Every column type survives append → commit → reopen → read_range / fetch_rows,
//! and the bulk loader from a CSV file: NULLs, extreme values, empty and multi-byte
//! strings, long strings that fill pages at varying row counts, several row groups.

mod common;

use std::io::Write;
use std::path::Path;

use common::*;
use kura_common::{Batch, DataType, Value, Vector};
use kura_storage::loader::{self, TextFormat};
use kura_storage::table::writer::{zone_lower_bound, zone_upper_bound, ZONE_TEXT_BYTES};
use kura_storage::{Schema, Storage, StorageError, Table};

const ROWS: usize = 150_000;
const ROW_GROUP: u64 = 65_536;

fn schema() -> Schema {
    Schema::new(vec![
        col("id", DataType::BigInt, false),
        col("b", DataType::Boolean, true),
        col("i", DataType::Integer, true),
        col("bi", DataType::BigInt, true),
        col("d", DataType::Double, true),
        col(
            "dec",
            DataType::Decimal {
                precision: 15,
                scale: 2,
            },
            true,
        ),
        col(
            "dec18",
            DataType::Decimal {
                precision: 18,
                scale: 4,
            },
            true,
        ),
        col(
            "dec38",
            DataType::Decimal {
                precision: 38,
                scale: 6,
            },
            true,
        ),
        col("dt", DataType::Date, true),
        col("vc", DataType::Varchar(Some(20)), true),
        col("vlong", DataType::Varchar(None), true),
        col("ch", DataType::Char(5), true),
    ])
}

/// Characters strings are built from: ASCII, CSV specials, 2-, 3- and 4-byte UTF-8.
const ALPHABET: &[char] = &[
    'a', 'Z', '0', ' ', ',', '"', '|', 'ß', 'é', '中', '語', '😀', '\t',
];

fn random_text(rng: &mut Rng, max_chars: u64) -> String {
    let n = rng.below(max_chars + 1);
    (0..n)
        .map(|_| ALPHABET[rng.below(ALPHABET.len() as u64) as usize])
        .collect()
}

/// Rows whose values sit at the limits of each type, placed at the start, around the
/// row-group boundaries and at the end of the table.
fn special_row(k: usize) -> Vec<Value> {
    let dmax = |p: u32, s: u8, neg: bool| {
        Value::Decimal(if neg { -decimal_max(p) } else { decimal_max(p) }, s)
    };
    let date = |y, m, d| Value::Date(days_since_epoch(y, m, d));
    let t = |s: &str| Value::Text(s.to_string());
    let specials: [[Value; 11]; 8] = [
        [
            Value::Boolean(true),
            Value::Integer(i32::MIN),
            Value::BigInt(i64::MIN),
            Value::Double(f64::INFINITY),
            dmax(15, 2, true),
            dmax(18, 4, true),
            dmax(38, 6, true),
            date(1, 1, 1),
            t(""),
            t(""),
            t(""),
        ],
        [
            Value::Boolean(false),
            Value::Integer(i32::MAX),
            Value::BigInt(i64::MAX),
            Value::Double(f64::NEG_INFINITY),
            dmax(15, 2, false),
            dmax(18, 4, false),
            dmax(38, 6, false),
            date(9999, 12, 31),
            t(&"😀".repeat(20)),
            t(&"x".repeat(16_000)),
            t("日本語ab"),
        ],
        [
            Value::Null,
            Value::Integer(0),
            Value::BigInt(0),
            Value::Double(f64::NAN),
            Value::Decimal(0, 2),
            Value::Decimal(1, 4),
            Value::Decimal(-1, 6),
            date(1970, 1, 1),
            t("ü"),
            t(&"é".repeat(3000)),
            t(" x"),
        ],
        [
            Value::Boolean(true),
            Value::Integer(-1),
            Value::BigInt(-1),
            Value::Double(-0.0),
            Value::Null,
            Value::Null,
            Value::Null,
            date(2000, 2, 29),
            t("a,b\"c|d"),
            Value::Null,
            t("abcde"),
        ],
        [
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Double(f64::MAX),
            Value::Decimal(5, 2),
            Value::Decimal(-5, 4),
            Value::Decimal(10i128.pow(37), 6),
            Value::Null,
            Value::Null,
            t(&"中".repeat(5000)),
            Value::Null,
        ],
        [
            Value::Boolean(false),
            Value::Integer(1),
            Value::BigInt(1),
            Value::Double(f64::MIN),
            Value::Decimal(-1, 2),
            Value::Decimal(123_456_789, 4),
            Value::Decimal(-(10i128.pow(37)), 6),
            date(1969, 12, 31),
            t(&"ab".repeat(10)),
            t(""),
            t("中"),
        ],
        [
            Value::Boolean(true),
            Value::Integer(i32::MIN + 1),
            Value::BigInt(i64::MIN + 1),
            Value::Double(f64::MIN_POSITIVE),
            Value::Decimal(1, 2),
            Value::Decimal(-decimal_max(18), 4),
            Value::Decimal(1, 6),
            date(1600, 2, 29),
            t("   "),
            t("\u{7f}\u{80}\u{7ff}\u{800}\u{ffff}\u{10000}\u{10ffff}"),
            t("a"),
        ],
        [
            Value::Boolean(false),
            Value::Integer(i32::MAX - 1),
            Value::BigInt(i64::MAX - 1),
            Value::Double(5e-324),
            Value::Decimal(-decimal_max(15), 2),
            Value::Decimal(0, 4),
            Value::Decimal(0, 6),
            date(1900, 2, 28),
            t("z"),
            t("tail"),
            t("  x"),
        ],
    ];
    specials[k % specials.len()].to_vec()
}

fn random_row(rng: &mut Rng, nan_bits: bool) -> Vec<Value> {
    let mut row = Vec::with_capacity(11);
    let null = |rng: &mut Rng| rng.chance(0.1);
    let rand_dec = |rng: &mut Rng, p: u32, s: u8| {
        let m = decimal_max(p) as u128;
        let r = ((rng.next_u64() as u128) << 64 | rng.next_u64() as u128) % (2 * m + 1);
        let v = if r >= m {
            (r - m) as i128
        } else {
            -((m - r) as i128)
        };
        Value::Decimal(v, s)
    };
    row.push(if null(rng) {
        Value::Null
    } else {
        Value::Boolean(rng.chance(0.5))
    });
    row.push(if null(rng) {
        Value::Null
    } else {
        Value::Integer(rng.next_u64() as i32)
    });
    row.push(if null(rng) {
        Value::Null
    } else {
        Value::BigInt(rng.next_u64() as i64)
    });
    row.push(if null(rng) {
        Value::Null
    } else if nan_bits {
        // Any bit pattern, NaN payloads included, must come back bit for bit.
        Value::Double(f64::from_bits(rng.next_u64()))
    } else {
        let x = f64::from_bits(rng.next_u64());
        Value::Double(if x.is_nan() { 0.5 } else { x })
    });
    row.push(if null(rng) {
        Value::Null
    } else {
        rand_dec(rng, 15, 2)
    });
    row.push(if null(rng) {
        Value::Null
    } else {
        rand_dec(rng, 18, 4)
    });
    row.push(if null(rng) {
        Value::Null
    } else {
        rand_dec(rng, 38, 6)
    });
    row.push(if null(rng) {
        Value::Null
    } else {
        let y = rng.range_i64(1, 9999) as i32;
        let m = rng.range_i64(1, 12) as u32;
        let d = rng.range_i64(1, days_in_month(y, m) as i64) as u32;
        Value::Date(days_since_epoch(y, m, d))
    });
    row.push(if null(rng) {
        Value::Null
    } else {
        Value::Text(random_text(rng, 20))
    });
    row.push(if null(rng) {
        Value::Null
    } else if rng.chance(0.01) {
        // Occasional long values make pages fill at very different row counts.
        Value::Text(random_text(rng, 3000))
    } else {
        Value::Text(random_text(rng, 40))
    });
    row.push(if null(rng) {
        Value::Null
    } else {
        // CHAR values without trailing blanks: those are insignificant and not kept.
        Value::Text(random_text(rng, 5).trim_end_matches(' ').to_string())
    });
    row
}

/// Whether row `r` of `n` gets one of the limit-value rows.
fn is_special(r: usize, n: usize) -> bool {
    let near = |b: usize| r + 8 >= b && r < b + 8;
    r < 16 || near(ROW_GROUP as usize) || near(2 * ROW_GROUP as usize) || r + 16 >= n
}

/// The table's expected contents, one vector per column.
fn generate(seed: u64, n: usize, nan_bits: bool) -> Vec<Vector> {
    let schema = schema();
    let mut rng = Rng::new(seed);
    let mut cols: Vec<Vector> = schema
        .columns
        .iter()
        .map(|c| Vector::new(c.data_type, n))
        .collect();
    for r in 0..n {
        let row = if is_special(r, n) {
            special_row(r)
        } else {
            random_row(&mut rng, nan_bits)
        };
        assert!(cols[0].push_value(&Value::BigInt(r as i64)));
        for (c, v) in row.iter().enumerate() {
            assert!(
                cols[c + 1].push_value(v),
                "column {} rejects {v:?}",
                schema.columns[c + 1].name
            );
        }
    }
    cols
}

/// Appends `data` in batches of random sizes (so batches straddle pages and groups).
fn append_all(storage: &Storage, name: &str, data: &[Vector], rng: &mut Rng) {
    let mut txn = storage.begin().unwrap();
    txn.create_table(name, schema()).unwrap();
    let n = data[0].len();
    let mut row = 0;
    while row < n {
        let len = (1 + rng.below(7000) as usize).min(n - row);
        let batch = Batch::new(data.iter().map(|v| v.slice(row, len)).collect());
        assert_eq!(txn.append(name, &batch).unwrap(), len as u64);
        row += len;
    }
    txn.commit().unwrap();
}

/// Orders cells the way zone maps do: doubles by total order, text by bytes.
fn cell_cmp(a: &Cell, b: &Cell) -> std::cmp::Ordering {
    match (a, b) {
        (Cell::F64(x), Cell::F64(y)) => f64::from_bits(*x).total_cmp(&f64::from_bits(*y)),
        (Cell::Bool(x), Cell::Bool(y)) => x.cmp(y),
        (Cell::I32(x), Cell::I32(y)) => x.cmp(y),
        (Cell::I64(x), Cell::I64(y)) => x.cmp(y),
        (Cell::I128(x), Cell::I128(y)) => x.cmp(y),
        (Cell::Bytes(x), Cell::Bytes(y)) => x.cmp(y),
        _ => panic!("cells of different kinds: {a:?} {b:?}"),
    }
}

fn value_cell(dt: DataType, v: &Value) -> Cell {
    let vec = Vector::from_values(dt, std::slice::from_ref(v))
        .unwrap_or_else(|| panic!("{v:?} is not a {dt}"));
    cell(&vec, 0)
}

/// Min, max (NULL if none) and NULL count of `v[range]`, computed from the data.
fn expected_zone(v: &Vector, range: std::ops::Range<usize>) -> (Cell, Cell, u64) {
    let mut min = Cell::Null;
    let mut max = Cell::Null;
    let mut nulls = 0;
    for i in range {
        let c = cell(v, i);
        if c == Cell::Null {
            nulls += 1;
            continue;
        }
        if min == Cell::Null || cell_cmp(&c, &min).is_lt() {
            min = c.clone();
        }
        if max == Cell::Null || cell_cmp(&c, &max).is_gt() {
            max = c;
        }
    }
    // Zone maps keep long text as bounds (a prefix; a raised prefix).
    let cut = |c: Cell, upper: bool| match c {
        Cell::Bytes(b) if b.len() > ZONE_TEXT_BYTES => {
            let s = String::from_utf8(b).unwrap();
            Cell::Bytes(
                if upper {
                    zone_upper_bound(&s)
                } else {
                    zone_lower_bound(&s)
                }
                .into_bytes(),
            )
        }
        c => c,
    };
    (cut(min, false), cut(max, true), nulls)
}

/// Row groups, zone maps and statistics describe exactly the stored data.
fn check_metadata(table: &Table, data: &[Vector]) {
    let n = data[0].len() as u64;
    assert_eq!(table.row_count(), n);
    let groups = table.row_groups();
    let mut next = 0;
    for (g, r) in groups.iter().enumerate() {
        assert_eq!(
            r.start, next,
            "row group {g} starts where the previous ended"
        );
        assert!(
            r.end - r.start <= ROW_GROUP && r.end > r.start,
            "row group {g} is {r:?}"
        );
        if g + 1 < groups.len() {
            assert_eq!(
                r.end - r.start,
                ROW_GROUP,
                "every row group but the last is full"
            );
        }
        next = r.end;
    }
    assert_eq!(next, n, "row groups cover the table");
    let mut pages = std::collections::HashSet::new();
    for (c, expected) in data.iter().enumerate() {
        let dt = table.schema().columns[c].data_type;
        let mut next = 0u64;
        let mut nulls = 0u64;
        for (z, zone) in table.zones(c).iter().enumerate() {
            assert_eq!(zone.first_row, next, "column {c} zone {z}: contiguous");
            assert!(zone.row_count > 0, "column {c} zone {z}: empty zone");
            let end = zone.first_row + zone.row_count as u64;
            assert!(
                groups
                    .iter()
                    .any(|g| g.start <= zone.first_row && end <= g.end),
                "column {c} zone {z} ({}..{end}) crosses a row group",
                zone.first_row
            );
            assert!(
                pages.insert(zone.page),
                "page {} holds two zones",
                zone.page
            );
            let (min, max, zn) = expected_zone(expected, zone.first_row as usize..end as usize);
            assert_eq!(
                zone.null_count as u64, zn,
                "column {c} zone {z}: NULL count"
            );
            assert_eq!(value_cell(dt, &zone.min), min, "column {c} zone {z}: min");
            assert_eq!(value_cell(dt, &zone.max), max, "column {c} zone {z}: max");
            nulls += zn;
            next = end;
        }
        assert_eq!(next, n, "column {c}: zones cover every row");
        let stats = table.column_stats(c);
        let (min, max, all_nulls) = expected_zone(expected, 0..n as usize);
        assert_eq!(
            stats.null_count, all_nulls,
            "column {c}: NULL count statistic"
        );
        assert_eq!(nulls, all_nulls);
        assert_eq!(value_cell(dt, &stats.min), min, "column {c}: min statistic");
        assert_eq!(value_cell(dt, &stats.max), max, "column {c}: max statistic");
    }
    // The id column holds n distinct values: the sketch should be within a few percent.
    let distinct = table.column_stats(0).distinct as f64;
    assert!(
        (distinct - n as f64).abs() <= 0.05 * n as f64,
        "distinct estimate {distinct} for {n} ids"
    );
}

/// Every column read whole (read_range) and by row ids (fetch_rows) equals the data.
fn check_contents(table: &Table, data: &[Vector], rng: &mut Rng) {
    let n = data[0].len() as u64;
    // Boundary rows, random rows in random order, repeats.
    let mut ids: Vec<u64> = vec![
        0,
        n - 1,
        ROW_GROUP - 1,
        ROW_GROUP,
        2 * ROW_GROUP - 1,
        2 * ROW_GROUP,
        1,
        n - 2,
    ];
    ids.extend((0..3000).map(|_| rng.below(n)));
    ids.extend([5, 5, 5, n - 1, 0]);
    let mut ascending = ids.clone();
    ascending.sort_unstable();
    let idx: Vec<u32> = ids.iter().map(|&r| r as u32).collect();
    let idx_asc: Vec<u32> = ascending.iter().map(|&r| r as u32).collect();
    for (c, expected) in data.iter().enumerate() {
        let name = &table.schema().columns[c].name;
        assert_same(
            &read_column(table, c, rng),
            expected,
            &format!("read_range of column {name}"),
        );
        let fetched = table.fetch_rows(c, &ids).unwrap();
        assert_same(
            &fetched,
            &expected.take(&idx),
            &format!("fetch_rows (random order) of column {name}"),
        );
        let fetched = table.fetch_rows(c, &ascending).unwrap();
        assert_same(
            &fetched,
            &expected.take(&idx_asc),
            &format!("fetch_rows (ascending) of column {name}"),
        );
        // A window reaching past the end is cut at the last row.
        let tail = table.read_range(c, n - 3, 100).unwrap();
        assert_same(
            &tail,
            &expected.slice(n as usize - 3, 3),
            &format!("tail of column {name}"),
        );
        assert_eq!(table.read_range(c, n, 10).unwrap().len(), 0);
        // Selected rows of a window (a join filter's survivors) equal the
        // window's rows taken, whether the pages decode them one by one (bit-
        // packed and plain fixed-width pages) or in a span (text, booleans).
        for (first, len) in [(0, n as usize), (1, ROW_GROUP as usize + 7), (n - 5, 5)] {
            let window = expected.slice(first as usize, len);
            for step in [1usize, 5, 61, 4096] {
                let sel: Vec<u32> = (0..len as u32)
                    .step_by(step)
                    .chain([len as u32 - 1])
                    .collect();
                let mut sel = sel;
                sel.dedup();
                let got = table.read_selected(c, first, len, &sel).unwrap();
                assert_same(
                    &got,
                    &window.take(&sel),
                    &format!("read_selected every {step}th of {first}+{len}, column {name}"),
                );
            }
            assert_eq!(table.read_selected(c, first, len, &[]).unwrap().len(), 0);
        }
        assert!(
            matches!(
                table.read_selected(c, n - 2, 5, &[0, 2]),
                Err(StorageError::Invalid(_))
            ),
            "a selected row past the end is an error"
        );
    }
    assert!(
        matches!(table.fetch_rows(0, &[n]), Err(StorageError::Invalid(_))),
        "a row id past the end is an error"
    );
    assert!(
        table.read_range(data.len(), 0, 1).is_err(),
        "a column past the schema is an error"
    );
    assert_eq!(
        table.buffer().pinned_frames(),
        0,
        "reads leave no page pinned"
    );
}

#[test]
fn every_type_round_trips_through_append_commit_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("types.kura");
    let data = generate(0x7e57_0001, ROWS, true);
    let mut rng = Rng::new(42);
    {
        let storage = open(&path);
        append_all(&storage, "t", &data, &mut rng);
        // Names are exact: SQL folds unquoted identifiers before they reach storage.
        assert!(storage.catalog().table("T").is_none());
        let table = storage.catalog().table("t").expect("the table");
        check_metadata(&table, &data);
        check_contents(&table, &data, &mut rng);
    }
    // Reopened with a small buffer, so most reads really come from the file.
    let storage = Storage::open(&path, options(16, "lru")).unwrap();
    let table = storage.catalog().table("t").unwrap();
    assert_eq!(table.schema(), &schema());
    check_metadata(&table, &data);
    check_contents(&table, &data, &mut rng);
}

/// The row as CSV text: text quoted (so `""` is the empty string), NULL as `\N`
/// for text and an empty field otherwise; numbers and dates formatted here.
fn csv_line(data: &[Vector], r: usize, out: &mut Vec<u8>) {
    let schema = schema();
    for (c, v) in data.iter().enumerate() {
        if c > 0 {
            out.push(b',');
        }
        let dt = schema.columns[c].data_type;
        match cell(v, r) {
            Cell::Null if dt.is_text() => out.extend_from_slice(b"\\N"),
            Cell::Null => {}
            Cell::Bool(b) => out.extend_from_slice(if b { b"true" } else { b"f" }),
            Cell::I32(x) if dt == DataType::Date => {
                let (y, m, d) = civil(x);
                write!(out, "{y:04}-{m:02}-{d:02}").unwrap();
            }
            Cell::I32(x) => write!(out, "{x}").unwrap(),
            Cell::I64(x) => match dt {
                DataType::Decimal { scale, .. } => {
                    out.extend_from_slice(decimal_text(x as i128, scale as u32).as_bytes())
                }
                _ => write!(out, "{x}").unwrap(),
            },
            Cell::I128(x) => {
                let DataType::Decimal { scale, .. } = dt else {
                    unreachable!()
                };
                out.extend_from_slice(decimal_text(x, scale as u32).as_bytes());
            }
            Cell::F64(bits) => write!(out, "{:?}", f64::from_bits(bits)).unwrap(),
            Cell::Bytes(b) => {
                out.push(b'"');
                for &ch in &b {
                    if ch == b'"' {
                        out.push(b'"');
                    }
                    out.push(ch);
                }
                out.push(b'"');
            }
        }
    }
    out.push(b'\n');
}

/// Civil date of a day number, by walking from the epoch with the counting function.
fn civil(days: i32) -> (i32, u32, u32) {
    let mut y = 1970 + (days as f64 / 365.2425).floor() as i32;
    while days_since_epoch(y, 1, 1) > days {
        y -= 1;
    }
    while days_since_epoch(y + 1, 1, 1) <= days {
        y += 1;
    }
    let mut m = 1;
    while m < 12 && days_since_epoch(y, m + 1, 1) <= days {
        m += 1;
    }
    (y, m, (days - days_since_epoch(y, m, 1)) as u32 + 1)
}

fn write_csv(path: &Path, data: &[Vector], header: bool) {
    let mut out = Vec::new();
    if header {
        let names: Vec<String> = schema().columns.iter().map(|c| c.name.clone()).collect();
        out.extend_from_slice(names.join(",").as_bytes());
        out.push(b'\n');
    }
    for r in 0..data[0].len() {
        csv_line(data, r, &mut out);
    }
    std::fs::write(path, out).unwrap();
}

#[test]
fn every_type_round_trips_through_the_csv_loader() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("copy.kura");
    let csv = dir.path().join("rows.csv");
    // The text form cannot carry NaN payloads: those doubles are generated as numbers.
    let data = generate(0x7e57_0002, ROWS, false);
    write_csv(&csv, &data, true);
    assert!(
        std::fs::metadata(&csv).unwrap().len() > loader::CHUNK_BYTES as u64,
        "the file spans several parse chunks"
    );
    let mut rng = Rng::new(7);
    {
        let storage = open(&path);
        let mut txn = storage.begin().unwrap();
        txn.create_table("t", schema()).unwrap();
        let fmt = TextFormat {
            delimiter: b',',
            header: true,
            quoted: true,
            null: None,
            ..TextFormat::default()
        };
        let rows = loader::load_file(&mut txn, "t", &csv, &fmt, 2, None).unwrap();
        assert_eq!(rows, ROWS as u64);
        txn.commit().unwrap();
    }
    let storage = open(&path);
    let table = storage.catalog().table("t").unwrap();
    check_metadata(&table, &data);
    check_contents(&table, &data, &mut rng);
}

#[test]
fn loader_accepts_the_smallest_bigint() {
    let dir = tempfile::tempdir().unwrap();
    let storage = open(&dir.path().join("min.kura"));
    let file = dir.path().join("min.tbl");
    std::fs::write(
        &file,
        "-9223372036854775808|\n9223372036854775807|\n-2147483648|\n",
    )
    .unwrap();
    let mut txn = storage.begin().unwrap();
    txn.create_table("t", Schema::new(vec![col("v", DataType::BigInt, false)]))
        .unwrap();
    let loaded = loader::load_file(&mut txn, "t", &file, &TextFormat::default(), 1, None);
    assert_eq!(loaded.map_err(|e| e.to_string()).unwrap(), 3);
    txn.commit().unwrap();
    let table = storage.catalog().table("t").unwrap();
    let v = table.read_range(0, 0, 3).unwrap();
    assert_eq!(v.get_value(0), Value::BigInt(i64::MIN));
    assert_eq!(v.get_value(1), Value::BigInt(i64::MAX));
    assert_eq!(v.get_value(2), Value::BigInt(i32::MIN as i64));
}

#[test]
fn an_empty_table_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.kura");
    {
        let storage = open(&path);
        let mut txn = storage.begin().unwrap();
        txn.create_table("e", schema()).unwrap();
        // An empty batch is accepted and adds nothing.
        let empty = Batch::new(
            schema()
                .columns
                .iter()
                .map(|c| Vector::new(c.data_type, 0))
                .collect(),
        );
        assert_eq!(txn.append("e", &empty).unwrap(), 0);
        txn.commit().unwrap();
    }
    let storage = open(&path);
    let table = storage.catalog().table("e").unwrap();
    assert_eq!(table.row_count(), 0);
    assert!(table.row_groups().is_empty());
    for c in 0..schema().len() {
        assert!(table.zones(c).is_empty());
        assert_eq!(table.read_range(c, 0, 100).unwrap().len(), 0);
        assert!(table.column_stats(c).min.is_null());
    }
    assert!(table.fetch_rows(0, &[0]).is_err());
}

#[test]
fn a_value_longer_than_kura_stores_is_a_clear_error_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let storage = open(&dir.path().join("long.kura"));
    let s = Schema::new(vec![col("v", DataType::Varchar(None), true)]);
    let mut txn = storage.begin().unwrap();
    txn.create_table("t", s.clone()).unwrap();
    let ok = Vector::from_values(DataType::Varchar(None), &[Value::Text("fine".into())]).unwrap();
    txn.append("t", &Batch::new(vec![ok])).unwrap();
    txn.commit().unwrap();
    let generation = storage.catalog().generation();

    let huge = Vector::from_values(
        DataType::Varchar(None),
        &[Value::Text("y".repeat(kura_common::MAX_VALUE_BYTES + 1))],
    )
    .unwrap();
    let mut txn = storage.begin().unwrap();
    let appended = txn.append("t", &Batch::new(vec![huge]));
    // The row may be refused at append or at commit (when its row group is written).
    let err = match appended {
        Err(e) => e,
        Ok(_) => txn.commit().expect_err("a value over 16 MiB is refused"),
    };
    assert!(
        err.to_string()
            .contains("kura stores values of at most 16777216 bytes"),
        "unexpected error: {err}"
    );
    assert_eq!(
        storage.catalog().generation(),
        generation,
        "nothing was committed"
    );
    let table = storage.catalog().table("t").unwrap();
    assert_eq!(table.row_count(), 1);
    assert_eq!(
        table.read_range(0, 0, 1).unwrap().get_value(0),
        Value::Text("fine".into())
    );
}

#[test]
fn appends_are_checked_against_the_schema() {
    let dir = tempfile::tempdir().unwrap();
    let storage = open(&dir.path().join("check.kura"));
    let mut txn = storage.begin().unwrap();
    txn.create_table(
        "t",
        Schema::new(vec![
            col("k", DataType::Integer, false),
            col("s", DataType::Varchar(Some(3)), true),
        ]),
    )
    .unwrap();
    let ints = |v: &[Value]| Vector::from_values(DataType::Integer, v).unwrap();
    let texts = |v: &[Value]| Vector::from_values(DataType::Varchar(Some(3)), v).unwrap();
    let t = |s: &str| Value::Text(s.into());
    let e = txn
        .append(
            "t",
            &Batch::new(vec![ints(&[Value::Null]), texts(&[t("a")])]),
        )
        .unwrap_err();
    assert!(
        matches!(e, StorageError::NotNull { ref column, .. } if column == "k"),
        "{e}"
    );
    let e = txn
        .append(
            "t",
            &Batch::new(vec![ints(&[Value::Integer(1)]), texts(&[t("abcd")])]),
        )
        .unwrap_err();
    assert!(e.to_string().contains("too long"), "{e}");
    // Three characters of three bytes each fit VARCHAR(3): the limit is in characters.
    txn.append(
        "t",
        &Batch::new(vec![ints(&[Value::Integer(1)]), texts(&[t("日本語")])]),
    )
    .unwrap();
    let dates = Vector::from_values(DataType::Date, &[Value::Date(1)]).unwrap();
    let e = txn
        .append("t", &Batch::new(vec![dates, texts(&[t("a")])]))
        .unwrap_err();
    assert!(matches!(e, StorageError::TypeMismatch { .. }), "{e}");
    let e = txn
        .append("t", &Batch::new(vec![ints(&[Value::Integer(1)])]))
        .unwrap_err();
    assert!(e.to_string().contains("columns"), "{e}");
    assert!(matches!(
        txn.append("nope", &Batch::new(vec![])),
        Err(StorageError::NoSuchTable(_))
    ));
    txn.commit().unwrap();
    let table = storage.catalog().table("t").unwrap();
    assert_eq!(table.row_count(), 1);
    assert_eq!(table.read_range(1, 0, 1).unwrap().get_value(0), t("日本語"));
}

#[test]
fn read_range_with_an_unbounded_length_reads_to_the_end() {
    // "Everything from row 5 on" is a natural request; the length is clipped to the table.
    let dir = tempfile::tempdir().unwrap();
    let storage = open(&dir.path().join("clip.kura"));
    let mut txn = storage.begin().unwrap();
    txn.create_table("t", Schema::new(vec![col("v", DataType::Integer, false)]))
        .unwrap();
    let vals: Vec<Value> = (0..10).map(Value::Integer).collect();
    txn.append(
        "t",
        &Batch::new(vec![Vector::from_values(DataType::Integer, &vals).unwrap()]),
    )
    .unwrap();
    txn.commit().unwrap();
    let table = storage.catalog().table("t").unwrap();
    let v = table
        .read_range(0, 5, usize::MAX)
        .map_err(|e| e.to_string())
        .unwrap();
    assert_same(
        &v,
        &Vector::from_values(DataType::Integer, &vals[5..]).unwrap(),
        "rows 5..",
    );
}
