//! The binder: resolves names against the catalog and scopes, types every
//! expression, and builds the logical plan of a query. Subqueries are planned here
//! too, directly as joins (semi/anti/mark/single), decorrelated by pulling their
//! correlated predicates up into the join condition (see `subquery`).

mod aggregate_fn;
mod array;
mod array_subquery;
mod binary_fn;
mod bitwise;
mod clauses;
mod expr;
mod file_fn;
pub(crate) mod functions;
mod grouping_sets;
mod interval_fn;
mod json_fn;
mod math_fn;
mod query;
mod record;
mod sample;
mod select_srf;
mod sequence_fn;
pub use sequence_fn::relation_name;
mod session_fn;
mod setop;
mod subquery;
mod system;
mod table_fn;
mod text_fn;
pub mod types;
mod unnest;
mod vocab;
mod window;
mod window_frame;

use std::collections::HashMap;
use std::rc::Rc;

use kura_common::{DataType, Value};
use kura_exec::AggCall;
use sqlparser::ast;

use crate::catalog::CatalogProvider;
use crate::error::{did_you_mean, Pos, SqlError, SqlResult};
use crate::logical::{ColId, Columns, Logical};

/// One column visible in a scope.
#[derive(Debug, Clone)]
pub struct ScopeCol {
    pub qualifier: Option<String>,
    pub name: String,
    pub id: ColId,
    pub ty: DataType,
    /// A join's input column that `JOIN ... USING` merged into one output column: still
    /// reachable by its table's name (`a.x`, `a.*`), but not as `x` nor by `*`.
    pub qualified_only: bool,
}

/// The columns a FROM clause makes visible.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    pub cols: Vec<ScopeCol>,
}

impl Scope {
    fn lookup(&self, qualifier: Option<&str>, name: &str) -> Vec<&ScopeCol> {
        self.cols
            .iter()
            .filter(|c| {
                c.name == name
                    && match qualifier {
                        None => !c.qualified_only,
                        Some(q) => c.qualifier.as_deref() == Some(q),
                    }
            })
            .collect()
    }
}

/// A bound query: its plan and its named output columns.
pub struct BoundQuery {
    pub plan: Logical,
    pub out: Vec<(String, ColId)>,
}

/// Parameter values (`$1`…) or, while describing, their inferred types.
#[derive(Debug, Default, Clone)]
pub struct Params {
    pub values: Option<Vec<Value>>,
    pub types: Vec<Option<DataType>>,
}

/// Aggregates found while binding an aggregating SELECT.
#[derive(Default)]
pub struct AggCollector {
    pub aggs: Vec<(AggCall, ColId)>,
    /// `grouping(...)` calls: their placeholder column and bound arguments.
    pub groupings: Vec<(ColId, Vec<kura_exec::expr::PhysExpr>, crate::error::Pos)>,
}

/// A subquery join waiting to be attached on top of the plan its expression reads.
pub struct Pending {
    pub join_type: kura_exec::JoinType,
    pub plan: Logical,
    pub on: Vec<kura_exec::expr::PhysExpr>,
    pub mark: Option<ColId>,
    /// `plan` is still correlated: it is unnested against the plan it attaches to,
    /// whose domain equalities then lead `on`.
    pub unnest: bool,
}

/// Binds statements of one query.
pub struct Binder<'a> {
    pub catalog: &'a dyn CatalogProvider,
    pub cols: Columns,
    pub params: Params,
    /// The CTEs in scope by name, innermost last. A reference binds its CTE with
    /// only the CTEs before it in scope: the later ones are split off and put
    /// back, not copied (copying the list at each of a chain's references made
    /// a chain of 10,000 CTEs take gigabytes).
    ctes: Vec<(String, Rc<ast::Cte>)>,
    /// How deeply queries nest (subqueries, and CTEs and views inlined).
    query_depth: usize,
    depth: usize,
    /// How deep the expression being bound is nested (see [`MAX_EXPR_DEPTH`]).
    expr_depth: usize,
    /// COUNT aggregates that decorrelation turned into per-key groups: a key
    /// without rows yields no group, so the outer side must read NULL as 0.
    count_ids: std::collections::HashSet<ColId>,
    /// The catalog as the system relations show it, taken when first needed.
    system: Option<Rc<crate::system::Snapshot>>,
    /// Set while typing views for that snapshot (see `system::view_columns`).
    building_system: bool,
    /// Columns read from the system catalogs' array columns, NULL in every row.
    null_arrays: std::collections::HashSet<ColId>,
    /// Every table the statement names, looked up once: all its references
    /// then share one source, which is how the planner recognises equal
    /// subplans (a view or CTE used twice) to compute them once.
    tables: HashMap<String, std::sync::Arc<dyn kura_exec::TableSource>>,
    /// The statement's random base for TABLESAMPLE without REPEATABLE, drawn
    /// at the first such clause (see `sample`).
    sample_seed: Option<u64>,
    /// `OFFSET m FETCH FIRST n ROWS WITH TIES` of the query whose SELECT is
    /// bound next: (m, n), taken by that SELECT (see `query::with_ties`).
    with_ties: Option<(usize, usize)>,
    /// Columns holding records (in their text form, see `kura_common::record`)
    /// and the names and types of their fields: `(keys).x` reads one.
    records: HashMap<ColId, Vec<(String, DataType)>>,
}

