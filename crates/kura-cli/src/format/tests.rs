//! Output-format tests: quoting, embedded newlines and delimiters, NULL apart from
//! the empty string, JSON column order, duplicate names and exact decimals.

use super::*;
use kura::{Batch, DataType, ResultColumn};
use kura_common::Vector;

fn result(columns: &[(&str, DataType)], rows: &[Vec<Value>]) -> QueryResult {
    let vectors = columns
        .iter()
        .enumerate()
        .map(|(i, (_, t))| {
            let values: Vec<Value> = rows.iter().map(|r| r[i].clone()).collect();
            Vector::from_values(*t, &values).expect("values of the column type")
        })
        .collect();
    QueryResult::rows_of(
        columns
            .iter()
            .map(|(n, t)| ResultColumn {
                name: n.to_string(),
                data_type: *t,
            })
            .collect(),
        vec![Batch::new(vectors)],
    )
}

fn render(r: &QueryResult, opts: &Options) -> String {
    let mut out = Vec::new();
    print(&mut out, r, opts).unwrap();
    String::from_utf8(out).unwrap()
}

fn text(s: &str) -> Value {
    Value::Text(s.into())
}

const TEXT: DataType = DataType::Varchar(None);
const DEC: DataType = DataType::Decimal {
    precision: 15,
    scale: 2,
};

fn awkward() -> QueryResult {
    result(
        &[("s", TEXT), ("n", DataType::Integer)],
        &[
            vec![text("a|b"), Value::Integer(1)],
            vec![text("x,y"), Value::Integer(2)],
            vec![text("say \"hi\""), Value::Null],
            vec![text("line1\nline2"), Value::Integer(4)],
            vec![text(""), Value::Integer(5)],
            vec![Value::Null, Value::Integer(6)],
        ],
    )
}

#[test]
fn csv_quotes_per_rfc_4180_and_keeps_null_apart_from_empty() {
    let out = render(&awkward(), &Options::new(Format::Csv));
    assert_eq!(
        out,
        "s,n\na|b,1\n\"x,y\",2\n\"say \"\"hi\"\"\",\n\"line1\nline2\",4\n\"\",5\n,6\n"
    );
    // And a CSV reader gets the values back, with the empty string distinct.
    let mut rd = csv::ReaderBuilder::new().from_reader(out.as_bytes());
    let recs: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
    assert_eq!(&recs[1][0], "x,y");
    assert_eq!(&recs[3][0], "line1\nline2");
    assert_eq!(recs.len(), 6);
}

#[test]
fn csv_delimiter_and_null_text_are_settable() {
    let mut opts = Options::new(Format::Csv);
    opts.delimiter = b'|';
    opts.null = Some("\\N".into());
    let out = render(&awkward(), &opts);
    assert!(out.starts_with("s|n\n\"a|b\"|1\nx,y|2\n"), "{out}");
    assert!(out.ends_with("\"\"|5\n\\N|6\n"), "{out}");
}

#[test]
fn tsv_uses_tabs_and_quotes_tabs() {
    let r = result(
        &[("a", TEXT), ("b", TEXT)],
        &[vec![text("t\tab"), text("x")]],
    );
    assert_eq!(
        render(&r, &Options::new(Format::Tsv)),
        "a\tb\n\"t\tab\"\tx\n"
    );
}

