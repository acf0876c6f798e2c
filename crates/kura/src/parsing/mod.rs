//! SQL text parsed into statements, within kura's bounds, with the statements sqlparser lacks.

use sqlparser::ast::Statement;

use crate::error::{KuraError, KuraResult};
use crate::limits::ParseMemory;

mod bounded;
mod dropped_words;
mod moves;

pub(crate) use moves::{is_database_mark, MOVE_MARK};

/// Parses SQL text into statements (PostgreSQL dialect); a `MOVE` is read as
/// the `FETCH` it moves like, marked so (sqlparser does not know MOVE), and a
/// `FETCH`/`MOVE` without a direction as `NEXT`.
///
/// A statement may parse into a very deep tree; run the parse and everything
/// that holds the statements (including dropping them) inside
/// [`on_statement_stack`](crate::stack::on_statement_stack).
pub fn parse(sql: &str) -> KuraResult<Vec<Statement>> {
    moves::parse_moves(sql)
}

/// Parses a long text on a thread of its own while `canceled` is asked every
/// 10 ms: sqlparser cannot be interrupted, and a text of a few megabytes
/// parses for seconds. On cancellation the caller gets `Ok(None)` at once; the
/// parse finishes in the background and then frees its tree and `memory`.
pub(crate) fn parse_interruptibly(
    sql: &str,
    memory: Option<ParseMemory>,
    canceled: impl Fn() -> bool,
) -> KuraResult<Option<(Vec<Statement>, Option<ParseMemory>)>> {
    use std::sync::mpsc;
    use std::time::Duration;
    let (tx, rx) = mpsc::channel();
    let text = sql.to_string();
    let spawned = std::thread::Builder::new()
        .name("kura-parse".into())
        .stack_size(crate::stack::STATEMENT_STACK)
        .spawn(move || {
            let parsed = parse(&text);
            // When nobody waits any more, the tree and the reservation are
            // dropped here, on this thread's large stack.
            if let Err(mpsc::SendError((parsed, memory))) = tx.send((parsed, memory)) {
                drop(parsed);
                drop(memory);
            }
        });
    if spawned.is_err() {
        // No thread to spare: parse here, uninterruptibly.
        return parse(sql).map(|p| Some((p, None)));
    }
    loop {
        match rx.recv_timeout(Duration::from_millis(10)) {
            Ok((parsed, memory)) => return parsed.map(|p| Some((p, memory))),
            Err(mpsc::RecvTimeoutError::Timeout) if canceled() => return Ok(None),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(KuraError::Internal("the parser thread stopped".into()))
            }
        }
    }
}