/// Whether a scope column is the binder's own (a set-returning item's value,
/// named with a leading U+0001 that no name kura makes starts with): `*`
/// leaves it out.
pub(super) fn is_hidden(name: &str) -> bool {
    name.starts_with('\u{1}')
}

/// An identifier as PostgreSQL names it: quoted, exactly as written; unquoted,
/// with its ASCII letters lower-cased (PostgreSQL's `downcase_identifier`). Every
/// name — tables, columns, sequences, statements — is folded here, then compared exactly.
pub fn norm(id: &ast::Ident) -> String {
    if id.quote_style.is_some() {
        id.value.clone()
    } else {
        id.value.to_ascii_lowercase()
    }
}

pub fn pos_of(id: &ast::Ident) -> Pos {
    Pos::from_span(id.span)
}

fn object_name(name: &ast::ObjectName) -> SqlResult<(String, Pos)> {
    match name.0.last() {
        Some(ast::ObjectNamePart::Identifier(id)) => Ok((norm(id), pos_of(id))),
        _ => Err(SqlError::Syntax(format!("invalid name {name}"))),
    }
}

pub use kura_exec::expr::pg::{quote_ident, RESERVED};

/// The unquoted reserved word a one-part name consists of, if it is one.
fn reserved_word(name: &ast::ObjectName) -> Option<String> {
    match name.0.as_slice() {
        [ast::ObjectNamePart::Identifier(id)]
            if id.quote_style.is_none() && RESERVED.contains(&id.value.to_lowercase().as_str()) =>
        {
            Some(id.value.clone())
        }
        _ => None,
    }
}

