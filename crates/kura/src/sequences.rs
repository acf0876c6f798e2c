//! Sequences as SQL sees them: `CREATE SEQUENCE` / `DROP SEQUENCE`, the
//! sequences behind `serial` and identity columns, and the handle through
//! which `nextval` / `currval` / `setval` reach the storage's values (with
//! the session's `currval` state).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use sqlparser::ast::{self, ObjectName, SequenceOptions};

use kura_common::DataType;
use kura_exec::expr::{SeqRef, SequenceSource};
use kura_exec::{ExecError, ExecResult};
use kura_storage::sequence::{Identity, OwnedBy, SequenceDef, SequenceEntry};
use kura_storage::Storage;

use crate::error::{KuraError, KuraResult};
use crate::names::object_name;
use crate::result::QueryResult;
use crate::txn::Tx;

/// What `currval` returns in one session: the value `nextval` (or
/// `setval(s, v, true)`) last gave each sequence, by id.
#[derive(Default)]
pub(crate) struct SessionSequences {
    last: Mutex<HashMap<u64, i64>>,
}

impl SessionSequences {
    fn record(&self, id: u64, value: i64) {
        self.last
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, value);
    }

    fn last(&self, id: u64) -> Option<i64> {
        self.last
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .copied()
    }

    /// `DISCARD SEQUENCES` / `DISCARD ALL`.
    pub(crate) fn discard(&self) {
        self.last.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }
}

/// One sequence as a statement draws on it.
struct SeqHandle {
    storage: Arc<Storage>,
    session: Arc<SessionSequences>,
    id: u64,
    name: String,
}

impl SequenceSource for SeqHandle {
    fn name(&self) -> &str {
        &self.name
    }

    fn next_values(&self, n: usize) -> ExecResult<Vec<i64>> {
        let values = self
            .storage
            .next_sequence_values(self.id, &self.name, n)
            .map_err(ExecError::from)?;
        if let Some(v) = values.last() {
            self.session.record(self.id, *v);
        }
        Ok(values)
    }

    fn current(&self) -> ExecResult<i64> {
        self.session
            .last(self.id)
            .ok_or_else(|| ExecError::Sequence {
                code: "55000",
                message: format!(
                    "currval of sequence \"{}\" is not yet defined in this session",
                    self.name
                ),
            })
    }

    fn set(&self, value: i64, called: bool) -> ExecResult<()> {
        self.storage
            .set_sequence(self.id, &self.name, value, called)
            .map_err(ExecError::from)?;
        if called {
            self.session.record(self.id, value);
        }
        Ok(())
    }
}

/// A handle on sequence `id` for one binding.
pub(crate) fn handle(
    storage: &Arc<Storage>,
    session: &Arc<SessionSequences>,
    def: &SequenceDef,
) -> SeqRef {
    SeqRef(Arc::new(SeqHandle {
        storage: storage.clone(),
        session: session.clone(),
        id: def.id,
        name: def.name.clone(),
    }))
}

/// Sequence `e` as the system catalogs show it, with its value now.
pub(crate) fn info(storage: &Storage, e: &SequenceEntry) -> kura_sql::SequenceInfo {
    let d = &e.def;
    let state = storage.sequence_state(d.id).unwrap_or(e.state);
    kura_sql::SequenceInfo {
        name: d.name.clone(),
        type_name: match d.type_name.as_str() {
            "smallint" => "smallint",
            "integer" => "integer",
            _ => "bigint",
        },
        start: d.start,
        increment: d.increment,
        min: d.min,
        max: d.max,
        cycle: d.cycle,
        last_value: state.called.then_some(state.last),
        owned_by: d
            .owned_by
            .as_ref()
            .map(|o| (o.table.clone(), o.column.clone())),
        identity: d.identity.map(|i| match i {
            Identity::Always => 'a',
            Identity::ByDefault => 'd',
        }),
    }
}

/// The bounds of a sequence's type.
fn type_bounds(t: &ast::DataType) -> KuraResult<(DataType, i64, i64)> {
    use ast::DataType as T;
    Ok(match t {
        T::SmallInt(_) | T::Int2(_) => (DataType::SmallInt, i16::MIN as i64, i16::MAX as i64),
        T::Int(_) | T::Integer(_) | T::Int4(_) => {
            (DataType::Integer, i32::MIN as i64, i32::MAX as i64)
        }
        T::BigInt(_) | T::Int8(_) => (DataType::BigInt, i64::MIN, i64::MAX),
        _ => {
            return Err(KuraError::Invalid(
                "sequence type must be smallint, integer, or bigint".into(),
            ))
        }
    })
}

/// The column type and the range of its sequence's type for a `serial`
/// type name, if it is one.
pub(crate) fn serial_type(t: &ast::DataType) -> Option<(DataType, i64, i64)> {
    let ast::DataType::Custom(name, mods) = t else {
        return None;
    };
    if !mods.is_empty() {
        return None;
    }
    match name.to_string().to_ascii_lowercase().as_str() {
        "smallserial" | "serial2" => Some((DataType::SmallInt, i16::MIN as i64, i16::MAX as i64)),
        "serial" | "serial4" => Some((DataType::Integer, i32::MIN as i64, i32::MAX as i64)),
        "bigserial" | "serial8" => Some((DataType::BigInt, i64::MIN, i64::MAX)),
        _ => None,
    }
}

