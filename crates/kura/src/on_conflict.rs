//! `INSERT ... ON CONFLICT [(columns) | ON CONSTRAINT name] DO NOTHING`: a
//! row whose key (the target's, or without a target every unique key of the
//! table) is already in the table, or in a row this statement inserted
//! before it, is skipped, as PostgreSQL skips it; a key with a NULL never
//! conflicts. The keys present are read once per statement. `DO UPDATE` is
//! refused (0A000).

use std::collections::HashSet;

use kura_common::{Batch, Value};
use kura_storage::rules::TableRules;
use kura_storage::{Schema, WriteTxn};
use sqlparser::ast::{ConflictTarget, OnConflictAction, OnInsert};

use crate::dml::quote_ident;
use crate::error::{KuraError, KuraResult};
use crate::query::QueryContext;

/// The keys an INSERT's rows are checked against, as table column positions.
pub(crate) struct ConflictSkip {
    keys: Vec<(String, Vec<usize>)>,
    /// Each key's values present so far (in the table, then inserted).
    seen: Vec<HashSet<String>>,
}

/// A key's values as one hashable text (`None` when one is NULL).
fn key_text(values: impl Iterator<Item = Value>) -> Option<String> {
    let mut text = String::new();
    for v in values {
        if v.is_null() {
            return None;
        }
        text.push_str(&format!("{v:?}\u{1f}"));
    }
    Some(text)
}

impl ConflictSkip {
    /// The skip an `ON CONFLICT` clause asks for on `table`; `None` without
    /// one.
    pub(crate) fn new(
        on: Option<&OnInsert>,
        table: &str,
        schema: &Schema,
        rules: Option<&TableRules>,
    ) -> KuraResult<Option<ConflictSkip>> {
        let Some(on) = on else { return Ok(None) };
        let OnInsert::OnConflict(c) = on else {
            return Err(KuraError::Unsupported(
                "INSERT … ON DUPLICATE KEY (MySQL's; ON CONFLICT is)".into(),
            ));
        };
        if let OnConflictAction::DoUpdate(_) = c.action {
            return Err(KuraError::Unsupported(
                "INSERT … ON CONFLICT DO UPDATE (DO NOTHING is)".into(),
            ));
        }
        let all = rules.map(|r| r.keys.as_slice()).unwrap_or_default();
        let chosen: Vec<_> = match &c.conflict_target {
            None => all.iter().collect(),
            Some(ConflictTarget::Columns(cols)) => {
                let mut want: Vec<String> = cols.iter().map(crate::table_rules::ident).collect();
                want.sort();
                all.iter()
                    .filter(|k| {
                        let mut have = k.columns.clone();
                        have.sort();
                        have == want
                    })
                    .take(1)
                    .collect()
            }
            Some(ConflictTarget::OnConstraint(name)) => {
                let name = crate::ddl::object_name(name);
                let found: Vec<_> = all.iter().filter(|k| k.name == name).collect();
                if found.is_empty() {
                    return Err(KuraError::State {
                        sqlstate: "42704",
                        message: format!(
                            "constraint \"{name}\" for table \"{table}\" does not exist"
                        ),
                    });
                }
                found
            }
        };
        if chosen.is_empty() && c.conflict_target.is_some() {
            return Err(KuraError::State {
                sqlstate: "42P10",
                message: "there is no unique or exclusion constraint matching the ON CONFLICT specification".into(),
            });
        }
        let keys = chosen
            .iter()
            .map(|k| {
                let positions = k
                    .columns
                    .iter()
                    .map(|c| {
                        schema.index_of(c).ok_or_else(|| {
                            KuraError::Internal(format!("key column {c} of {table} is gone"))
                        })
                    })
                    .collect::<KuraResult<Vec<usize>>>()?;
                Ok((k.name.clone(), positions))
            })
            .collect::<KuraResult<Vec<_>>>()?;
        let seen = vec![HashSet::new(); keys.len()];
        Ok(Some(ConflictSkip { keys, seen }))
    }

    /// Reads the keys `table` holds now (this transaction's rows included).
    pub(crate) fn read_present(
        &mut self,
        ctx: &QueryContext,
        txn: &mut WriteTxn,
        table: &str,
        schema: &Schema,
    ) -> KuraResult<()> {
        let view = txn.snapshot()?;
        for (k, (_, positions)) in self.keys.iter().enumerate() {
            let cols: Vec<String> = positions
                .iter()
                .map(|&p| quote_ident(&schema.columns[p].name))
                .collect();
            let sql = format!(
                "SELECT {} FROM {} WHERE {}",
                cols.join(", "),
                quote_ident(table),
                cols.iter()
                    .map(|c| format!("{c} IS NOT NULL"))
                    .collect::<Vec<_>>()
                    .join(" AND ")
            );
            for b in ctx.run_sql(&sql, None, Some(view.clone()))? {
                for r in 0..b.len() {
                    if let Some(t) = key_text(b.row(r).into_iter()) {
                        self.seen[k].insert(t);
                    }
                }
            }
        }
        Ok(())
    }

    /// The rows of `batch` (in the table's column order) that conflict with
    /// no key seen so far; they are seen from now on.
    pub(crate) fn keep(&mut self, batch: &Batch) -> Batch {
        let b = batch.clone().compact();
        let mut kept: Vec<u32> = Vec::with_capacity(b.len());
        for r in 0..b.len() {
            let texts: Vec<Option<String>> = self
                .keys
                .iter()
                .map(|(_, positions)| {
                    key_text(positions.iter().map(|&p| b.columns[p].get_value(r)))
                })
                .collect();
            let conflict = texts
                .iter()
                .zip(&self.seen)
                .any(|(t, seen)| t.as_ref().is_some_and(|t| seen.contains(t)));
            if conflict {
                continue;
            }
            for (t, seen) in texts.into_iter().zip(self.seen.iter_mut()) {
                if let Some(t) = t {
                    seen.insert(t);
                }
            }
            kept.push(r as u32);
        }
        if kept.len() == b.len() {
            return b;
        }
        Batch::new(b.columns.iter().map(|c| c.take(&kept)).collect())
    }
}