#[test]
fn json_keeps_column_order_duplicates_and_exact_decimals() {
    let r = result(
        &[
            ("z", DEC),
            ("a", TEXT),
            ("z", DataType::Boolean),
            ("d", DEC),
        ],
        &[
            vec![
                Value::Decimal(12_345_678_901_234_567, 2),
                text("q\"\n"),
                Value::Boolean(true),
                Value::Null,
            ],
            vec![
                Value::Decimal(-5, 2),
                Value::Null,
                Value::Boolean(false),
                Value::Decimal(10, 2),
            ],
        ],
    );
    let out = render(&r, &Options::new(Format::Json));
    assert_eq!(
        out,
        "[\n{\"z\":123456789012345.67,\"a\":\"q\\\"\\n\",\"z\":true,\"d\":null},\n{\"z\":-0.05,\"a\":null,\"z\":false,\"d\":0.10}\n]\n"
    );
    // Valid JSON that a parser with exact numbers reads back to the same digits.
    let parsed: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(parsed.as_array().unwrap().len(), 2);
    let lines = render(&r, &Options::new(Format::Jsonl));
    assert_eq!(lines.lines().count(), 2);
    assert!(lines.starts_with("{\"z\":123456789012345.67,\"a\""));
    let arrays = render(&r, &Options::new(Format::JsonArrays));
    assert!(
        arrays.starts_with("[\n[\"z\",\"a\",\"z\",\"d\"],\n[123456789012345.67,"),
        "{arrays}"
    );
}

#[test]
fn empty_json_result_is_an_empty_array() {
    let r = result(&[("a", TEXT)], &[]);
    assert_eq!(render(&r, &Options::new(Format::Json)), "[]\n");
}

#[test]
fn table_shows_null_distinctly_and_caps_rows() {
    let mut opts = Options::new(Format::Table);
    opts.null = Some("∅".into());
    opts.max_rows = Some(2);
    let out = render(&awkward(), &opts);
    assert!(out.contains("a|b"), "{out}");
    assert!(!out.contains("line1"), "{out}");
    assert!(out.contains("(4 more rows not shown"), "{out}");
    let out = render(
        &awkward(),
        &Options {
            null: Some("∅".into()),
            ..Options::new(Format::Table)
        },
    );
    assert!(out.contains('∅'), "{out}");
    assert!(out.contains("(6 rows)"), "{out}");
}

#[test]
fn expanded_display_prints_one_block_per_record() {
    let mut opts = Options::new(Format::Table);
    opts.expanded = Expanded::On;
    let out = render(&awkward(), &opts);
    assert!(out.starts_with("-[ RECORD 1 ]"), "{out}");
    assert!(out.contains("s | a|b\nn | 1\n"), "{out}");
    // auto: expanded only when wider than the terminal
    opts.expanded = Expanded::Auto;
    opts.width = Some(200);
    assert!(render(&awkward(), &opts).starts_with('┌'));
    opts.width = Some(10);
    assert!(render(&awkward(), &opts).starts_with("-[ RECORD 1 ]"));
}

#[test]
fn markdown_escapes_pipes_and_newlines() {
    let out = render(&awkward(), &Options::new(Format::Markdown));
    assert!(
        out.starts_with("| s | n |\n|---|---:|\n| a\\|b | 1 |\n"),
        "{out}"
    );
    assert!(out.contains("| line1<br>line2 | 4 |"), "{out}");
}

#[test]
fn the_shells_null_sign_stays_in_tables_and_json_keeps_null() {
    // The shell's options after `\pset format csv` / `json`: its ∅ is for tables only.
    let mut opts = crate::shell::shell_options(Options::new(Format::Table));
    assert!(render(&awkward(), &opts).contains('∅'));
    opts.format = Format::Csv;
    let csv = render(&awkward(), &opts);
    assert!(!csv.contains('∅'), "{csv}");
    assert!(csv.contains("\"say \"\"hi\"\"\",\n"), "{csv}");
    opts.format = Format::Json;
    let json = render(&awkward(), &opts);
    assert!(json.contains("\"n\":null"), "{json}");
    assert!(!json.contains('∅'), "{json}");
    // A NULL text set by the user is for the text formats; JSON keeps its null.
    opts.null = Some("NULL".into());
    assert!(render(&awkward(), &opts).contains("\"n\":null"));
    opts.format = Format::Tsv;
    assert!(render(&awkward(), &opts).contains("\"say \"\"hi\"\"\"\tNULL\n"));
}
