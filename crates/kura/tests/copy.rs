//! COPY through the façade: column lists, PostgreSQL's text format with
//! backslash escapes (`Session::copy_in`), `COPY ... TO` (a file and
//! `Session::copy_out`), and errors that name the line and carry PostgreSQL's
//! SQLSTATE.

use std::io::Read;

use kura::{CopyInput, CopyOutput, Database, OpenOptions, Session, Value};

fn db() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(&dir.path().join("t.db"), OpenOptions::default()).unwrap();
    (dir, db)
}

fn rows(s: &mut Session, sql: &str) -> Vec<Vec<Value>> {
    let r = s.execute(sql).unwrap();
    r.batches
        .iter()
        .flat_map(|b| (0..b.len()).map(move |i| b.row(i)))
        .collect()
}

/// Client data given whole.
struct Input {
    data: std::io::Cursor<Vec<u8>>,
    columns: Option<usize>,
}

impl Input {
    fn new(data: &str) -> Self {
        Input {
            data: std::io::Cursor::new(data.as_bytes().to_vec()),
            columns: None,
        }
    }
}

impl Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        assert!(self.columns.is_some(), "read before start");
        self.data.read(buf)
    }
}

impl CopyInput for Input {
    fn start(&mut self, columns: usize, _binary: bool) {
        self.columns = Some(columns);
    }
}

#[derive(Default)]
struct Output {
    columns: Option<usize>,
    binary: bool,
    text: Vec<u8>,
}

impl CopyOutput for Output {
    fn start(&mut self, columns: usize, binary: bool) {
        self.columns = Some(columns);
        self.binary = binary;
    }
    fn lines(&mut self, lines: Vec<Vec<u8>>) -> bool {
        for l in lines {
            assert!(self.binary || l.ends_with(b"\n"));
            self.text.extend(l);
        }
        true
    }
}

#[test]
fn copy_in_reads_postgresql_text_format() {
    let (_d, db) = db();
    let mut s = db.session();
    s.execute("create table t (i integer, v varchar(20), d date)")
        .unwrap();
    let mut input = Input::new("1\ta\\tb\\\\c\\nd\t1995-03-15\n2\t\\N\t\\N\n3\t\t2000-01-01\n4\tx\\x41\\101\\|\t\\N\n\\.\nignored\n");
    let r = s.copy_in("copy t from stdin", &mut input).unwrap();
    assert_eq!(r.tag, "COPY 4");
    assert_eq!(input.columns, Some(3));
    let got = rows(&mut s, "select i, v, d is null from t order by i");
    assert_eq!(got[0][1], Value::Text("a\tb\\c\nd".into()));
    assert_eq!(got[1][1], Value::Null);
    assert_eq!(
        got[2][1],
        Value::Text(String::new()),
        "empty is not NULL in text"
    );
    assert_eq!(got[3][1], Value::Text("xAA|".into()));
    assert_eq!(got[3][2], Value::Boolean(true));
}

#[test]
fn column_lists_fill_the_rest_with_null_or_fail_on_not_null() {
    let (dir, db) = db();
    let mut s = db.session();
    s.execute("create table t (a integer, b varchar, c integer not null)")
        .unwrap();
    let mut input = Input::new("x,7\n\"y,z\",8\n");
    let r = s
        .copy_in("copy t (b, c) from stdin (format csv)", &mut input)
        .unwrap();
    assert_eq!(r.tag, "COPY 2");
    assert_eq!(input.columns, Some(2));
    let got = rows(&mut s, "select a, b, c from t order by c");
    assert_eq!(
        got,
        vec![
            vec![Value::Null, Value::Text("x".into()), Value::Integer(7)],
            vec![Value::Null, Value::Text("y,z".into()), Value::Integer(8)],
        ]
    );
    // A file COPY takes a column list too.
    let file = dir.path().join("in.csv");
    std::fs::write(&file, "9,p\n").unwrap();
    s.execute(&format!("copy t (c, b) from '{}'", file.display()))
        .unwrap();
    assert_eq!(
        rows(&mut s, "select count(*) from t where c = 9")[0][0],
        Value::BigInt(1)
    );
    // Leaving out a NOT NULL column fails, naming it; nothing is loaded.
    let e = s
        .copy_in("copy t (a, b) from stdin", &mut Input::new("1\tq\n"))
        .unwrap_err();
    assert_eq!(e.sqlstate(), "23502", "{e}");
    assert!(e.to_string().contains("column c"), "{e}");
    let e = s
        .copy_in("copy t (a, nope) from stdin", &mut Input::new(""))
        .unwrap_err();
    assert_eq!(e.sqlstate(), "42703", "{e}");
    assert_eq!(
        rows(&mut s, "select count(*) from t")[0][0],
        Value::BigInt(3)
    );
}

