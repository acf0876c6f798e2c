//! `load.sql` of an exported database: one `COPY table FROM 'file'` per table. Written
//! by `EXPORT DATABASE`; on `IMPORT DATABASE` its files are found in the directory
//! imported (wherever it was exported to) and the COPY options DuckDB writes are read
//! as kura's.

use std::path::Path;

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer, Word};

use crate::error::{KuraError, KuraResult};

/// The statements of a script, each as its text (split at the semicolons between them,
/// not those inside strings, quoted names or comments).
pub(crate) fn statements(sql: &str) -> KuraResult<Vec<String>> {
    let tokens = tokenize(sql)?;
    let mut out = Vec::new();
    let mut text = String::new();
    for t in tokens {
        if t == Token::SemiColon {
            if !text.trim().is_empty() {
                out.push(std::mem::take(&mut text).trim().to_string());
            }
            text.clear();
        } else {
            text.push_str(&t.to_string());
        }
    }
    if !text.trim().is_empty() {
        out.push(text.trim().to_string());
    }
    Ok(out)
}

/// Whether a statement of `schema.sql` builds an index that is no constraint's
/// (`CREATE [UNIQUE] INDEX`): the import runs those after the data loads, so that each
/// is built once over every row instead of kept up row by row.
pub(crate) fn deferred(statement: &str) -> bool {
    let words: Vec<String> = statement
        .split_whitespace()
        .take(3)
        .map(|w| w.to_ascii_lowercase())
        .collect();
    matches!(
        words
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .as_slice(),
        ["create", "index", ..] | ["create", "unique", "index"]
    )
}

fn tokenize(sql: &str) -> KuraResult<Vec<Token>> {
    Tokenizer::new(&PostgreSqlDialect {}, sql)
        .tokenize()
        .map_err(|e| KuraError::Syntax(e.to_string()))
}

/// A statement of `load.sql` as kura runs it: a `COPY t FROM 'file' (options)` reads the
/// file of that name in `dir` when there is one (an export directory that was moved or
/// exported by name relative to another directory), and DuckDB's options are spelled as
/// kura's; any other statement runs as written.
pub(crate) fn import_statement(statement: &str, dir: &Path) -> KuraResult<String> {
    let tokens: Vec<Token> = tokenize(statement)?
        .into_iter()
        .filter(|t| !matches!(t, Token::Whitespace(_)))
        .collect();
    let is = |t: Option<&Token>, w: &str| matches!(t, Some(Token::Word(x)) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    if !is(tokens.first(), "copy") {
        return Ok(statement.to_string());
    }
    let Some(from) = tokens.iter().position(|t| is(Some(t), "from")) else {
        return Ok(statement.to_string());
    };
    let Some(Token::SingleQuotedString(path)) = tokens.get(from + 1) else {
        return Ok(statement.to_string());
    };
    let target: String = tokens[1..from]
        .iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(" ");
    let file = Path::new(path)
        .file_name()
        .map(|name| dir.join(name))
        .filter(|p| p.is_file())
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.clone());
    let options = match tokens.get(from + 2) {
        None => Vec::new(),
        Some(Token::LParen) if tokens.last() == Some(&Token::RParen) => {
            copy_options(&tokens[from + 3..tokens.len() - 1])?
        }
        Some(_) => return Ok(statement.to_string()),
    };
    let options = if options.is_empty() {
        String::new()
    } else {
        format!(" ({})", options.join(", "))
    };
    Ok(format!(
        "COPY {target} FROM '{}'{options}",
        file.replace('\'', "''")
    ))
}

