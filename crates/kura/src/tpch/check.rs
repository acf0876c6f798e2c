//! Comparison of query results with reference answers (TPC-H answer files).
//!
//! An answer file has a header line naming the columns, then one line per row with
//! fields separated by `|`, no quoting, dates as `YYYY-MM-DD`, decimals at full
//! precision and `NULL` for a NULL. Comparison rules (those of the reference answers):
//! numbers compare as numbers (absolute tolerance 0.01 for rounded values, else
//! relative 1e-9), text after trimming blanks (CHAR padding), and row order counts. Column names are not compared: engines name unnamed expressions
//! differently (`sum(l_quantity)` vs `sum`), only the number of columns must agree.

use std::fmt;
use std::io;
use std::path::Path;

use kura_common::date::format_date;
use kura_common::Value;

/// Absolute tolerance for values rounded to cents (money columns an engine rounds).
pub const ABS_TOLERANCE: f64 = 0.01;
/// Relative tolerance for every other number (full-precision decimals, doubles).
pub const REL_TOLERANCE: f64 = 1e-9;

/// A parsed answer file: column names and rows of field texts.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Answer {
    /// Parses the text of an answer file. Blank lines are ignored; every row must have
    /// as many fields as the header.
    pub fn parse(text: &str) -> io::Result<Answer> {
        let mut lines = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.strip_suffix('\r').unwrap_or(l)))
            .filter(|(_, l)| !l.trim().is_empty());
        let (_, header) = lines
            .next()
            .ok_or_else(|| invalid("answer file is empty: expected a header line".into()))?;
        let columns: Vec<String> = header.split('|').map(|c| c.trim().to_string()).collect();
        let mut rows = Vec::new();
        for (line_no, line) in lines {
            let fields: Vec<String> = line.split('|').map(str::to_string).collect();
            if fields.len() != columns.len() {
                return Err(invalid(format!(
                    "line {line_no}: {} fields, but the header names {} columns",
                    fields.len(),
                    columns.len()
                )));
            }
            rows.push(fields);
        }
        Ok(Answer { columns, rows })
    }

    /// Reads and parses an answer file; errors name the file.
    pub fn read(path: &Path) -> io::Result<Answer> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        Answer::parse(&text).map_err(|e| invalid(format!("{}: {e}", path.display())))
    }
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// One way a result differs from its answer. Rows are numbered from 1.
#[derive(Debug, Clone, PartialEq)]
pub enum Mismatch {
    ColumnCount {
        expected: usize,
        actual: usize,
    },
    RowCount {
        expected: usize,
        actual: usize,
    },
    Field {
        row: usize,
        column: String,
        expected: String,
        actual: String,
    },
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mismatch::ColumnCount { expected, actual } => {
                write!(f, "{expected} columns expected, {actual} returned")
            }
            Mismatch::RowCount { expected, actual } => {
                write!(f, "{expected} rows expected, {actual} returned")
            }
            Mismatch::Field {
                row,
                column,
                expected,
                actual,
            } => {
                write!(
                    f,
                    "row {row}, column {column}: expected {expected:?}, got {actual:?}"
                )
            }
        }
    }
}

/// Compares result rows with an answer. Returns every difference found (empty when the
/// result matches): a column-count difference alone (fields cannot be lined up then),
/// otherwise a row-count difference and the field differences over the common rows.
pub fn compare(expected: &Answer, actual_columns: usize, actual: &[Vec<Value>]) -> Vec<Mismatch> {
    if expected.columns.len() != actual_columns {
        return vec![Mismatch::ColumnCount {
            expected: expected.columns.len(),
            actual: actual_columns,
        }];
    }
    let mut out = Vec::new();
    if expected.rows.len() != actual.len() {
        out.push(Mismatch::RowCount {
            expected: expected.rows.len(),
            actual: actual.len(),
        });
    }
    for (i, (want, got)) in expected.rows.iter().zip(actual).enumerate() {
        for ((column, want), got) in expected.columns.iter().zip(want).zip(got) {
            if !field_matches(want, got) {
                out.push(Mismatch::Field {
                    row: i + 1,
                    column: column.clone(),
                    expected: want.clone(),
                    actual: render(got),
                });
            }
        }
    }
    out
}

/// A short report of mismatches for a person: the first `max` of them and how many more.
pub fn describe(mismatches: &[Mismatch], max: usize) -> String {
    let mut parts: Vec<String> = mismatches.iter().take(max).map(|m| m.to_string()).collect();
    if mismatches.len() > max {
        parts.push(format!("... and {} more", mismatches.len() - max));
    }
    parts.join("; ")
}