impl<'a> Binder<'a> {
    pub fn new(catalog: &'a dyn CatalogProvider, params: Params) -> Binder<'a> {
        Binder {
            catalog,
            cols: Columns::default(),
            params,
            ctes: Vec::new(),
            query_depth: 0,
            depth: 0,
            expr_depth: 0,
            count_ids: Default::default(),
            system: None,
            building_system: false,
            null_arrays: Default::default(),
            records: HashMap::new(),
            tables: HashMap::new(),
            sample_seed: None,
            with_ties: None,
        }
    }

    /// The catalog's table `name`, the same source for every reference.
    fn table(&mut self, name: &str) -> Option<std::sync::Arc<dyn kura_exec::TableSource>> {
        if let Some(t) = self.tables.get(name) {
            return Some(t.clone());
        }
        let t = self.catalog.table(name)?;
        self.tables.insert(name.to_string(), t.clone());
        Some(t)
    }

    /// Binds a relation name used in FROM: a CTE, a view or a table.
    fn bind_relation(
        &mut self,
        name: &ast::ObjectName,
        alias: Option<&ast::TableAlias>,
    ) -> SqlResult<(Logical, Scope)> {
        let (rel, pos) = object_name(name)?;
        let qualifier = alias.map_or(rel.clone(), |a| norm(&a.name));
        if Self::names_system_schema(name) {
            if let Some(table) = self.system_relation(name, false) {
                let (plan, scope) = self.scan_scope(table, &qualifier, alias, false)?;
                self.note_null_arrays(&plan, &scope);
                return Ok((plan, scope));
            }
        }
        if let Some(level) = self.ctes.iter().rposition(|(n, _)| *n == rel) {
            let cte = self.ctes[level].1.clone();
            // Inlined per reference so each use gets its own column ids.
            let later = self.ctes.split_off(level);
            let q = self.bind_query(&cte.query, &[]);
            self.ctes.extend(later);
            let q = q?;
            let names: Vec<String> = cte.alias.columns.iter().map(|c| norm(&c.name)).collect();
            return self.derived_scope(q, &qualifier, &names, alias);
        }
        if let Some(view) = self.catalog.view(&rel) {
            if self.depth > 16 {
                return Err(SqlError::unsupported(
                    format!("view nesting deeper than 16 at {rel}"),
                    pos,
                ));
            }
            let stmts = sqlparser::parser::Parser::parse_sql(
                &sqlparser::dialect::PostgreSqlDialect {},
                &view.sql,
            )
            .map_err(|e| SqlError::Syntax(format!("in view {rel}: {e}")))?;
            let Some(ast::Statement::Query(q)) = stmts.first() else {
                return Err(SqlError::Internal(format!("view {rel} is not a query")));
            };
            self.depth += 1;
            let saved = std::mem::take(&mut self.ctes);
            let bound = self.bind_query(q, &[]);
            self.ctes = saved;
            self.depth -= 1;
            return self.derived_scope(bound?, &qualifier, &view.columns, alias);
        }
        let table = self
            .table(&rel)
            .or_else(|| self.system_relation(name, true));
        let Some(table) = table else {
            if let Some(format) = crate::catalog::FileFormat::of_name(&rel) {
                // `FROM "f.parquet"`: a name no relation has, with a file extension.
                return self.bind_file(&format, std::slice::from_ref(&rel), &qualifier, alias, pos);
            }
            if let Some(word) = reserved_word(name) {
                // The parser reads `SELECT FROM WHERE` as a table named "where";
                // PostgreSQL rejects the reserved word as a syntax error.
                return Err(SqlError::Syntax(format!(
                    "at or near \"{word}\" (line {}, column {})",
                    pos.line, pos.column
                )));
            }
            let mut names = self.catalog.relation_names();
            names.extend(self.ctes.iter().map(|(n, _)| n.clone()));
            let suggestion = did_you_mean(&rel, names.iter().map(|s| s.as_str()));
            return Err(SqlError::UnknownTable {
                name: rel,
                pos,
                suggestion,
            });
        };
        let (plan, scope) = self.scan_scope(table, &qualifier, alias, false)?;
        self.note_null_arrays(&plan, &scope);
        Ok((plan, scope))
    }

    /// The scan of a table and the scope it makes visible. A table's columns are
    /// named exactly as created (PostgreSQL: `"Odd Name"` stays so); a file's columns
    /// are folded to lower case (`fold_names`), so a header's `Name` is reached as
    /// `name`, quoted or not.
    fn scan_scope(
        &mut self,
        table: std::sync::Arc<dyn kura_exec::TableSource>,
        qualifier: &str,
        alias: Option<&ast::TableAlias>,
        fold_names: bool,
    ) -> SqlResult<(Logical, Scope)> {
        let renames: Vec<String> = alias.map_or(Vec::new(), |a| {
            a.columns.iter().map(|c| norm(&c.name)).collect()
        });
        let mut cols = Vec::new();
        let mut scope = Scope::default();
        for (i, c) in table.columns().iter().enumerate() {
            let name = renames.get(i).cloned().unwrap_or_else(|| match fold_names {
                true => c.name.to_lowercase(),
                false => c.name.clone(),
            });
            let id = self.cols.add(&name, c.data_type);
            cols.push((i, id));
            scope.cols.push(ScopeCol {
                qualifier: Some(qualifier.to_string()),
                name,
                id,
                ty: c.data_type,
                qualified_only: false,
            });
        }
        Ok((
            Logical::Scan {
                table,
                cols,
                filters: Vec::new(),
            },
            scope,
        ))
    }

    /// Scope of a derived table (subquery, CTE or view) with optional column renames.
    fn derived_scope(
        &mut self,
        q: BoundQuery,
        qualifier: &str,
        names: &[String],
        alias: Option<&ast::TableAlias>,
    ) -> SqlResult<(Logical, Scope)> {
        let alias_names: Vec<String> = alias.map_or(Vec::new(), |a| {
            a.columns.iter().map(|c| norm(&c.name)).collect()
        });
        let mut scope = Scope::default();
        for (i, (name, id)) in q.out.iter().enumerate() {
            let n = alias_names
                .get(i)
                .or(names.get(i))
                .cloned()
                .unwrap_or_else(|| name.clone());
            scope.cols.push(ScopeCol {
                qualifier: Some(qualifier.to_string()),
                name: n,
                id: *id,
                ty: self.cols.ty(*id),
                qualified_only: false,
            });
        }
        Ok((q.plan, scope))
    }

    /// Parameter types inferred so far (`$n` never typed defaults to text).
    pub fn param_types(&self) -> Vec<DataType> {
        self.params
            .types
            .iter()
            .map(|t| t.unwrap_or(DataType::Varchar(None)))
            .collect()
    }
}
