//! Bounds on one statement's text, checked before it is parsed: the parser
//! builds the whole syntax tree at once, without asking for cancellation, and a
//! tree takes hundreds of times its text in memory. How many set operations and
//! query blocks a statement may hold, and the memory its parse reserves from the
//! budget all running queries share.

use std::sync::Arc;

use kura_exec::context::MemoryTracker;
use sqlparser::dialect::PostgreSqlDialect;

use crate::error::{KuraError, KuraResult};

/// How many UNION, INTERSECT and EXCEPT operators one statement may have. The
/// parser builds a chain of them without recursing, but everything after it
/// (binding, planning, dropping the tree) walks one level per operator:
/// 100,000 of them overflowed the statement stack and killed the server.
/// SQLite allows 500 terms (SQLITE_MAX_COMPOUND_SELECT).
pub(crate) const MAX_SET_OPERATIONS: usize = 500;

/// How many SELECT blocks one statement may have. Each parses into a tree of
/// about 17 KB and is copied when a CTE is bound: a chain of 100,000 CTEs took
/// 2.4 GB before the binder's depth limit refused it. Queries nest at most
/// [`kura_sql::binder::MAX_QUERY_DEPTH`] deep, so a longer chain cannot run.
pub(crate) const MAX_QUERY_BLOCKS: usize = 2000;

/// Memory a statement's syntax tree may take per byte of its text, reserved
/// from the shared budget while the statement is parsed and run. Measured
/// with sqlparser 0.63: a list of function calls (`abs(1), abs(1), ...`) takes
/// about 600 bytes per byte, a VALUES list or IN list about 100.
pub(crate) const PARSED_BYTES_PER_TEXT_BYTE: u64 = 640;

/// Texts shorter than this parse into trees too small to count.
const COUNTED_TEXT_BYTES: usize = 16 << 10;

/// Refuses a statement with more than [`MAX_SET_OPERATIONS`] set operators or
/// [`MAX_QUERY_BLOCKS`] SELECTs (54001), counted on the tokens so that words
/// inside strings, quoted names and comments do not count.
pub(crate) fn check_statement_shape(sql: &str) -> KuraResult<()> {
    use sqlparser::keywords::Keyword;
    use sqlparser::tokenizer::{Token, Tokenizer};
    // Most statements name the words rarely: a plain count settles them
    // without tokenizing the text once more.
    let lower = sql.to_ascii_lowercase();
    let set_words: usize = ["union", "intersect", "except"]
        .iter()
        .map(|w| lower.matches(w).count())
        .sum();
    let selects = lower.matches("select").count();
    if set_words <= MAX_SET_OPERATIONS && selects <= MAX_QUERY_BLOCKS {
        return Ok(());
    }
    // A text that does not tokenize is left to the parser's own error.
    let Ok(tokens) = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize() else {
        return Ok(());
    };
    let (mut set_ops, mut blocks) = (0usize, 0usize);
    for t in &tokens {
        match t {
            Token::SemiColon => (set_ops, blocks) = (0, 0),
            Token::Word(w) if w.quote_style.is_none() => match w.keyword {
                Keyword::UNION | Keyword::INTERSECT | Keyword::EXCEPT => {
                    set_ops += 1;
                    if set_ops > MAX_SET_OPERATIONS {
                        return Err(KuraError::TooDeep(format!(
                            "the statement has more than {MAX_SET_OPERATIONS} UNION, \
                             INTERSECT or EXCEPT operations"
                        )));
                    }
                }
                Keyword::SELECT => {
                    blocks += 1;
                    if blocks > MAX_QUERY_BLOCKS {
                        return Err(KuraError::TooDeep(format!(
                            "the statement has more than {MAX_QUERY_BLOCKS} SELECTs"
                        )));
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }
    Ok(())
}

/// Memory reserved for a parsed text from the shared budget; given back when
/// dropped (once the statements are dropped too).
pub(crate) struct ParseMemory {
    tracker: Arc<MemoryTracker>,
    bytes: u64,
}

impl std::fmt::Debug for ParseMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ParseMemory({} bytes)", self.bytes)
    }
}

impl Drop for ParseMemory {
    fn drop(&mut self) {
        self.tracker.release(self.bytes);
    }
}

/// Reserves what parsing `sql` may take from `shared` (53200 when it does
/// not fit); nothing for a short text.
pub(crate) fn reserve_parse(
    sql: &str,
    shared: &Arc<MemoryTracker>,
) -> KuraResult<Option<ParseMemory>> {
    if sql.len() < COUNTED_TEXT_BYTES {
        return Ok(None);
    }
    let bytes = sql.len() as u64 * PARSED_BYTES_PER_TEXT_BYTE;
    let reserved = shared.reserve(bytes, "parsing the statement text");
    // Released whether or not the reservation failed: the tracker counted it.
    let memory = ParseMemory {
        tracker: shared.clone(),
        bytes,
    };
    match reserved {
        Ok(()) => Ok(Some(memory)),
        // The shared budget is a root tracker: its error must name the
        // process's limit, not a session setting.
        Err(_) => Err(kura_exec::ExecError::OutOfSharedMemory {
            what: "parsing the statement text",
            limit: shared.limit(),
        }
        .into()),
    }
}

/// Whether a text is long enough to be parsed on a thread of its own.
pub(crate) fn parses_long(sql: &str) -> bool {
    sql.len() >= COUNTED_TEXT_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_words_only_outside_strings() {
        let many = vec!["select 1"; MAX_QUERY_BLOCKS + 1].join(", ");
        assert!(check_statement_shape(&format!("select ({many})")).is_err());
        let quoted = format!("select '{}'", "select ".repeat(MAX_QUERY_BLOCKS + 1));
        check_statement_shape(&quoted).unwrap();
        // A semicolon starts the count again.
        let statements = vec!["select 1"; MAX_QUERY_BLOCKS + 1].join("; ");
        check_statement_shape(&statements).unwrap();
    }

    #[test]
    fn a_long_text_reserves_from_the_shared_budget() {
        let shared = Arc::new(MemoryTracker::new(100 << 20));
        let sql = "x".repeat(64 << 10);
        let held = reserve_parse(&sql, &shared).unwrap();
        assert_eq!(shared.used(), (64 << 10) * PARSED_BYTES_PER_TEXT_BYTE);
        drop(held);
        assert_eq!(shared.used(), 0);
        let long = "x".repeat(1 << 20);
        assert!(reserve_parse(&long, &shared).is_err());
        assert_eq!(shared.used(), 0);
        assert!(reserve_parse("select 1", &shared).unwrap().is_none());
    }
}
