//! The storage layer seen through the façade: COPY round-trips every type's limit
//! values, a bad row fails with its `file:line:column` and SQLSTATE 22P02 and changes
//! nothing, and a damaged page fails a query with the checksum error (not a panic).

use std::path::{Path, PathBuf};

use kura::{Database, KuraError, OpenOptions, Value};
use kura_storage::StorageError;

/// A directory removed when dropped (the crate has no tempfile dependency).
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("kura-storage-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn open(path: &Path) -> Database {
    Database::open(
        path,
        OpenOptions {
            buffer_bytes: Some(1 << 20),
            ..Default::default()
        },
    )
    .unwrap()
}

const DDL: &str =
    "CREATE TABLE t (b BOOLEAN, i INTEGER, bi BIGINT, d DOUBLE PRECISION, m DECIMAL(15,2), \
                   w NUMERIC(38,4), dt DATE, v VARCHAR(8), c CHAR(4))";

fn days(y: i64, m: i64, d: i64) -> i32 {
    let ord = |y: i64, m: i64, d: i64| {
        let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        let md = [
            31,
            if leap { 29 } else { 28 },
            31,
            30,
            31,
            30,
            31,
            31,
            30,
            31,
            30,
            31,
        ];
        (y - 1) * 365 + (y - 1) / 4 - (y - 1) / 100
            + (y - 1) / 400
            + md[..(m - 1) as usize].iter().sum::<i64>()
            + d
            - 1
    };
    (ord(y, m, d) - ord(1970, 1, 1)) as i32
}

#[test]
fn copy_round_trips_limit_values_of_every_type() {
    let dir = TempDir::new("copy");
    let db = open(&dir.path().join("db.kura"));
    let mut s = db.session();
    s.execute(DDL).unwrap();
    let file = dir.path().join("rows.csv");
    let max38 = "9".repeat(34) + ".9999";
    std::fs::write(
        &file,
        format!(
            "b,i,bi,d,m,w,dt,v,c\n\
             true,-2147483648,-9223372036854775807,inf,-9999999999999.99,-{max38},0001-01-01,\"\",\"\"\n\
             f,2147483647,9223372036854775807,-inf,9999999999999.99,{max38},9999-12-31,\"日本語テキスト😀\",\"äöü\"\n\
             ,,,NaN,,,,\\N,\\N\n\
             1,0,0,-0.0,0.005,0.00005,2000-02-29,\"a,\"\"b\",\"x y\"\n"
        ),
    )
    .unwrap();
    let r = s
        .execute(&format!(
            "COPY t FROM '{}' (FORMAT csv, HEADER true)",
            file.display()
        ))
        .unwrap();
    assert_eq!(r.tag, "COPY 4");
    drop(s);
    drop(db);
    let db = open(&dir.path().join("db.kura"));
    let rows = db.session().execute("SELECT * FROM t").unwrap().rows();
    assert_eq!(rows.len(), 4);
    let t = |x: &str| Value::Text(x.into());
    let big38 = 10i128.pow(38) - 1;
    let expect = [
        vec![
            Value::Boolean(true),
            Value::Integer(i32::MIN),
            Value::BigInt(-i64::MAX),
            Value::Double(f64::INFINITY),
            Value::Decimal(-999_999_999_999_999, 2),
            Value::Decimal(-big38, 4),
            Value::Date(days(1, 1, 1)),
            t(""),
            t(""),
        ],
        vec![
            Value::Boolean(false),
            Value::Integer(i32::MAX),
            Value::BigInt(i64::MAX),
            Value::Double(f64::NEG_INFINITY),
            Value::Decimal(999_999_999_999_999, 2),
            Value::Decimal(big38, 4),
            Value::Date(days(9999, 12, 31)),
            t("日本語テキスト😀"),
            t("äöü"),
        ],
        vec![
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Double(f64::NAN),
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
        ],
        vec![
            Value::Boolean(true),
            Value::Integer(0),
            Value::BigInt(0),
            Value::Double(-0.0),
            // Extra digits round half away from zero.
            Value::Decimal(1, 2),
            Value::Decimal(1, 4),
            Value::Date(days(2000, 2, 29)),
            t("a,\"b"),
            t("x y"),
        ],
    ];
    for (r, (got, want)) in rows.iter().zip(&expect).enumerate() {
        for (c, (g, w)) in got.iter().zip(want).enumerate() {
            let same = match (g, w) {
                (Value::Double(a), Value::Double(b)) => {
                    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
                }
                (Value::Text(a), Value::Text(b)) => a == b,
                _ => g == w,
            };
            assert!(same, "row {r} column {c}: got {g:?}, expected {w:?}");
        }
    }
}

