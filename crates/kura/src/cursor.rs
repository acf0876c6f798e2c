//! SQL cursors: `DECLARE name CURSOR [WITH HOLD] FOR query`, `FETCH`, `MOVE`,
//! `CLOSE`. A cursor's rows are materialized when it is declared (the query
//! runs once, its result counted against the memory limit as any collected
//! result is) and then held against the database's shared memory budget until
//! the cursor closes, so held cursors cannot grow the process without bound.
//! Cursors scan forward only (PostgreSQL's NO SCROLL). Without `WITH HOLD` a
//! cursor lives in its transaction block; `COMMIT` keeps the held ones,
//! `ROLLBACK` drops those its transaction declared, `ROLLBACK TO SAVEPOINT`
//! those declared since the savepoint (as PostgreSQL closes them).

use std::collections::BTreeMap;
use std::sync::Arc;

use kura_common::Batch;
use kura_exec::context::MemoryTracker;
use kura_exec::ops::join::batch_bytes;
use sqlparser::ast::{FetchDirection, ValueWithSpan};

use crate::error::{KuraError, KuraResult};
use crate::result::{QueryResult, ResultColumn};

/// One open cursor.
pub(crate) struct Cursor {
    pub columns: Vec<ResultColumn>,
    batches: Vec<Batch>,
    /// Rows already fetched or skipped.
    pos: usize,
    rows: usize,
    /// Bytes held against the shared memory budget.
    bytes: u64,
    hold: bool,
    /// Declared by the open transaction (a rollback drops it).
    this_transaction: bool,
    /// The session's count of declared cursors before this one.
    seq: u64,
}

/// The cursors of a session.
#[derive(Default)]
pub(crate) struct Cursors {
    open: BTreeMap<String, Cursor>,
    /// Cursors declared so far.
    declared: u64,
}

impl Cursors {
    /// Opens cursor `name` over `batches`, reserving their memory.
    pub fn declare(
        &mut self,
        name: &str,
        columns: Vec<ResultColumn>,
        batches: Vec<Batch>,
        hold: bool,
        in_transaction: bool,
        memory: &Arc<MemoryTracker>,
    ) -> KuraResult<()> {
        if self.open.contains_key(name) {
            return Err(KuraError::State {
                sqlstate: "42P03",
                message: format!("cursor \"{name}\" already exists"),
            });
        }
        let batches: Vec<Batch> = batches.into_iter().map(Batch::compact).collect();
        let bytes = batches.iter().map(batch_bytes).sum();
        if let Err(e) = memory.reserve(bytes, "cursor rows") {
            // The tracker counts a failed reservation too; give it back.
            memory.release(bytes);
            return Err(e.into());
        }
        let rows = batches.iter().map(|b| b.len()).sum();
        self.open.insert(
            name.to_string(),
            Cursor {
                columns,
                batches,
                pos: 0,
                rows,
                bytes,
                hold,
                this_transaction: in_transaction,
                seq: self.declared,
            },
        );
        self.declared += 1;
        Ok(())
    }

    /// Where declaring stands now (a savepoint records it).
    pub fn mark(&self) -> u64 {
        self.declared
    }

    /// `ROLLBACK TO SAVEPOINT`: closes the cursors declared since `mark`.
    pub fn rollback_to(&mut self, mark: u64, memory: &MemoryTracker) {
        let since: Vec<String> = self
            .open
            .iter()
            .filter(|(_, c)| c.seq >= mark)
            .map(|(n, _)| n.clone())
            .collect();
        for name in since {
            if let Some(c) = self.open.remove(&name) {
                memory.release(c.bytes);
            }
        }
    }

    pub fn get(&self, name: &str) -> KuraResult<&Cursor> {
        self.open.get(name).ok_or_else(|| missing(name))
    }

    /// `FETCH` (rows returned) or `MOVE` (only counted).
    pub fn fetch(
        &mut self,
        name: &str,
        direction: &FetchDirection,
        move_only: bool,
    ) -> KuraResult<QueryResult> {
        let c = self.open.get_mut(name).ok_or_else(|| missing(name))?;
        let want = match direction {
            FetchDirection::Next | FetchDirection::Forward { limit: None } => 1,
            FetchDirection::All | FetchDirection::ForwardAll => usize::MAX,
            FetchDirection::Count { limit } | FetchDirection::Forward { limit: Some(limit) } => {
                count(limit)?
            }
            _ => {
                return Err(KuraError::State {
                    sqlstate: "55000",
                    message: "cursor can only scan forward".into(),
                })
            }
        };
        let start = c.pos;
        let end = start.saturating_add(want).min(c.rows);
        c.pos = end;
        if move_only {
            return Ok(QueryResult::command(format!("MOVE {}", end - start)));
        }
        let mut out = Vec::new();
        let mut first = 0;
        for b in &c.batches {
            let (lo, hi) = (first, first + b.len());
            first = hi;
            if hi <= start || lo >= end {
                continue;
            }
            let from = start.max(lo) - lo;
            let to = end.min(hi) - lo;
            out.push(Batch::new(
                b.columns.iter().map(|v| v.slice(from, to - from)).collect(),
            ));
        }
        let mut r = QueryResult::rows_of(c.columns.clone(), out);
        r.tag = format!("FETCH {}", end - start);
        Ok(r)
    }

    /// `CLOSE name` or `CLOSE ALL` (`None`).
    pub fn close(&mut self, name: Option<&str>, memory: &MemoryTracker) -> KuraResult<()> {
        match name {
            Some(n) => {
                let c = self.open.remove(n).ok_or_else(|| missing(n))?;
                memory.release(c.bytes);
            }
            None => {
                for (_, c) in std::mem::take(&mut self.open) {
                    memory.release(c.bytes);
                }
            }
        }
        Ok(())
    }

    /// At the end of a transaction block: a commit keeps the `WITH HOLD`
    /// cursors, a rollback only those declared before it.
    pub fn end_transaction(&mut self, committed: bool, memory: &MemoryTracker) {
        let open = std::mem::take(&mut self.open);
        for (name, mut c) in open {
            let keep = if committed {
                c.hold
            } else {
                c.hold && !c.this_transaction
            };
            if keep {
                c.this_transaction = false;
                self.open.insert(name, c);
            } else {
                memory.release(c.bytes);
            }
        }
    }

    /// Gives back every cursor's memory (the session ends).
    pub fn release_all(&mut self, memory: &MemoryTracker) {
        let _ = self.close(None, memory);
    }
}

fn missing(name: &str) -> KuraError {
    KuraError::State {
        sqlstate: "34000",
        message: format!("cursor \"{name}\" does not exist"),
    }
}

fn count(v: &ValueWithSpan) -> KuraResult<usize> {
    match &v.value {
        sqlparser::ast::Value::Number(n, _) => match n.parse::<i64>() {
            Ok(n) if n >= 0 => Ok(n as usize),
            Ok(_) => Err(KuraError::State {
                sqlstate: "55000",
                message: "cursor can only scan forward".into(),
            }),
            Err(_) => Err(KuraError::Syntax(format!("invalid row count {n}"))),
        },
        other => Err(KuraError::Syntax(format!("invalid row count {other}"))),
    }
}
