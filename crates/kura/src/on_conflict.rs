//! `INSERT ... ON CONFLICT [(columns) | ON CONSTRAINT name] DO NOTHING | DO
//! UPDATE SET ... [WHERE ...]`, as PostgreSQL runs it. DO NOTHING: a row whose
//! key (the target's, or without a target every unique key of the table) is
//! already in the table, or in a row this statement inserted before it, is
//! skipped. DO UPDATE (a target required): a row whose key is in the table
//! updates that row instead, its values named `excluded.c`; two rows of the
//! statement with one key are an error (21000). A key with a NULL never
//! conflicts. The keys present are read once per statement; the updates are
//! one rewrite of the table, as an UPDATE is (`dml`).

use std::collections::HashSet;

use kura_common::{Batch, Value};
use kura_storage::rules::TableRules;
use kura_storage::{Schema, WriteTxn};
use sqlparser::ast::{self, ConflictTarget, DoUpdate, OnConflictAction, OnInsert};

use crate::error::{KuraError, KuraResult};
use crate::names::quote_ident;
use crate::query_context::QueryContext;

/// The keys an INSERT's rows are checked against, as table column positions,
/// and what a conflict does.
pub(crate) struct ConflictSkip {
    keys: Vec<(String, Vec<usize>)>,
    /// Each key's values present so far (in the table, then inserted).
    seen: Vec<HashSet<String>>,
    /// DO UPDATE's assignments and condition (`None`: DO NOTHING).
    update: Option<DoUpdate>,
    /// DO UPDATE: the rows (in table column order) that update a row.
    updates: Vec<Vec<Value>>,
    /// DO UPDATE: the keys of the statement's rows so far.
    proposed: HashSet<String>,
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
        let update = match &c.action {
            OnConflictAction::DoNothing => None,
            OnConflictAction::DoUpdate(_) if c.conflict_target.is_none() => {
                return Err(KuraError::Syntax(
                    "ON CONFLICT DO UPDATE requires inference specification or constraint name"
                        .into(),
                ));
            }
            OnConflictAction::DoUpdate(u) => Some(u.clone()),
        };
        let all = rules.map(|r| r.keys.as_slice()).unwrap_or_default();
        let chosen: Vec<_> = match &c.conflict_target {
            None => all.iter().collect(),
            Some(ConflictTarget::Columns(cols)) => {
                let mut want: Vec<String> = cols.iter().map(crate::names::ident).collect();
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
                let name = crate::names::object_name(name);
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
        Ok(Some(ConflictSkip {
            keys,
            seen,
            update,
            updates: Vec::new(),
            proposed: HashSet::new(),
        }))
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

    /// The rows of `batch` (in the table's column order) to insert: DO
    /// NOTHING keeps those that conflict with no key seen so far (they are
    /// seen from now on); DO UPDATE sets aside those whose key is in the
    /// table, to update it (`apply_updates`).
    pub(crate) fn keep(&mut self, batch: &Batch) -> KuraResult<Batch> {
        let b = batch.clone().compact();
        let mut kept: Vec<u32> = Vec::with_capacity(b.len());
        for r in 0..b.len() {
            if self.update.is_some() {
                let positions = &self.keys[0].1;
                let Some(t) = key_text(positions.iter().map(|&p| b.columns[p].get_value(r))) else {
                    kept.push(r as u32);
                    continue;
                };
                if !self.proposed.insert(t.clone()) {
                    return Err(KuraError::State {
                        sqlstate: "21000",
                        message: "ON CONFLICT DO UPDATE command cannot affect row a second time"
                            .into(),
                    });
                }
                if self.seen[0].contains(&t) {
                    self.updates.push(b.row(r));
                } else {
                    kept.push(r as u32);
                }
                continue;
            }
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
            return Ok(b);
        }
        Ok(Batch::new(
            b.columns.iter().map(|c| c.take(&kept)).collect(),
        ))
    }

    /// DO UPDATE: rewrites `table` with the rows set aside by `keep` applied
    /// (the table as `alias` in the SET and WHERE expressions); the rows it
    /// changed.
    pub(crate) fn apply_updates(
        &self,
        ctx: &QueryContext,
        txn: &mut WriteTxn,
        table: &str,
        alias: Option<&str>,
        schema: &Schema,
    ) -> KuraResult<u64> {
        let Some(update) = &self.update else {
            return Ok(0);
        };
        if self.updates.is_empty() {
            return Ok(0);
        }
        let literal = |v: &Value, t: kura_common::DataType| {
            let ty = crate::enforce::sql_type(t);
            match v {
                Value::Null => format!("CAST(NULL AS {ty})"),
                v => format!("CAST('{}' AS {ty})", v.to_string().replace('\'', "''")),
            }
        };
        let rows: Vec<String> = self
            .updates
            .iter()
            .map(|row| {
                let values: Vec<String> = row
                    .iter()
                    .zip(&schema.columns)
                    .map(|(v, c)| literal(v, c.data_type))
                    .collect();
                format!("({})", values.join(", "))
            })
            .collect();
        // The proposed rows are `excluded`, with the table's column names: an
        // unqualified name both have is ambiguous (42702), as in PostgreSQL.
        let names: Vec<String> = schema
            .columns
            .iter()
            .map(|c| quote_ident(&c.name))
            .collect();
        let name = alias.unwrap_or(table);
        let on: Vec<String> = self.keys[0]
            .1
            .iter()
            .map(|&p| {
                let column = quote_ident(&schema.columns[p].name);
                format!("{}.{column} = excluded.{column}", quote_ident(name))
            })
            .collect();
        let relation = format!(
            "{} AS {} LEFT JOIN (VALUES {}) AS excluded({}) ON {}",
            quote_ident(table),
            quote_ident(name),
            rows.join(", "),
            names.join(", "),
            on.join(" AND ")
        );
        // The UPDATE these rows make, only where a row joined (and DO
        // UPDATE's WHERE holds).
        let assignments: Vec<String> = update
            .assignments
            .iter()
            .map(|a| format!("{} = {}", a.target, a.value))
            .collect();
        let key = quote_ident(&schema.columns[self.keys[0].1[0]].name);
        let joined = format!("excluded.{key} IS NOT NULL");
        let hit = match &update.selection {
            Some(cond) => format!("{joined} AND ({cond})"),
            None => joined,
        };
        let sql = format!(
            "UPDATE {} SET {} WHERE {hit}",
            quote_ident(table),
            assignments.join(", ")
        );
        let ast::Statement::Update(u) = crate::parsing::parse(&sql)?
            .pop()
            .ok_or_else(|| KuraError::Internal(format!("not an UPDATE: {sql}")))?
        else {
            return Err(KuraError::Internal(format!("not an UPDATE: {sql}")));
        };
        let source = (relation.as_str(), quote_ident(name));
        let rows = crate::dml::updated_rows(ctx, &u, schema, table, (source.0, &source.1), None)
            .map_err(unplaced)?;
        crate::dml::replace_rows(txn, table, &rows.batches)?;
        Ok(rows.changed)
    }
}

/// An error of the UPDATE made here without its position: it points into
/// that statement's text, not the user's.
fn unplaced(e: KuraError) -> KuraError {
    match e {
        KuraError::Sql(e) if e.pos().is_some() => {
            let text = e.to_string();
            let message = match text.split_once(": ") {
                Some((at, rest)) if at.starts_with("line ") => rest.to_string(),
                _ => text,
            };
            KuraError::State {
                sqlstate: e.sqlstate(),
                message,
            }
        }
        other => other,
    }
}