/// The range of an identity column's type (22023 unless an integer type).
pub(crate) fn identity_type(t: &ast::DataType) -> KuraResult<(DataType, i64, i64)> {
    type_bounds(t).map_err(|_| {
        KuraError::Invalid(format!(
            "identity column type must be smallint, integer, or bigint (not {t})"
        ))
    })
}

/// `nextval('name'::regclass)`, as a column default names its sequence.
pub(crate) fn nextval_sql(name: &str) -> String {
    let simple = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    let quoted = if simple {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    };
    format!("nextval('{}'::regclass)", quoted.replace('\'', "''"))
}

/// The sequences a DEFAULT expression draws on (`nextval('s')`, ...): such
/// a default is computed per row, and keeps its sequence from being dropped.
pub(crate) fn sequences_used(sql: &str) -> Vec<String> {
    use std::ops::ControlFlow;
    let Ok(stmts) = crate::parsing::parse(&format!("SELECT {sql}")) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let _ = ast::visit_expressions(&stmts, |e| {
        if let ast::Expr::Function(f) = e {
            let fname = f.name.to_string().to_ascii_lowercase();
            if matches!(fname.as_str(), "nextval" | "currval" | "setval") {
                if let ast::FunctionArguments::List(l) = &f.args {
                    if let Some(ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(a))) =
                        l.args.first()
                    {
                        found.push(name_argument(a));
                    }
                }
            }
        }
        ControlFlow::<()>::Continue(())
    });
    found
}

/// The sequence name of `'s'` or `'s'::regclass` ("" when not a constant).
fn name_argument(a: &ast::Expr) -> String {
    let inner = match a {
        ast::Expr::Cast { expr, .. } => expr.as_ref(),
        other => other,
    };
    match inner {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) => kura_sql::binder::relation_name(s),
            _ => String::new(),
        },
        _ => String::new(),
    }
}

/// An integer constant of a sequence option (`-5`, `+3`, `100`).
fn constant(e: &ast::Expr) -> KuraResult<i64> {
    let bad = || KuraError::Invalid(format!("sequence option {e} is not an integer constant"));
    match e {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => n.parse::<i64>().map_err(|_| bad()),
            _ => Err(bad()),
        },
        ast::Expr::UnaryOp {
            op: ast::UnaryOperator::Minus,
            expr,
        } => constant(expr)?.checked_neg().ok_or_else(bad),
        ast::Expr::UnaryOp {
            op: ast::UnaryOperator::Plus,
            expr,
        } => constant(expr),
        ast::Expr::Nested(x) => constant(x),
        _ => Err(bad()),
    }
}

/// A sequence definition from its type (`AS ...`, default BIGINT) and
/// options, with PostgreSQL's defaults and checks (22023).
pub(crate) fn definition(
    name: &str,
    type_range: (DataType, i64, i64),
    options: &[SequenceOptions],
    owned_by: Option<OwnedBy>,
    identity: Option<Identity>,
) -> KuraResult<SequenceDef> {
    let (data_type, type_min, type_max) = type_range;
    let mut increment = 1i64;
    let (mut min, mut max, mut start) = (None, None, None);
    let mut cycle = false;
    for o in options {
        match o {
            SequenceOptions::IncrementBy(e, _) => increment = constant(e)?,
            SequenceOptions::MinValue(e) => min = e.as_ref().map(constant).transpose()?,
            SequenceOptions::MaxValue(e) => max = e.as_ref().map(constant).transpose()?,
            SequenceOptions::StartWith(e, _) => start = Some(constant(e)?),
            // The cache only changes how values are handed to sessions, not
            // which: kura hands them out one by one (as CACHE 1 does).
            SequenceOptions::Cache(e) => {
                if constant(e)? < 1 {
                    return Err(KuraError::Invalid(format!(
                        "CACHE ({e}) must be greater than zero"
                    )));
                }
            }
            SequenceOptions::Cycle(no) => cycle = !*no,
        }
    }
    if increment == 0 {
        return Err(KuraError::Invalid("INCREMENT must not be zero".into()));
    }
    let min = min.unwrap_or(if increment > 0 { 1 } else { type_min });
    let max = max.unwrap_or(if increment > 0 { type_max } else { -1 });
    let type_name = match data_type {
        DataType::BigInt => "bigint",
        DataType::SmallInt => "smallint",
        _ => "integer",
    };
    for (what, v) in [("MINVALUE", min), ("MAXVALUE", max)] {
        if v < type_min || v > type_max {
            return Err(KuraError::Invalid(format!(
                "{what} ({v}) is out of range for sequence data type {type_name}"
            )));
        }
    }
    if min >= max {
        return Err(KuraError::Invalid(format!(
            "MINVALUE ({min}) must be less than MAXVALUE ({max})"
        )));
    }
    let start = start.unwrap_or(if increment > 0 { min } else { max });
    if start < min {
        return Err(KuraError::Invalid(format!(
            "START value ({start}) cannot be less than MINVALUE ({min})"
        )));
    }
    if start > max {
        return Err(KuraError::Invalid(format!(
            "START value ({start}) cannot be greater than MAXVALUE ({max})"
        )));
    }
    Ok(SequenceDef {
        name: name.to_string(),
        id: 0,
        // A smallint sequence is stored as INTEGER with the type name
        // `smallint`, as it was before kura had SMALLINT: its catalog entry
        // stays readable by builds that predate the type.
        data_type: match data_type {
            DataType::SmallInt => DataType::Integer,
            t => t,
        },
        type_name: type_name.to_string(),
        start,
        increment,
        min,
        max,
        cycle,
        owned_by,
        identity,
    })
}