#[test]
fn a_bad_copy_row_names_file_line_column_and_changes_nothing() {
    let dir = TempDir::new("badcopy");
    let db = open(&dir.path().join("db.kura"));
    let mut s = db.session();
    s.execute("CREATE TABLE t (k INTEGER NOT NULL, d DATE)")
        .unwrap();
    let good = dir.path().join("good.tbl");
    std::fs::write(&good, "1|1995-01-01|\n2|1996-02-29|\n").unwrap();
    s.execute(&format!("COPY t FROM '{}'", good.display()))
        .unwrap();
    let bad = dir.path().join("bad.tbl");
    std::fs::write(&bad, "3|1995-01-01|\n4|1995-02-30|\n5|1995-01-01|\n").unwrap();
    let err = s
        .execute(&format!("COPY t FROM '{}'", bad.display()))
        .unwrap_err();
    assert_eq!(err.sqlstate(), "22P02", "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!("{}:2:3: ", bad.display())),
        "{msg}"
    );
    assert!(msg.contains("1995-02-30"), "{msg}");
    let rows = s.execute("SELECT * FROM t").unwrap().rows();
    assert_eq!(
        rows,
        vec![
            vec![Value::Integer(1), Value::Date(days(1995, 1, 1))],
            vec![Value::Integer(2), Value::Date(days(1996, 2, 29))]
        ]
    );
    // A missing file is an error naming it, not a panic.
    let missing = dir.path().join("missing.tbl");
    let err = s
        .execute(&format!("COPY t FROM '{}'", missing.display()))
        .unwrap_err();
    assert!(err.to_string().contains("missing.tbl"), "{err}");
    assert_eq!(
        s.execute("SELECT count(*) FROM t").unwrap().rows()[0][0],
        Value::BigInt(2)
    );
}

#[test]
fn a_damaged_page_fails_the_query_with_its_checksum_error() {
    let dir = TempDir::new("damage");
    let path = dir.path().join("db.kura");
    let page = {
        let db = open(&path);
        let mut s = db.session();
        s.execute("CREATE TABLE t (k BIGINT, v VARCHAR)").unwrap();
        let file = dir.path().join("rows.tbl");
        std::fs::write(
            &file,
            (0..50_000)
                .map(|i| format!("{i}|value {i}|\n"))
                .collect::<String>(),
        )
        .unwrap();
        s.execute(&format!("COPY t FROM '{}'", file.display()))
            .unwrap();
        let table = db.storage().catalog().table("t").unwrap();
        table.zones(1)[3].page
    };
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[page as usize * kura_storage::DEFAULT_PAGE_SIZE + 777] ^= 0x10;
    std::fs::write(&path, bytes).unwrap();
    let db = open(&path);
    let mut s = db.session();
    // Metadata is intact: the count needs no data page.
    assert_eq!(
        s.execute("SELECT count(*) FROM t").unwrap().rows()[0][0],
        Value::BigInt(50_000)
    );
    // Every execution mode, twice (a damaged page is never cached as good).
    for mode in ["serial", "static", "ooo", "ooo"] {
        s.execute(&format!("SET execution_mode = '{mode}'"))
            .unwrap();
        let err = s.execute("SELECT * FROM t").unwrap_err();
        assert!(
            !matches!(err, KuraError::Internal(_)),
            "a damaged page is not an internal error: {err:?}"
        );
        let msg = err.to_string();
        assert!(
            msg.contains(&path.display().to_string()) && msg.contains(&format!("page {page}")),
            "{msg}"
        );
        assert!(msg.contains("checksum"), "{msg}");
        // Clients tell corruption from I/O failures by the code: data_corrupted.
        assert_eq!(err.sqlstate(), "XX001", "{mode}: SQLSTATE of {err:?}");
        if let KuraError::Storage(e) = &err {
            assert!(
                matches!(e, StorageError::Checksum { page: p, .. } if *p == page),
                "{e:?}"
            );
        }
    }
    // The other column is intact and still reads in full.
    let keys = s.execute("SELECT k FROM t").unwrap().rows();
    assert_eq!(keys.len(), 50_000);
    let sum: i64 = keys
        .iter()
        .map(|r| match r[0] {
            Value::BigInt(k) => k,
            ref other => panic!("{other:?}"),
        })
        .sum();
    assert_eq!(sum, 49_999 * 50_000 / 2);
    assert_eq!(db.storage().buffer().pinned_frames(), 0);
}