/// A value as an answer file would print it.
pub fn render(value: &Value) -> String {
    match value {
        Value::Null => "NULL".to_string(),
        Value::Date(d) => format_date(*d),
        other => other.to_string(),
    }
}

/// Whether one answer field agrees with one result value under the comparison rules.
pub fn field_matches(expected: &str, actual: &Value) -> bool {
    let expected = expected.trim();
    match actual {
        Value::Null => expected == "NULL",
        Value::Text(s) => s.trim() == expected,
        Value::Boolean(b) => match expected {
            "t" | "true" | "TRUE" => *b,
            "f" | "false" | "FALSE" => !*b,
            _ => false,
        },
        Value::Date(d) => format_date(*d) == expected,
        Value::Timestamp(_) | Value::Interval(_) => actual.to_string() == expected,
        Value::Integer(_) | Value::BigInt(_) | Value::Double(_) | Value::Decimal(..) => {
            numbers_match(expected, actual)
        }
    }
}

fn numbers_match(expected: &str, actual: &Value) -> bool {
    let (Ok(want), Some(got)) = (expected.parse::<f64>(), actual.as_f64()) else {
        return false;
    };
    if want == got {
        return true;
    }
    let diff = (want - got).abs();
    let expected_digits = fraction_digits(expected);
    let actual_digits = actual_fraction_digits(actual);
    // The absolute tolerance is for rounded values: a result rounded to fewer digits
    // than the answer may be off by one unit of its last place, at most a cent; an
    // answer that is itself at cents may be off by a cent. Applied to every number
    // it would let a wrong small value (an average discount of 0.045 for 0.050) pass.
    let abs_tolerance = if actual_digits < expected_digits {
        ABS_TOLERANCE.min(10f64.powi(-(actual_digits.min(300) as i32)))
    } else if expected_digits <= 2 {
        ABS_TOLERANCE
    } else {
        0.0
    };
    diff <= abs_tolerance * (1.0 + 1e-9) || diff <= REL_TOLERANCE * want.abs().max(got.abs())
}

fn fraction_digits(text: &str) -> usize {
    if text.contains(['e', 'E']) {
        return usize::MAX;
    }
    text.split_once('.').map_or(0, |(_, f)| f.len())
}