/// `CREATE SEQUENCE [IF NOT EXISTS] name [AS type] [options] [OWNED BY t.c]`.
pub(crate) fn create_sequence(tx: &Tx, stmt: &ast::Statement) -> KuraResult<QueryResult> {
    let ast::Statement::CreateSequence {
        temporary,
        if_not_exists,
        name,
        data_type,
        sequence_options,
        owned_by,
    } = stmt
    else {
        return Err(KuraError::Internal("not CREATE SEQUENCE".into()));
    };
    if *temporary {
        return Err(KuraError::Unsupported("CREATE TEMPORARY SEQUENCE".into()));
    }
    let seq_name = object_name(name);
    let range = match data_type {
        Some(t) => type_bounds(t)?,
        None => (DataType::BigInt, i64::MIN, i64::MAX),
    };
    let owner = owned_by
        .as_ref()
        .map(owned_by_column)
        .transpose()?
        .flatten();
    let def = definition(&seq_name, range, sequence_options, owner, None)?;
    tx.write(|txn| {
        if *if_not_exists && txn.sequence(&seq_name).is_some() {
            return Ok(());
        }
        if let Some(o) = &def.owned_by {
            let schema = txn.schema(&o.table).ok_or_else(|| {
                KuraError::Storage(kura_storage::StorageError::NoSuchTable(o.table.clone()))
            })?;
            if schema.index_of(&o.column).is_none() {
                return Err(KuraError::UndefinedColumn(format!(
                    "column \"{}\" of relation \"{}\" does not exist",
                    o.column, o.table
                )));
            }
        }
        txn.create_sequence(def.clone())?;
        Ok(())
    })?;
    Ok(QueryResult::command("CREATE SEQUENCE"))
}

/// `OWNED BY table.column` (`OWNED BY NONE` is no owner).
fn owned_by_column(n: &ObjectName) -> KuraResult<Option<OwnedBy>> {
    let parts: Vec<String> =
        n.0.iter()
            .map(|p| match p.as_ident() {
                Some(id) if id.quote_style.is_some() => id.value.clone(),
                Some(id) => id.value.to_ascii_lowercase(),
                None => p.to_string(),
            })
            .collect();
    match parts.as_slice() {
        [none] if none == "none" => Ok(None),
        [.., table, column] => Ok(Some(OwnedBy {
            table: table.clone(),
            column: column.clone(),
        })),
        _ => Err(KuraError::Syntax(
            "invalid OWNED BY option: specify OWNED BY table.column or OWNED BY NONE".into(),
        )),
    }
}

/// `DROP SEQUENCE [IF EXISTS] a, b [RESTRICT]`.
pub(crate) fn drop_sequences(
    tx: &Tx,
    if_exists: bool,
    names: &[ObjectName],
    cascade: bool,
) -> KuraResult<QueryResult> {
    if cascade {
        return Err(KuraError::Unsupported(
            "DROP SEQUENCE … CASCADE (drop the defaults that use it first)".into(),
        ));
    }
    tx.write(|txn| {
        for n in names {
            let name = object_name(n);
            if txn.sequence(&name).is_none() && if_exists {
                continue;
            }
            // A default that draws on it (other than its owner's, which
            // storage names) keeps it, as in PostgreSQL.
            let user = txn.all_rules().find_map(|r| {
                r.defaults
                    .iter()
                    .find(|d| sequences_used(&d.sql).contains(&name))
                    .map(|d| (r.table.clone(), d.column.clone()))
            });
            let owned = txn
                .sequence(&name)
                .is_some_and(|s| s.def.owned_by.is_some());
            if let (Some((table, column)), false) = (user, owned) {
                return Err(KuraError::Storage(
                    kura_storage::StorageError::DependentObjects(format!(
                        "cannot drop sequence {name} because default value for column \
                         {column} of table {table} depends on it"
                    )),
                ));
            }
            txn.drop_sequence(&name)?;
        }
        Ok(())
    })?;
    Ok(QueryResult::command("DROP SEQUENCE"))
}