#[test]
fn errors_name_stdin_line_and_column_and_load_nothing() {
    let (_d, db) = db();
    let mut s = db.session();
    s.execute("create table t (i integer, v varchar(3))")
        .unwrap();
    let data = "1\ta\n2\tb\n3x\tc\n4\td\n";
    let e = s
        .copy_in("copy t from stdin", &mut Input::new(data))
        .unwrap_err();
    assert_eq!(e.sqlstate(), "22P02", "{e}");
    assert!(e.to_string().starts_with("STDIN:3:1:"), "{e}");
    let e = s
        .copy_in("copy t from stdin", &mut Input::new("1\ta\n2\tb\tc\n"))
        .unwrap_err();
    assert_eq!(e.sqlstate(), "22P04", "{e}");
    assert!(e.to_string().starts_with("STDIN:2:"), "{e}");
    let e = s
        .copy_in("copy t from stdin", &mut Input::new("1\tabcd\n"))
        .unwrap_err();
    assert_eq!(e.sqlstate(), "22001", "{e}");
    assert_eq!(
        rows(&mut s, "select count(*) from t")[0][0],
        Value::BigInt(0)
    );
}

#[test]
fn copy_out_and_back_gives_the_same_table() {
    let (dir, db) = db();
    let mut s = db.session();
    s.execute(
        "create table t (i integer, v varchar, d decimal(12,2), dt date, b boolean, f double)",
    )
    .unwrap();
    s.execute(
        "insert into t values (1, 'tab\there', 1.50, '1995-03-15', true, 0.1), \
         (2, null, -0.05, null, false, null), (3, '', 12345678.9, '2000-02-29', null, 1e20), \
         (4, 'back\\slash, \"quoted\"\nnewline', 0, '1970-01-01', true, -2.5)",
    )
    .unwrap();
    for (opts, name) in [("", "text"), (" (format csv, header)", "csv")] {
        let mut out = Output::default();
        let r = s
            .copy_out(&format!("copy t to stdout{opts}"), &mut out)
            .unwrap();
        assert_eq!(r.tag, "COPY 4");
        assert_eq!(out.columns, Some(6));
        let text = String::from_utf8(out.text.clone()).unwrap();
        if name == "text" {
            assert!(
                text.starts_with("1\ttab\\there\t1.50\t1995-03-15\tt\t0.1\n"),
                "{text}"
            );
            assert!(text.contains("2\t\\N\t-0.05\t\\N\tf\t\\N\n"), "{text}");
        } else {
            assert!(text.starts_with("i,v,d,dt,b,f\n"), "{text}");
        }
        s.execute(&format!("create table u_{name} (i integer, v varchar, d decimal(12,2), dt date, b boolean, f double)")).unwrap();
        if name == "csv" {
            // A value with a line break is quoted across lines, and read back so.
            assert!(
                text.contains("4,\"back\\slash, \"\"quoted\"\"\nnewline\","),
                "{text}"
            );
        }
        s.copy_in(
            &format!("copy u_{name} from stdin{opts}"),
            &mut Input::new(&text),
        )
        .unwrap();
        assert_eq!(
            rows(&mut s, &format!("select * from u_{name} order by i")),
            rows(&mut s, "select * from t order by i"),
            "{name}"
        );
    }
    // COPY (query) TO a file, and back.
    let file = dir.path().join("out.csv");
    let r = s
        .execute(&format!(
            "copy (select i, d from t where i < 4 order by i) to '{}' (format csv)",
            file.display()
        ))
        .unwrap();
    assert_eq!(r.tag, "COPY 3");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "1,1.50\n2,-0.05\n3,12345678.90\n"
    );
    // A file in PostgreSQL's text format (any name but .csv and dbgen's .tbl)
    // reads back as it was written: tabs, backslashes, line breaks and NULLs.
    let text_file = dir.path().join("t.txt");
    s.execute(&format!("copy t to '{}'", text_file.display()))
        .unwrap();
    s.execute(
        "create table u_file (i integer, v varchar, d decimal(12,2), dt date, b boolean, f double)",
    )
    .unwrap();
    let r = s
        .execute(&format!("copy u_file from '{}'", text_file.display()))
        .unwrap();
    assert_eq!(r.tag, "COPY 4");
    assert_eq!(
        rows(&mut s, "select * from u_file order by i"),
        rows(&mut s, "select * from t order by i")
    );
    // A server's clients may not write server files.
    let mut denied = db.session();
    denied.set_file_access(kura::FileAccess::Denied);
    let e = denied
        .execute(&format!("copy t to '{}'", file.display()))
        .unwrap_err();
    assert_eq!(e.sqlstate(), "42501", "{e}");
    // The shell has no client to read from or write to.
    let e = s.execute("copy t from stdin").unwrap_err();
    assert!(e.to_string().contains("give a file"), "{e}");
    let e = s.execute("copy t to stdout").unwrap_err();
    assert!(e.to_string().contains("TO 'file'"), "{e}");
}

#[test]
fn copy_in_inside_a_transaction_rolls_back() {
    let (_d, db) = db();
    let mut s = db.session();
    s.execute("create table t (i integer)").unwrap();
    s.execute("begin").unwrap();
    s.copy_in("copy t from stdin", &mut Input::new("1\n2\n"))
        .unwrap();
    assert_eq!(
        rows(&mut s, "select count(*) from t")[0][0],
        Value::BigInt(2)
    );
    s.execute("rollback").unwrap();
    assert_eq!(
        rows(&mut s, "select count(*) from t")[0][0],
        Value::BigInt(0)
    );
    s.execute("begin").unwrap();
    s.copy_in("copy t from stdin", &mut Input::new("3\n"))
        .unwrap();
    s.execute("commit").unwrap();
    assert_eq!(
        rows(&mut s, "select count(*) from t")[0][0],
        Value::BigInt(1)
    );
}