fn actual_fraction_digits(actual: &Value) -> usize {
    match actual {
        Value::Integer(_) | Value::BigInt(_) => 0,
        Value::Decimal(_, scale) => *scale as usize,
        // A double's printed digits say nothing about rounding.
        _ => usize::MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kura_common::date::parse_date;

    fn answer(text: &str) -> Answer {
        Answer::parse(text).expect("valid answer text")
    }

    fn dec(v: i128, s: u8) -> Value {
        Value::Decimal(v, s)
    }

    #[test]
    fn parses_header_rows_and_blank_lines() {
        let a = answer("a|b\n1|x \n\n2|NULL\n");
        assert_eq!(a.columns, vec!["a", "b"]);
        assert_eq!(a.rows, vec![vec!["1", "x "], vec!["2", "NULL"]]);
    }

    #[test]
    fn rejects_empty_and_ragged_files() {
        assert!(Answer::parse("\n\n").is_err());
        let err = Answer::parse("a|b\n1|2\n3\n").unwrap_err();
        assert!(err.to_string().contains("line 3"), "{err}");
    }

    #[test]
    fn equal_results_match() {
        let a = answer("flag|qty|price|day|n\nA|380456.00|0.05008133906964238|1995-03-15|14876\n");
        let rows = vec![vec![
            Value::Text("A ".into()),
            dec(38045600, 2),
            Value::Double(0.05008133906964238),
            Value::Date(parse_date("1995-03-15").unwrap()),
            Value::BigInt(14876),
        ]];
        assert_eq!(compare(&a, 5, &rows), vec![]);
    }

    #[test]
    fn rounded_money_within_a_cent_matches_but_not_beyond() {
        let a = answer("sum_disc_price\n505822.4861\n");
        assert!(compare(&a, 1, &[vec![dec(50582249, 2)]]).is_empty());
        let off = compare(&a, 1, &[vec![dec(50582250, 2)]]);
        assert_eq!(
            off,
            vec![Mismatch::Field {
                row: 1,
                column: "sum_disc_price".into(),
                expected: "505822.4861".into(),
                actual: "505822.50".into()
            }]
        );
    }

    #[test]
    fn large_sums_use_relative_tolerance() {
        // 1e-9 of 5.3e8 is about 0.5: a full-precision double sum may differ that much.
        let a = answer("sum_charge\n526165934.000839\n");
        assert!(compare(&a, 1, &[vec![Value::Double(526165934.0008391)]]).is_empty());
        assert_eq!(compare(&a, 1, &[vec![Value::Double(526165935.0)]]).len(), 1);
    }

    #[test]
    fn full_precision_small_values_use_relative_tolerance() {
        let a = answer("avg_disc\n0.05008133906964238\n");
        // Relative 1e-9 passes a last-digit difference of a double ...
        assert!(compare(&a, 1, &[vec![Value::Double(0.050081339069642)]]).is_empty());
        // ... but a wrong average within 0.01 is still wrong.
        assert_eq!(compare(&a, 1, &[vec![Value::Double(0.045)]]).len(), 1);
        assert_eq!(compare(&a, 1, &[vec![dec(450000, 7)]]).len(), 1);
    }

    #[test]
    fn a_result_rounded_to_fewer_digits_may_be_off_by_its_last_place() {
        let a = answer("avg_disc\n0.05008133906964238\n");
        assert!(compare(&a, 1, &[vec![dec(500813, 7)]]).is_empty());
        assert!(compare(&a, 1, &[vec![dec(5008, 5)]]).is_empty());
        assert_eq!(compare(&a, 1, &[vec![dec(500800, 7)]]).len(), 1);
        // Rounded to cents, the result may be a cent off, not more.
        assert!(compare(&a, 1, &[vec![dec(5, 2)]]).is_empty());
        assert_eq!(compare(&a, 1, &[vec![dec(7, 2)]]).len(), 1);
    }

    #[test]
    fn nulls_match_only_null() {
        let a = answer("avg_yearly\nNULL\n");
        assert!(compare(&a, 1, &[vec![Value::Null]]).is_empty());
        assert_eq!(compare(&a, 1, &[vec![dec(0, 2)]]).len(), 1);
        let b = answer("x\n0\n");
        assert_eq!(compare(&b, 1, &[vec![Value::Null]]).len(), 1);
    }

    #[test]
    fn text_is_trimmed_but_otherwise_exact() {
        let a = answer("n_name\nGERMANY\n");
        assert!(compare(
            &a,
            1,
            &[vec![Value::Text("GERMANY                  ".into())]]
        )
        .is_empty());
        assert_eq!(
            compare(&a, 1, &[vec![Value::Text("germany".into())]]).len(),
            1
        );
        // A number where text is expected does not match.
        assert_eq!(compare(&a, 1, &[vec![Value::Integer(7)]]).len(), 1);
    }

    #[test]
    fn row_order_counts() {
        let a = answer("k\n1\n2\n");
        let swapped = compare(&a, 1, &[vec![Value::Integer(2)], vec![Value::Integer(1)]]);
        assert_eq!(swapped.len(), 2);
        assert!(matches!(&swapped[0], Mismatch::Field { row: 1, column, .. } if column == "k"));
    }

    #[test]
    fn row_and_column_count_differences_are_reported() {
        let a = answer("k|v\n1|a\n2|b\n");
        let fewer = compare(&a, 2, &[vec![Value::Integer(1), Value::Text("a".into())]]);
        assert_eq!(
            fewer,
            vec![Mismatch::RowCount {
                expected: 2,
                actual: 1
            }]
        );
        let narrow = compare(&a, 1, &[vec![Value::Integer(1)]]);
        assert_eq!(
            narrow,
            vec![Mismatch::ColumnCount {
                expected: 2,
                actual: 1
            }]
        );
        let empty = answer("k\n");
        assert_eq!(
            compare(&empty, 1, &[vec![Value::Integer(1)]]),
            vec![Mismatch::RowCount {
                expected: 0,
                actual: 1
            }]
        );
    }

    #[test]
    fn dates_compare_as_dates() {
        let a = answer("d\n1998-09-02\n");
        let day = parse_date("1998-09-02").unwrap();
        assert!(compare(&a, 1, &[vec![Value::Date(day)]]).is_empty());
        assert_eq!(compare(&a, 1, &[vec![Value::Date(day + 1)]]).len(), 1);
    }

    #[test]
    fn description_names_row_column_and_values() {
        let a = answer("l_year|revenue\n1995|10.00\n1996|20.00\n");
        let got = vec![
            vec![Value::Integer(1995), dec(1000, 2)],
            vec![Value::Integer(1997), dec(2000, 2)],
        ];
        let text = describe(&compare(&a, 2, &got), 5);
        assert_eq!(
            text,
            "row 2, column l_year: expected \"1996\", got \"1997\""
        );
    }
}
