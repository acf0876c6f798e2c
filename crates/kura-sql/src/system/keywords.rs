//! `pg_get_keywords()`: the SQL key words of kura's parser, with PostgreSQL's
//! columns (word, category code and description, whether the word may stand
//! as a column label without AS). Clients ask for them to highlight SQL.

use kura_common::{DataType, Value};
use sqlparser::keywords::{ALL_KEYWORDS, ALL_KEYWORDS_INDEX, RESERVED_FOR_COLUMN_ALIAS};

const TEXT: DataType = DataType::Varchar(None);

/// The result's columns and its rows: a word is reserved (`R`) when the
/// parser does not take it as a column alias, unreserved (`U`) otherwise.
pub fn pg_get_keywords() -> (Vec<(&'static str, DataType)>, Vec<Vec<Value>>) {
    let columns = vec![
        ("word", TEXT),
        ("catcode", TEXT),
        ("barelabel", DataType::Boolean),
        ("catdesc", TEXT),
        ("baredesc", TEXT),
    ];
    let rows = ALL_KEYWORDS
        .iter()
        .zip(ALL_KEYWORDS_INDEX)
        .map(|(word, keyword)| {
            let reserved = RESERVED_FOR_COLUMN_ALIAS.contains(keyword);
            let text = |s: &str| Value::Text(s.to_string());
            vec![
                text(&word.to_lowercase()),
                text(if reserved { "R" } else { "U" }),
                Value::Boolean(!reserved),
                text(if reserved { "reserved" } else { "unreserved" }),
                text(if reserved {
                    "requires AS"
                } else {
                    "can be bare label"
                }),
            ]
        })
        .collect();
    (columns, rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn select_is_reserved_and_names_are_not() {
        let (columns, rows) = pg_get_keywords();
        assert_eq!(columns.len(), 5);
        let find = |w: &str| {
            rows.iter()
                .find(|r| r[0] == Value::Text(w.into()))
                .cloned()
                .unwrap_or_else(|| panic!("{w} listed"))
        };
        assert_eq!(find("from")[1], Value::Text("R".into()));
        assert_eq!(find("name")[1], Value::Text("U".into()));
    }
}