/// COPY options as kura reads them, from PostgreSQL's or DuckDB's spelling
/// (`FORMAT 'csv'`, `header 1`, `delim`, `allow_quoted_nulls false`, `force_not_null`).
fn copy_options(tokens: &[Token]) -> KuraResult<Vec<String>> {
    let mut out = Vec::new();
    // Options are split at the commas outside parentheses (`force_not_null ('a', 'b')`).
    let mut depth = 0usize;
    let options = tokens.split(|t| {
        match t {
            Token::LParen => depth += 1,
            Token::RParen => depth = depth.saturating_sub(1),
            _ => {}
        }
        *t == Token::Comma && depth == 0
    });
    for option in options {
        let Some((Token::Word(name), value)) = option.split_first() else {
            return Err(unsupported(option));
        };
        let name = name.value.to_ascii_lowercase();
        let text = |v: &[Token]| -> Option<String> {
            match v {
                [Token::SingleQuotedString(s)] => Some(s.clone()),
                [Token::Word(Word { value, .. })] => Some(value.clone()),
                [Token::Number(n, _)] => Some(n.clone()),
                _ => None,
            }
        };
        let flag = |v: &[Token]| -> Option<bool> {
            if v.is_empty() {
                return Some(true);
            }
            match text(v)?.to_ascii_lowercase().as_str() {
                "1" | "true" | "on" => Some(true),
                "0" | "false" | "off" => Some(false),
                _ => None,
            }
        };
        let quoted = |s: &str| format!("'{}'", s.replace('\'', "''"));
        match name.as_str() {
            "format" => match text(value).map(|f| f.to_ascii_lowercase()) {
                Some(f) if ["csv", "text", "parquet", "json"].contains(&f.as_str()) => {
                    out.push(format!("FORMAT {f}"))
                }
                _ => return Err(unsupported(option)),
            },
            "header" => match flag(value) {
                Some(h) => out.push(format!("HEADER {h}")),
                None => return Err(unsupported(option)),
            },
            "delimiter" | "delim" | "sep" => match text(value) {
                Some(d) => out.push(format!("DELIMITER {}", quoted(&d))),
                None => return Err(unsupported(option)),
            },
            "quote" | "escape" => match text(value) {
                Some(q) => out.push(format!("{} {}", name.to_ascii_uppercase(), quoted(&q))),
                None => return Err(unsupported(option)),
            },
            "null" | "nullstr" => match text(value) {
                Some(n) => out.push(format!("NULL {}", quoted(&n))),
                None => return Err(unsupported(option)),
            },
            // kura reads a quoted empty field as an empty string, never as NULL:
            // what `allow_quoted_nulls false` asks for.
            "allow_quoted_nulls" if flag(value) == Some(false) => {}
            // DuckDB says it for the NOT NULL columns, whose empty strings it writes
            // quoted: an unquoted empty field there is a NULL the column refuses (an
            // error, not a wrong row).
            "force_not_null" => {}
            "encoding"
                if text(value).is_some_and(|e| {
                    e.eq_ignore_ascii_case("utf8") || e.eq_ignore_ascii_case("utf-8")
                }) => {}
            _ => return Err(unsupported(option)),
        }
    }
    Ok(out)
}

fn unsupported(option: &[Token]) -> KuraError {
    let text: Vec<String> = option.iter().map(|t| t.to_string()).collect();
    KuraError::Unsupported(format!("COPY option {}", text.join(" ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_index_builds_wait_for_the_data() {
        assert!(deferred("CREATE INDEX i ON t (a)"));
        assert!(deferred("create\nunique index i on t(a)"));
        assert!(!deferred("CREATE TABLE index_t (a int)"));
        assert!(!deferred("CREATE VIEW v AS SELECT 1"));
    }

    #[test]
    fn a_script_splits_at_semicolons_outside_strings() {
        let s = statements("create table a(x varchar default ';');\n\n-- c;\nselect 1;").unwrap();
        assert_eq!(s.len(), 2, "{s:?}");
        assert!(s[0].contains("';'"));
    }

    #[test]
    fn duckdb_copy_options_read_as_kuras_and_files_are_found_in_the_directory() {
        let dir = std::env::temp_dir().join(format!("kura-load-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.csv"), "x\n").unwrap();
        let got = import_statement(
            "COPY a FROM 'elsewhere/a.csv' (FORMAT 'csv', allow_quoted_nulls false, force_not_null ('id', 'n'), quote '\"', delimiter ',', header 1)",
            &dir,
        )
        .unwrap();
        let file = dir.join("a.csv");
        assert_eq!(
            got,
            format!(
                "COPY a FROM '{}' (FORMAT csv, QUOTE '\"', DELIMITER ',', HEADER true)",
                file.display()
            )
        );
        // A file not in the directory is read where the statement says.
        let kept = import_statement("COPY b FROM 'other/b.parquet' (FORMAT 'parquet')", &dir);
        assert_eq!(
            kept.unwrap(),
            "COPY b FROM 'other/b.parquet' (FORMAT parquet)"
        );
        let refused = import_statement("COPY b FROM 'b.csv' (dateformat '%d')", &dir);
        assert!(refused.unwrap_err().to_string().contains("dateformat"));
        assert_eq!(import_statement("SELECT 1", &dir).unwrap(), "SELECT 1");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