#[test]
fn csv_values_with_line_breaks_load_across_chunks_and_lines_count_on() {
    let (_d, db) = db();
    let mut s = db.session();
    s.execute("create table t (i integer, v varchar)").unwrap();
    // A quoted value spanning lines 2-3: the bad value after it is on line 4.
    let e = s
        .copy_in(
            "copy t from stdin (format csv)",
            &mut Input::new("1,a\n2,\"b\nc\"\nx,d\n"),
        )
        .unwrap_err();
    assert!(e.to_string().starts_with("STDIN:4:1:"), "{e}");
    // More than a loader chunk (8 MiB) of records that each span two lines.
    let n = 400_000;
    let data: String = (0..n)
        .map(|k| format!("{k},\"line one of {k}\nline \"\"two\"\"\"\n"))
        .collect();
    assert!(data.len() > 8 << 20);
    let r = s
        .copy_in("copy t from stdin (format csv)", &mut Input::new(&data))
        .unwrap();
    assert_eq!(r.tag, format!("COPY {n}"));
    let got = rows(
        &mut s,
        "select count(*), sum(i), min(v) from t where v like '%\n%'",
    );
    assert_eq!(got[0][0], Value::BigInt(n));
    assert_eq!(got[0][1], Value::BigInt(n * (n - 1) / 2));
    assert_eq!(got[0][2], Value::Text("line one of 0\nline \"two\"".into()));
}

#[test]
fn a_nul_byte_in_text_is_refused_as_postgresql_refuses_it() {
    let (_d, db) = db();
    let mut s = db.session();
    s.execute("create table t (i integer, v varchar)").unwrap();
    for data in [
        "1\tok\n2\tbad\\0byte\n",
        "1\tok\n2\tbad\0byte\n",
        "1\tok\n2\t\\x00\n",
    ] {
        let e = s
            .copy_in("copy t from stdin", &mut Input::new(data))
            .unwrap_err();
        assert_eq!(e.sqlstate(), "22021", "{data:?}: {e}");
        assert!(e.to_string().contains("0x00"), "{e}");
    }
    assert_eq!(
        rows(&mut s, "select count(*) from t")[0][0],
        Value::BigInt(0)
    );
}

#[test]
fn binary_copy_out_and_back_gives_the_same_table() {
    let (_d, db) = db();
    let mut s = db.session();
    s.execute(
        "create table b (i integer, s smallint, g bigint, d decimal(12,2), v varchar(20), \
         c char(3), dt date, ts timestamp, ok boolean, f double precision)",
    )
    .unwrap();
    s.execute(
        "insert into b values \
         (1, -2, 3000000000000, -12.34, 'say \"hi\", ok', 'ab', '1995-03-15', \
          '2020-01-02 03:04:05.678', true, 0.25), \
         (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), \
         (2, 32767, -1, 0.01, '', 'x', '1970-01-01', '1999-12-31 23:59:59', false, -1e300)",
    )
    .unwrap();
    let mut out = Output::default();
    let r = s
        .copy_out("copy b to stdout (format binary)", &mut out)
        .unwrap();
    assert_eq!(r.tag, "COPY 3");
    assert!(out.binary && out.text.starts_with(b"PGCOPY\n\xff\r\n\0"));
    assert!(out.text.ends_with(&[0xff, 0xff]), "the trailer ends it");
    s.execute(
        "create table b2 (i integer, s smallint, g bigint, d decimal(12,2), v varchar(20), \
               c char(3), dt date, ts timestamp, ok boolean, f double precision)",
    )
    .unwrap();
    let mut input = Input::new("");
    input.data = std::io::Cursor::new(out.text.clone());
    let r = s
        .copy_in("copy b2 from stdin (format binary)", &mut input)
        .unwrap();
    assert_eq!(r.tag, "COPY 3");
    let all = "select * from {} order by i nulls first";
    assert_eq!(
        rows(&mut s, &all.replace("{}", "b")),
        rows(&mut s, &all.replace("{}", "b2"))
    );
    // Text options have no meaning in the binary format; a damaged stream
    // loads nothing.
    let e = s
        .copy_in(
            "copy b2 from stdin (format binary, delimiter ',')",
            &mut Input::new(""),
        )
        .unwrap_err();
    assert!(e.to_string().contains("BINARY mode"), "{e}");
    let mut cut = Input::new("");
    cut.data = std::io::Cursor::new(out.text[..out.text.len() - 7].to_vec());
    assert!(s
        .copy_in("copy b2 from stdin (format binary)", &mut cut)
        .is_err());
    assert_eq!(
        rows(&mut s, "select count(*) from b2")[0][0],
        Value::BigInt(3)
    );
}
