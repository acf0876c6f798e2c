//! `FROM t TABLESAMPLE SYSTEM | BERNOULLI (p) [REPEATABLE (seed)]`: the clause
//! checked as PostgreSQL checks it and the table wrapped with its sample; every
//! other sampling syntax sqlparser accepts is refused, never ignored.

use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

use kura_common::{Batch, DataType, Value};
use kura_exec::sample::{check_percent, SampleMethod, SampledTable, TableSample};
use sqlparser::ast::{self, Spanned};

use super::types::coerce;
use super::vocab::ExprCtx;
use super::{object_name, Binder, Scope};
use crate::error::{Pos, SqlError, SqlResult};
use crate::logical::Logical;

fn refuse<T>(what: impl Into<String>, pos: Pos) -> SqlResult<T> {
    Err(SqlError::unsupported(what, pos))
}

fn bad_argument(message: &str, pos: Pos, sqlstate: &'static str) -> SqlError {
    SqlError::TableSample {
        message: message.into(),
        pos,
        sqlstate,
    }
}

impl Binder<'_> {
    /// A base table named in FROM with a TABLESAMPLE clause.
    pub(super) fn bind_sampled_relation(
        &mut self,
        name: &ast::ObjectName,
        alias: Option<&ast::TableAlias>,
        kind: &ast::TableSampleKind,
    ) -> SqlResult<(Logical, Scope)> {
        let (rel, pos) = object_name(name)?;
        let sample = match kind {
            ast::TableSampleKind::BeforeTableAlias(s)
            | ast::TableSampleKind::AfterTableAlias(s) => s,
        };
        let system = Self::names_system_schema(name);
        let cte = self.ctes.iter().any(|(n, _)| *n == rel);
        if !system && (cte || self.catalog.view(&rel).is_some()) {
            return refuse(
                "TABLESAMPLE clause can only be applied to tables and materialized views; \
                 TABLESAMPLE on a view or WITH query",
                pos,
            );
        }
        let table = system
            .then(|| self.system_relation(name, false))
            .flatten()
            .or_else(|| self.table(&rel))
            .or_else(|| self.system_relation(name, true));
        let Some(table) = table else {
            // The same "does not exist" error (with its hint) as without a sample.
            return self.bind_relation(name, alias);
        };
        let sample = self.table_sample(sample, pos)?;
        let qualifier = alias.map_or(rel, |a| super::norm(&a.name));
        let sampled: Arc<dyn kura_exec::TableSource> = Arc::new(SampledTable::new(table, sample));
        let (plan, scope) = self.scan_scope(sampled, &qualifier, alias, false)?;
        self.note_null_arrays(&plan, &scope);
        Ok((plan, scope))
    }

    /// The sample a clause asks for, or why kura refuses it.
    fn table_sample(&mut self, s: &ast::TableSample, pos: Pos) -> SqlResult<TableSample> {
        if s.modifier != ast::TableSampleModifier::TableSample {
            return refuse(format!("{}", s.modifier), pos);
        }
        let method = match s.name {
            Some(ast::TableSampleMethod::Bernoulli) => SampleMethod::Bernoulli,
            Some(ast::TableSampleMethod::System) => SampleMethod::System,
            Some(other) => return refuse(format!("tablesample method {other}"), pos),
            None => return refuse("TABLESAMPLE without a method", pos),
        };
        if s.bucket.is_some() {
            return refuse("TABLESAMPLE BUCKET", pos);
        }
        if let Some(o) = &s.offset {
            return refuse("TABLESAMPLE OFFSET", Pos::from_span(o.span()));
        }
        let Some(q) = &s.quantity else {
            return refuse("TABLESAMPLE without a percentage", pos);
        };
        if let Some(unit) = q.unit {
            return refuse(format!("TABLESAMPLE quantity in {unit}"), pos);
        }
        if !q.parenthesized {
            return refuse("TABLESAMPLE quantity without parentheses", pos);
        }
        let qpos = Pos::from_span(q.value.span());
        let percent = self.sample_argument(&q.value, qpos)?;
        let percent = check_percent(&percent).map_err(|m| bad_argument(m, qpos, "2202H"))?;
        let (seed, repeatable) = match &s.seed {
            None => (self.statement_seed(s, pos), false),
            Some(seed) if seed.modifier != ast::TableSampleSeedModifier::Repeatable => {
                return refuse(format!("TABLESAMPLE {}", seed.modifier), pos)
            }
            Some(seed) => {
                let spos = Pos::from_span(seed.value.span);
                let v = match &seed.value.value {
                    ast::Value::Number(n, _) => n.parse::<f64>().ok(),
                    ast::Value::Null => None,
                    other => {
                        return Err(SqlError::mismatch(
                            format!("REPEATABLE argument {other} is not a number"),
                            spos,
                        ))
                    }
                };
                let Some(v) = v else {
                    return Err(bad_argument(
                        "TABLESAMPLE REPEATABLE parameter cannot be null",
                        spos,
                        "2202G",
                    ));
                };
                // Equal seeds as PostgreSQL compares them (as float8): 1 and 1.0 agree.
                ((v + 0.0).to_bits(), true)
            }
        };
        Ok(TableSample {
            method,
            percent,
            seed,
            repeatable,
        })
    }

    /// The percentage: a constant expression of a numeric type (or a string
    /// literal, PostgreSQL's unknown), evaluated once as DOUBLE.
    fn sample_argument(&mut self, e: &ast::Expr, pos: Pos) -> SqlResult<Value> {
        let scope = Scope::default();
        let mut cx = ExprCtx::new(&scope, &[]);
        let bound = self.bind_expr(e, &mut cx)?;
        let ty = bound.data_type();
        let literal_text =
            matches!(&bound, kura_exec::expr::PhysExpr::Literal { .. }) && ty.is_text();
        if !(ty.is_numeric() || literal_text || super::types::is_null_literal(&bound)) {
            return Err(SqlError::mismatch(
                format!("argument of TABLESAMPLE must be type real, not type {ty}"),
                pos,
            ));
        }
        let d = coerce(bound, DataType::Double, pos)?;
        let v = d
            .eval(&Batch::with_rows(1))
            .map_err(|err| SqlError::InvalidValue {
                message: err.to_string(),
                pos,
            })?;
        Ok(v.get_value(0))
    }
}

impl Binder<'_> {
    /// The seed of a clause without REPEATABLE: random per statement, and
    /// within it fixed by where the clause stands, so a WITH query bound once
    /// per reference samples the same rows at each (PostgreSQL computes it
    /// once), while two clauses sample independently.
    fn statement_seed(&mut self, s: &ast::TableSample, pos: Pos) -> u64 {
        let base = *self.sample_seed.get_or_insert_with(random_seed);
        let mut h = std::hash::DefaultHasher::new();
        h.write_u64(base);
        h.write(s.to_string().as_bytes());
        h.write_u64(pos.line);
        h.write_u64(pos.column);
        h.finish()
    }
}

/// A random number, different per call.
fn random_seed() -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}
