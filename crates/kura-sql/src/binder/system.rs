//! Binding what clients' catalog queries use beyond ordinary SQL: the system
//! relations (`pg_catalog.pg_class` ...), the catalog functions (`format_type`,
//! `pg_get_indexdef`, `pg_table_is_visible` ...), `::regclass` / `::regtype`
//! casts, `~` regular expressions with `OPERATOR(pg_catalog.~)`, and
//! `COLLATE pg_catalog.default`. Functions that need the catalog's contents
//! become CASE expressions over the [`Snapshot`] taken for the statement.

use std::rc::Rc;
use std::sync::Arc;

use kura_common::{DataType, Value};
use kura_exec::expr::{BinaryOp, PhysExpr, ScalarFunc};
use kura_exec::{SourceColumn, TableSource};
use sqlparser::ast;

use super::expr::ExprCtx;
use super::types::{coerce, fold, is_null_literal, is_untyped_null};
use super::{norm, Binder, Params};
use crate::error::{Pos, SqlError, SqlResult};
use crate::system::{RelKind, Snapshot, SnapshotInput, OWNER, OWNER_OID};

const TEXT: DataType = DataType::Varchar(None);

/// Schemas whose relations are the system catalogs.
const SYSTEM_SCHEMAS: &[&str] = &["pg_catalog", "information_schema"];

fn text_literal(s: &str) -> PhysExpr {
    PhysExpr::literal(Value::Text(s.to_string()), TEXT)
}

fn typed_null(t: DataType) -> PhysExpr {
    PhysExpr::Cast {
        expr: Box::new(PhysExpr::literal(Value::Null, t)),
        to: t,
    }
}

/// `pg_get_serial_sequence(table, column)` for arguments known only per row:
/// `CASE WHEN table IN (t, public.t) AND column = c THEN seq ... END` over the
/// sequences `owned` (table, column, qualified sequence name).
fn serial_sequence_of(
    table: PhysExpr,
    column: PhysExpr,
    owned: Vec<(String, String, String)>,
) -> PhysExpr {
    use kura_exec::expr::BinaryOp;
    let whens: Vec<(PhysExpr, PhysExpr)> = owned
        .into_iter()
        .map(|(t, c, seq)| {
            let names = vec![Value::Text(format!("public.{t}")), Value::Text(t)];
            let cond = PhysExpr::Binary {
                op: BinaryOp::And,
                left: Box::new(PhysExpr::InList {
                    expr: Box::new(table.clone()),
                    list: names,
                    negated: false,
                }),
                right: Box::new(PhysExpr::Binary {
                    op: BinaryOp::Eq,
                    left: Box::new(column.clone()),
                    right: Box::new(PhysExpr::literal(Value::Text(c), TEXT)),
                    data_type: DataType::Boolean,
                }),
                data_type: DataType::Boolean,
            };
            (cond, PhysExpr::literal(Value::Text(seq), TEXT))
        })
        .collect();
    if whens.is_empty() {
        return typed_null(TEXT);
    }
    PhysExpr::Case {
        whens,
        otherwise: None,
        data_type: TEXT,
    }
}

/// `CASE WHEN key = k1 THEN v1 ... END`: a lookup in a table known when binding.
fn lookup(key: PhysExpr, pairs: Vec<(Value, Value)>, t: DataType) -> PhysExpr {
    let kt = key.data_type();
    let whens: Vec<(PhysExpr, PhysExpr)> = pairs
        .into_iter()
        .map(|(k, v)| {
            (
                PhysExpr::Binary {
                    op: kura_exec::expr::BinaryOp::Eq,
                    left: Box::new(key.clone()),
                    right: Box::new(PhysExpr::literal(k, kt)),
                    data_type: DataType::Boolean,
                },
                PhysExpr::literal(v, t),
            )
        })
        .collect();
    if whens.is_empty() {
        return typed_null(t);
    }
    fold(PhysExpr::Case {
        whens,
        otherwise: None,
        data_type: t,
    })
}

/// `x IS NOT NULL`: true for every object (there is one schema on the path,
/// one role with every privilege), NULL for a NULL argument as in PostgreSQL.
fn true_unless_null(x: PhysExpr) -> PhysExpr {
    PhysExpr::Case {
        whens: vec![(
            PhysExpr::IsNull {
                expr: Box::new(x),
                negated: false,
            },
            PhysExpr::literal(Value::Null, DataType::Boolean),
        )],
        otherwise: Some(Box::new(PhysExpr::literal(
            Value::Boolean(true),
            DataType::Boolean,
        ))),
        data_type: DataType::Boolean,
    }
}

/// The unqualified name of a function or type, if it is unqualified or in
/// `pg_catalog`.
fn catalog_name(name: &ast::ObjectName) -> Option<String> {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| match p {
            ast::ObjectNamePart::Identifier(id) => Some(norm(id)),
            _ => None,
        })
        .collect::<Option<_>>()?;
    match parts.as_slice() {
        [n] => Some(n.clone()),
        [s, n] if s == "pg_catalog" => Some(n.clone()),
        _ => None,
    }
}

/// `pg_typeof(x)`: the name of `x`'s type as PostgreSQL prints a `regtype`
/// (`smallint`, `numeric`; without modifiers), as text. A NULL written
/// without a type is `unknown`, as in PostgreSQL.
fn type_name_of(x: &PhysExpr) -> String {
    if is_untyped_null(x) {
        return "unknown".into();
    }
    let (oid, _) = kura_exec::expr::pg::pg_type_of(x.data_type());
    kura_exec::expr::pg::format_type(oid.into(), None).unwrap_or_else(|| "unknown".into())
}

/// A type named by `::name` that kura stores as one of its own.
fn plain_type(name: &str) -> Option<DataType> {
    Some(match name {
        "int2" | "smallint" => DataType::SmallInt,
        "int4" | "int" | "integer" => DataType::Integer,
        "int8" | "bigint" => DataType::BigInt,
        "float4" | "float8" | "real" => DataType::Double,
        "bool" | "boolean" => DataType::Boolean,
        "text" | "name" | "varchar" | "bpchar" | "char" => TEXT,
        "date" => DataType::Date,
        _ => return None,
    })
}

/// The text element of an array kura can only know when binding: the
/// schemas `current_schemas(implicit)` lists.
fn current_schemas(implicit: bool) -> Vec<&'static str> {
    if implicit {
        vec!["pg_catalog", "public"]
    } else {
        vec!["public"]
    }
}

impl Binder<'_> {
    /// The catalog snapshot for this statement, taken on first use.
    pub(super) fn snapshot(&mut self) -> Rc<Snapshot> {
        if let Some(s) = &self.system {
            return s.clone();
        }
        let mut relations = Vec::new();
        let mut indexes = Vec::new();
        let mut rules = Vec::new();
        let mut names = self.catalog.relation_names();
        names.sort();
        for name in names {
            if let Some(t) = self.catalog.table(&name) {
                let (pages, page) = t.stored_pages();
                for ix in t.listed_indexes() {
                    indexes.push((
                        ix.name.clone(),
                        name.clone(),
                        ix.columns.clone(),
                        ix.unique,
                        ix.include.clone(),
                        (ix.stored_pages(), page),
                    ));
                }
                let r = self.catalog.rules(&name);
                if r != crate::catalog::TableRulesInfo::default() {
                    rules.push((name.clone(), r));
                }
                relations.push((
                    name,
                    RelKind::Table,
                    t.columns().to_vec(),
                    None,
                    t.row_count(),
                    (pages, page),
                ));
            } else if let Some(v) = self.catalog.view(&name) {
                let columns = self.view_columns(&name, &v.columns);
                relations.push((name, RelKind::View, columns, Some(v.sql), 0, (0, 0)));
            }
        }
        let snap = Rc::new(Snapshot::new(SnapshotInput {
            relations,
            indexes,
            settings: self.catalog.settings(),
            rules,
            sequences: self.catalog.sequences(),
            database: self.catalog.session().map(|s| s.database.clone()),
        }));
        self.system = Some(snap.clone());
        snap
    }

    /// A view's columns with the types its query binds to. A view over the
    /// system catalogs is typed text while the snapshot it reads is being
    /// taken (its types would need that very snapshot).
    fn view_columns(&self, name: &str, declared: &[String]) -> Vec<SourceColumn> {
        let text_columns = || {
            declared
                .iter()
                .map(|n| SourceColumn {
                    name: n.clone(),
                    data_type: TEXT,
                    nullable: true,
                })
                .collect()
        };
        if self.building_system {
            return text_columns();
        }
        let mut b = Binder::new(self.catalog, Params::default());
        b.building_system = true;
        let id = ast::Ident::with_quote('"', name);
        let obj = ast::ObjectName(vec![ast::ObjectNamePart::Identifier(id)]);
        match b.bind_relation(&obj, None) {
            Ok((_, scope)) => scope
                .cols
                .iter()
                .map(|c| SourceColumn {
                    name: c.name.clone(),
                    data_type: c.ty,
                    nullable: true,
                })
                .collect(),
            Err(_) => text_columns(),
        }
    }

    /// The system relation a FROM name refers to: `pg_catalog.x` and
    /// `information_schema.x` always, a bare `x` only when `bare` (no user
    /// relation or CTE of that name shadows it).
    pub(super) fn system_relation(
        &mut self,
        name: &ast::ObjectName,
        bare: bool,
    ) -> Option<Arc<dyn TableSource>> {
        let parts: Vec<String> = name
            .0
            .iter()
            .map(|p| match p {
                ast::ObjectNamePart::Identifier(id) => Some(norm(id)),
                _ => None,
            })
            .collect::<Option<_>>()?;
        let (schema, rel) = match parts.as_slice() {
            [rel] if bare => (None, rel),
            [.., schema, rel] if SYSTEM_SCHEMAS.contains(&schema.as_str()) => {
                (Some(schema.as_str()), rel)
            }
            _ => return None,
        };
        crate::system::SYSTEM_RELATIONS
            .iter()
            .find(|r| r.name == rel && r.schema == schema.unwrap_or("pg_catalog"))?;
        let snap = self.snapshot();
        snap.relation(schema, rel)
    }

    /// Remembers which columns of a system relation's scan are its array
    /// columns (NULL in every row), for `CASE WHEN array IS NOT NULL ...`.
    pub(super) fn note_null_arrays(
        &mut self,
        plan: &crate::logical::Logical,
        scope: &super::Scope,
    ) {
        let crate::logical::Logical::Scan { table, .. } = plan else {
            return;
        };
        let Some((schema, name)) = table.name().split_once('.') else {
            return;
        };
        let Some(rel) = crate::system::SYSTEM_RELATIONS
            .iter()
            .find(|r| r.schema == schema && r.name == name)
        else {
            return;
        };
        for i in rel.array_columns() {
            if let Some(c) = scope.cols.get(i) {
                self.null_arrays.insert(c.id);
            }
        }
    }

    /// Whether `e` is `array IS NOT NULL` for a catalog array column: false in
    /// every row, since kura's catalogs hold no arrays.
    fn is_never_true(&mut self, e: &ast::Expr, cx: &mut ExprCtx) -> bool {
        let ast::Expr::IsNotNull(x) = e else {
            return false;
        };
        if !matches!(
            x.as_ref(),
            ast::Expr::Identifier(_) | ast::Expr::CompoundIdentifier(_)
        ) {
            return false;
        }
        matches!(self.bind_expr(x, cx), Ok(PhysExpr::Column { index, .. }) if self.null_arrays.contains(&index))
    }

    /// Whether `name` is qualified by a system schema.
    pub(super) fn names_system_schema(name: &ast::ObjectName) -> bool {
        let n = name.0.len();
        n >= 2
            && matches!(&name.0[n - 2], ast::ObjectNamePart::Identifier(id)
                if SYSTEM_SCHEMAS.contains(&norm(id).as_str()))
    }

    /// Binds `e` if it is one of the PostgreSQL catalog forms this module knows;
    /// `None` leaves it to the ordinary binder.
    pub(super) fn bind_system_expr(
        &mut self,
        e: &ast::Expr,
        cx: &mut ExprCtx,
        p: Pos,
    ) -> SqlResult<Option<PhysExpr>> {
        use ast::BinaryOperator as B;
        use ast::Expr as E;
        match e {
            E::Collate { expr, collation } => {
                // kura compares text bytewise, which is what the C collation and
                // PostgreSQL's "default" in a C-locale database do.
                match catalog_name(collation).as_deref() {
                    Some("default" | "c" | "posix" | "C" | "POSIX") => {
                        Ok(Some(self.bind_expr(expr, cx)?))
                    }
                    _ => Err(SqlError::unsupported(format!("collation {collation}"), p)),
                }
            }
            E::BinaryOp { left, op, right } => {
                let (func, negated) = match op {
                    B::PGRegexMatch => (ScalarFunc::RegexMatch, false),
                    B::PGRegexIMatch => (ScalarFunc::RegexIMatch, false),
                    B::PGRegexNotMatch => (ScalarFunc::RegexMatch, true),
                    B::PGRegexNotIMatch => (ScalarFunc::RegexIMatch, true),
                    B::PGCustomBinaryOperator(parts) => {
                        let (schema, name) = match parts.as_slice() {
                            [n] => (None, n.as_str()),
                            [s, n] => (Some(s.as_str()), n.as_str()),
                            _ => return Ok(None),
                        };
                        if schema.is_some_and(|s| s != "pg_catalog") {
                            return Err(SqlError::unsupported(format!("operator {op}"), p));
                        }
                        let op = match name {
                            "~" => B::PGRegexMatch,
                            "~*" => B::PGRegexIMatch,
                            "!~" => B::PGRegexNotMatch,
                            "!~*" => B::PGRegexNotIMatch,
                            "=" => B::Eq,
                            "<>" | "!=" => B::NotEq,
                            "<" => B::Lt,
                            "<=" => B::LtEq,
                            ">" => B::Gt,
                            ">=" => B::GtEq,
                            "||" => B::StringConcat,
                            "+" => B::Plus,
                            "-" => B::Minus,
                            "*" => B::Multiply,
                            "/" => B::Divide,
                            _ => return Err(SqlError::unsupported(format!("operator {name}"), p)),
                        };
                        let rewritten = E::BinaryOp {
                            left: left.clone(),
                            op,
                            right: right.clone(),
                        };
                        return self.bind_expr(&rewritten, cx).map(Some);
                    }
                    _ => return Ok(None),
                };
                let l = self.bind_expr(left, cx)?;
                let r = self.bind_expr(right, cx)?;
                let text_arg = |x: PhysExpr| -> SqlResult<PhysExpr> {
                    if x.data_type().is_text() || is_null_literal(&x) {
                        coerce(x, TEXT, p)
                    } else {
                        Err(SqlError::mismatch(
                            format!("operator does not exist: {} {op} text", x.data_type()),
                            p,
                        ))
                    }
                };
                let call = PhysExpr::Func {
                    func,
                    args: vec![text_arg(l)?, text_arg(r)?],
                    data_type: DataType::Boolean,
                };
                Ok(Some(if negated {
                    PhysExpr::Not(Box::new(call))
                } else {
                    call
                }))
            }
            E::Cast {
                expr, data_type, ..
            } => self.bind_system_cast(expr, data_type, cx, p),
            E::Function(f) => self.bind_system_function(f, cx, p),
            // A branch on a catalog array being present never fires: it is left
            // out, and with it what it would compute from the array (psql's
            // `\d` reads publication column lists with array functions kura
            // does not have).
            E::Case {
                operand: None,
                conditions,
                else_result,
                case_token,
                end_token,
            } if !self.null_arrays.is_empty() => {
                let mut kept = Vec::new();
                for w in conditions {
                    if !self.is_never_true(&w.condition, cx) {
                        kept.push(w.clone());
                    }
                }
                if kept.len() == conditions.len() {
                    return Ok(None);
                }
                if kept.is_empty() {
                    return match else_result {
                        Some(x) => self.bind_expr(x, cx).map(Some),
                        None => Ok(Some(super::types::text_null())),
                    };
                }
                let rewritten = E::Case {
                    operand: None,
                    conditions: kept,
                    else_result: else_result.clone(),
                    case_token: case_token.clone(),
                    end_token: end_token.clone(),
                };
                self.bind_expr(&rewritten, cx).map(Some)
            }
            // `x = ANY(array column)`: the catalogs' array columns are always NULL
            // in kura, so the comparison is NULL, as PostgreSQL's is for a NULL
            // array; a non-NULL text there fails the cast instead of matching.
            E::AnyOp {
                left,
                compare_op,
                right,
                ..
            } if !matches!(right.as_ref(), E::Subquery(_)) => {
                let l = self.bind_expr(left, cx)?;
                let r = self.bind_expr(right, cx)?;
                // Only a catalog column kura holds as text is handled here;
                // real arrays, array literals and parameters are arrays.
                if !(matches!(r, PhysExpr::Column { .. }) && r.data_type().is_text()) {
                    return self.bind_any_all(l, compare_op, r, false, p).map(Some);
                }
                let l = if is_null_literal(&l) || l.data_type().is_text() {
                    coerce(l, TEXT, p)?
                } else {
                    l
                };
                let r = if l.data_type().is_text() {
                    r
                } else {
                    PhysExpr::Cast {
                        expr: Box::new(r),
                        to: l.data_type(),
                    }
                };
                let op = match compare_op {
                    B::Eq => kura_exec::expr::BinaryOp::Eq,
                    B::NotEq => kura_exec::expr::BinaryOp::NotEq,
                    _ => return Err(SqlError::unsupported(format!("{compare_op} ANY"), p)),
                };
                Ok(Some(PhysExpr::Binary {
                    op,
                    left: Box::new(l),
                    right: Box::new(r),
                    data_type: DataType::Boolean,
                }))
            }
            E::CompoundFieldAccess { root, access_chain } => {
                // `(current_schemas(true))[1]`: the one array kura knows.
                let mut root = root.as_ref();
                while let E::Nested(x) = root {
                    root = x;
                }
                let E::Function(f) = root else {
                    return Ok(None);
                };
                if catalog_name(&f.name).as_deref() != Some("current_schemas") {
                    return Ok(None);
                }
                let [ast::AccessExpr::Subscript(ast::Subscript::Index { index })] =
                    access_chain.as_slice()
                else {
                    return Err(SqlError::unsupported("array slices", p));
                };
                let schemas = self.current_schemas_arg(f, cx, p)?;
                let i = self.bind_expr(index, cx)?;
                let pairs = schemas
                    .iter()
                    .enumerate()
                    .map(|(k, s)| (Value::Integer(k as i32 + 1), Value::Text(s.to_string())))
                    .collect();
                let i = coerce(i, DataType::Integer, p)?;
                Ok(Some(lookup(i, pairs, TEXT)))
            }
            _ => Ok(None),
        }
    }
    /// The schemas `current_schemas(b)` lists, `b` a constant.
    fn current_schemas_arg(
        &mut self,
        f: &ast::Function,
        cx: &mut ExprCtx,
        p: Pos,
    ) -> SqlResult<Vec<&'static str>> {
        let args = self.function_args(f, cx, p)?;
        match args.as_slice() {
            [PhysExpr::Literal {
                value: Value::Boolean(b),
                ..
            }] => Ok(current_schemas(*b)),
            _ => Err(SqlError::unsupported(
                "current_schemas() of anything but a constant",
                p,
            )),
        }
    }

    fn function_args(
        &mut self,
        f: &ast::Function,
        cx: &mut ExprCtx,
        p: Pos,
    ) -> SqlResult<Vec<PhysExpr>> {
        match &f.args {
            ast::FunctionArguments::None => Ok(Vec::new()),
            ast::FunctionArguments::List(l) => l
                .args
                .iter()
                .map(|a| match a {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => {
                        self.bind_expr(e, cx)
                    }
                    _ => Err(SqlError::unsupported(
                        format!("argument form in {}", f.name),
                        p,
                    )),
                })
                .collect(),
            ast::FunctionArguments::Subquery(_) => {
                Err(SqlError::unsupported("subquery as function argument", p))
            }
        }
    }

    fn bind_system_cast(
        &mut self,
        expr: &ast::Expr,
        data_type: &ast::DataType,
        cx: &mut ExprCtx,
        p: Pos,
    ) -> SqlResult<Option<PhysExpr>> {
        let name = match data_type {
            ast::DataType::Regclass => Some("regclass".to_string()),
            ast::DataType::Custom(n, mods) if mods.is_empty() => catalog_name(n),
            _ => None,
        };
        let to_text = matches!(
            data_type,
            ast::DataType::Text | ast::DataType::Varchar(None)
        ) || name.as_deref().and_then(plain_type) == Some(TEXT);
        // `x::regtype::text`, `x::regclass::text`: the name of what the OID stands for.
        if to_text {
            if let ast::Expr::Cast {
                expr: inner,
                data_type: inner_type,
                ..
            } = expr
            {
                let inner_name = match inner_type {
                    ast::DataType::Regclass => Some("regclass".to_string()),
                    ast::DataType::Custom(n, _) => catalog_name(n),
                    _ => None,
                };
                if let Some(kind @ ("regtype" | "regclass" | "regnamespace")) =
                    inner_name.as_deref()
                {
                    let oid = self.bind_oid_cast(inner, kind, cx, p)?;
                    return Ok(Some(self.oid_name(oid, kind)));
                }
            }
        }
        let Some(name) = name else {
            return Ok(None);
        };
        match name.as_str() {
            "regproc" | "regprocedure" => {
                // kura's catalogs hold functions' regproc columns (pg_type's
                // typinput ...) as names, so a name cast to regproc is that
                // name: `'pg_catalog.array_in'::regproc` = typinput works. A
                // name no function has is refused, as PostgreSQL does.
                let x = self.bind_expr(expr, cx)?;
                match &x {
                    PhysExpr::Literal {
                        value: Value::Text(t),
                        ..
                    } if !t.starts_with('\u{0}') && t.trim().parse::<i32>().is_err() => {
                        let t = t.trim();
                        let t = t.strip_prefix("pg_catalog.").unwrap_or(t);
                        let t = t.split_once('(').map_or(t, |(name, _)| name).trim();
                        if !crate::system::is_function_name(t) {
                            return Err(SqlError::UnknownFunction {
                                name: format!("\"{t}\""),
                                pos: p,
                                suggestion: None,
                            });
                        }
                        Ok(Some(text_literal(t)))
                    }
                    _ => Ok(Some(self.oid_of(x, &name, p)?)),
                }
            }
            "regclass" | "regtype" | "regnamespace" | "regrole" | "oid" => {
                Ok(Some(self.bind_oid_cast(expr, &name, cx, p)?))
            }
            other => match plain_type(other) {
                Some(t) => {
                    let x = self.bind_expr(expr, cx)?;
                    Ok(Some(fold(coerce(x, t, p)?)))
                }
                None => Ok(None),
            },
        }
    }

    /// `x::regclass` (and the other OID types): an OID, from a name when `x` is text.
    fn bind_oid_cast(
        &mut self,
        expr: &ast::Expr,
        kind: &str,
        cx: &mut ExprCtx,
        p: Pos,
    ) -> SqlResult<PhysExpr> {
        let x = self.bind_expr(expr, cx)?;
        self.oid_of(x, kind, p)
    }

    /// The OID `x` names as a `kind` (regclass, regtype ...): from a name when
    /// `x` is text, else `x` itself as an integer.
    fn oid_of(&mut self, x: PhysExpr, kind: &str, p: Pos) -> SqlResult<PhysExpr> {
        if !x.data_type().is_text() || kind == "oid" {
            return coerce(x, DataType::Integer, p);
        }
        let constant = match &x {
            PhysExpr::Literal {
                value: Value::Text(s),
                ..
            } if !s.starts_with('\u{0}') => Some(s.clone()),
            _ => None,
        };
        // A number written as text is an OID already ('16384'::regclass).
        if let Some(n) = constant
            .as_deref()
            .and_then(|s| s.trim().parse::<i32>().ok())
        {
            return Ok(PhysExpr::literal(Value::Integer(n), DataType::Integer));
        }
        match kind {
            "regtype" => Ok(fold(PhysExpr::Func {
                func: ScalarFunc::RegtypeIn,
                args: vec![x],
                data_type: DataType::Integer,
            })),
            "regclass" => {
                let snap = self.snapshot();
                if let Some(name) = constant {
                    return match snap.relation_oid(&name) {
                        Some(oid) => Ok(PhysExpr::literal(Value::Integer(oid), DataType::Integer)),
                        None => Err(SqlError::UnknownTable {
                            name,
                            pos: p,
                            suggestion: None,
                        }),
                    };
                }
                // Names as `regclass` prints them, and schema-qualified
                // (`public.t_id_seq`, as pg_get_serial_sequence gives them).
                let public: Vec<(String, i32)> = snap
                    .relations
                    .iter()
                    .map(|r| (r.name.clone(), r.oid))
                    .chain(snap.indexes.iter().map(|i| (i.name.clone(), i.oid)))
                    .chain(snap.sequences.iter().map(|q| (q.info.name.clone(), q.oid)))
                    .collect();
                let pairs = public
                    .iter()
                    .flat_map(|(n, o)| [(n.clone(), *o), (format!("public.{n}"), *o)])
                    .chain(crate::system::SYSTEM_RELATIONS.iter().flat_map(|r| {
                        [
                            (r.name.to_string(), r.oid),
                            (format!("{}.{}", r.schema, r.name), r.oid),
                        ]
                    }))
                    .map(|(n, o)| (Value::Text(n), Value::Integer(o)))
                    .collect();
                Ok(lookup(x, pairs, DataType::Integer))
            }
            "regnamespace" => {
                let pairs = [
                    ("pg_catalog", crate::system::PG_CATALOG_OID),
                    ("public", crate::system::PUBLIC_OID),
                    ("information_schema", crate::system::INFORMATION_SCHEMA_OID),
                ]
                .into_iter()
                .map(|(n, o)| (Value::Text(n.into()), Value::Integer(o)))
                .collect();
                Ok(lookup(x, pairs, DataType::Integer))
            }
            "regrole" => Ok(lookup(
                x,
                vec![(Value::Text(OWNER.into()), Value::Integer(OWNER_OID))],
                DataType::Integer,
            )),
            _ => Err(SqlError::unsupported(format!("text cast to {kind}"), p)),
        }
    }

    /// The name an OID of `kind` (regtype, regclass) stands for.
    fn oid_name(&mut self, oid: PhysExpr, kind: &str) -> PhysExpr {
        if kind == "regtype" {
            return fold(PhysExpr::Func {
                func: ScalarFunc::FormatType,
                args: vec![oid],
                data_type: TEXT,
            });
        }
        if kind == "regnamespace" {
            let pairs = [
                ("pg_catalog", crate::system::PG_CATALOG_OID),
                ("public", crate::system::PUBLIC_OID),
                ("information_schema", crate::system::INFORMATION_SCHEMA_OID),
            ]
            .into_iter()
            .map(|(n, o)| (Value::Integer(o), Value::Text(n.into())))
            .collect();
            return lookup(oid, pairs, TEXT);
        }
        let snap = self.snapshot();
        let pairs = snap
            .relations
            .iter()
            .map(|r| (r.oid, r.name.clone()))
            .chain(snap.indexes.iter().map(|i| (i.oid, i.name.clone())))
            .chain(snap.sequences.iter().map(|q| (q.oid, q.info.name.clone())))
            .chain(
                crate::system::SYSTEM_RELATIONS
                    .iter()
                    .map(|r| (r.oid, r.name.to_string())),
            )
            .map(|(o, n)| (Value::Integer(o), Value::Text(n)))
            .collect();
        lookup(oid, pairs, TEXT)
    }

    /// The catalog functions; `None` for any other function.
    fn bind_system_function(
        &mut self,
        f: &ast::Function,
        cx: &mut ExprCtx,
        p: Pos,
    ) -> SqlResult<Option<PhysExpr>> {
        let Some(name) = catalog_name(&f.name) else {
            return Ok(None);
        };
        if f.over.is_some() {
            return Ok(None);
        }
        let known = kura_exec::expr::registry::in_family(&name, kura_exec::expr::registry::Family::Catalog)
                || (name.starts_with("has_") && name.ends_with("_privilege"))
                // The catalogs' ACL columns are text here: psql's `\l` joins
                // them with array_to_string (the array binder takes arrays).
                || name == "array_to_string";
        if !known {
            return Ok(None);
        }
        let args = self.function_args(f, cx, p)?;
        let arity = |n: std::ops::RangeInclusive<usize>| {
            if n.contains(&args.len()) {
                Ok(())
            } else {
                Err(SqlError::mismatch(
                    format!("function {name} does not take {} arguments", args.len()),
                    p,
                ))
            }
        };
        let oid_arg = |i: usize| -> SqlResult<PhysExpr> {
            let a = args[i].clone();
            if a.data_type() == DataType::BigInt {
                return Ok(a);
            }
            coerce(a, DataType::Integer, p)
        };
        Ok(Some(match name.as_str() {
            // Visible through the search path (public, pg_catalog): every
            // relation but information_schema's, as in PostgreSQL (clients
            // list "the user's views" as the visible ones outside pg_catalog).
            "pg_table_is_visible" => {
                arity(1..=1)?;
                let hidden: Vec<Value> = crate::system::SYSTEM_RELATIONS
                    .iter()
                    .filter(|r| r.schema == "information_schema")
                    .map(|r| Value::Integer(r.oid))
                    .collect();
                PhysExpr::InList {
                    expr: Box::new(coerce(args[0].clone(), DataType::Integer, p)?),
                    list: hidden,
                    negated: true,
                }
            }
            "pg_type_is_visible"
            | "pg_function_is_visible"
            | "pg_collation_is_visible"
            | "pg_relation_is_publishable" => {
                arity(1..=1)?;
                true_unless_null(args[0].clone())
            }
            // The sequence a serial or identity column draws on, schema-
            // qualified (`public.t_id_seq`); NULL for any other column.
            "pg_get_serial_sequence" => {
                arity(2..=2)?;
                let text = |e: &PhysExpr| match fold(e.clone()) {
                    PhysExpr::Literal {
                        value: Value::Text(s),
                        ..
                    } => Some(s),
                    _ => None,
                };
                let owned: Vec<(String, String, String)> = self
                    .catalog
                    .sequences()
                    .into_iter()
                    .filter_map(|q| {
                        let (t, c) = q.owned_by?;
                        Some((t, c, format!("public.{}", q.name)))
                    })
                    .collect();
                match (text(&args[0]), text(&args[1])) {
                    (Some(table), Some(column)) => {
                        let table = super::relation_name(&table);
                        let column = super::relation_name(&column);
                        let seq = owned
                            .into_iter()
                            .find(|(t, c, _)| *t == table && *c == column);
                        match seq {
                            Some((_, _, q)) => PhysExpr::literal(Value::Text(q), TEXT),
                            None => typed_null(TEXT),
                        }
                    }
                    // Per row (SQLAlchemy passes `attrelid::regclass::text` and
                    // `attname`): the table as `t` or `public.t`, the column as
                    // named.
                    _ => serial_sequence_of(
                        coerce(args[0].clone(), TEXT, p)?,
                        coerce(args[1].clone(), TEXT, p)?,
                        owned,
                    ),
                }
            }
            // A set-returning function whose one row, for a relation that is
            // not a partition (kura has no partitioning), is the relation itself
            // (psql's \d asks it for a table's foreign keys).
            "pg_partition_ancestors" => {
                arity(1..=1)?;
                oid_arg(0)?
            }
            n if n.starts_with("has_") => {
                // kura has no privileges: whoever is connected may do everything.
                arity(1..=4)?;
                PhysExpr::literal(Value::Boolean(true), DataType::Boolean)
            }
            "format_type" => {
                arity(2..=2)?;
                PhysExpr::Func {
                    func: ScalarFunc::FormatType,
                    args: vec![oid_arg(0)?, coerce(args[1].clone(), DataType::Integer, p)?],
                    data_type: TEXT,
                }
            }
            "pg_typeof" => {
                arity(1..=1)?;
                PhysExpr::literal(Value::Text(type_name_of(&args[0])), TEXT)
            }
            "pg_get_userbyid" => {
                arity(1..=1)?;
                lookup(
                    oid_arg(0)?,
                    vec![(Value::Integer(OWNER_OID), Value::Text(OWNER.into()))],
                    TEXT,
                )
            }
            "pg_get_indexdef" => {
                arity(1..=3)?;
                let snap = self.snapshot();
                let oid = oid_arg(0)?;
                let column = match args.get(1) {
                    None => None,
                    Some(c) => Some(coerce(c.clone(), DataType::Integer, p)?),
                };
                let whole = lookup(
                    oid.clone(),
                    snap.indexes
                        .iter()
                        .map(|i| (Value::Integer(i.oid), Value::Text(i.definition())))
                        .collect(),
                    TEXT,
                );
                match column {
                    None => whole,
                    // Column k > 0: that key column's name; 0: the whole definition.
                    Some(k) => {
                        let mut whens = vec![(
                            PhysExpr::Binary {
                                op: kura_exec::expr::BinaryOp::Eq,
                                left: Box::new(k.clone()),
                                right: Box::new(PhysExpr::literal(
                                    Value::Integer(0),
                                    DataType::Integer,
                                )),
                                data_type: DataType::Boolean,
                            },
                            whole,
                        )];
                        let width = snap.indexes.iter().map(|i| i.columns.len()).max();
                        for pos in 1..=width.unwrap_or(0) {
                            let names = snap
                                .indexes
                                .iter()
                                .filter_map(|i| {
                                    let n = i.column_names.get(pos - 1)?;
                                    Some((
                                        Value::Integer(i.oid),
                                        Value::Text(crate::system::quote_ident(n)),
                                    ))
                                })
                                .collect();
                            whens.push((
                                PhysExpr::Binary {
                                    op: kura_exec::expr::BinaryOp::Eq,
                                    left: Box::new(k.clone()),
                                    right: Box::new(PhysExpr::literal(
                                        Value::Integer(pos as i32),
                                        DataType::Integer,
                                    )),
                                    data_type: DataType::Boolean,
                                },
                                lookup(oid.clone(), names, TEXT),
                            ));
                        }
                        PhysExpr::Case {
                            whens,
                            otherwise: None,
                            data_type: TEXT,
                        }
                    }
                }
            }
            "pg_get_viewdef" => {
                arity(1..=2)?;
                let snap = self.snapshot();
                lookup(
                    oid_arg(0)?,
                    snap.relations
                        .iter()
                        .filter_map(|r| {
                            Some((Value::Integer(r.oid), Value::Text(r.definition.clone()?)))
                        })
                        .collect(),
                    TEXT,
                )
            }
            // `pg_attrdef.adbin` holds the DEFAULT as SQL text already.
            "pg_get_expr" => {
                arity(2..=3)?;
                coerce(args[0].clone(), TEXT, p)?
            }
            "pg_get_constraintdef" => {
                arity(1..=2)?;
                let snap = self.snapshot();
                lookup(
                    oid_arg(0)?,
                    snap.constraints
                        .iter()
                        .map(|c| (Value::Integer(c.oid), Value::Text(c.info.definition())))
                        .collect(),
                    TEXT,
                )
            }
            // kura has no index predicates, partition keys, triggers, extended
            // statistics, comments or functions written in SQL: these describe
            // nothing.
            "pg_get_partkeydef"
            | "pg_get_function_sqlbody"
            | "pg_get_triggerdef"
            | "pg_get_statisticsobjdef_columns"
            | "obj_description"
            | "col_description"
            | "shobj_description" => {
                arity(1..=3)?;
                typed_null(TEXT)
            }
            "pg_encoding_to_char" => {
                arity(1..=1)?;
                lookup(
                    coerce(args[0].clone(), DataType::Integer, p)?,
                    vec![(Value::Integer(6), Value::Text("UTF8".into()))],
                    TEXT,
                )
            }
            "array_to_string" => {
                // The array columns of the catalogs (ACLs, options) are always
                // NULL in kura: no array value ever reaches this.
                arity(2..=3)?;
                if args[0].data_type().is_array() {
                    return self.bind_array_scalar("array_to_string", args, p).map(Some);
                }
                if !is_null_literal(&args[0]) && args[0].data_type() != TEXT {
                    return Err(SqlError::unsupported("arrays", p));
                }
                coerce(args[0].clone(), TEXT, p)?
            }
            "replace" => {
                arity(3..=3)?;
                let args = args
                    .into_iter()
                    .map(|a| coerce(a, TEXT, p))
                    .collect::<SqlResult<Vec<_>>>()?;
                fold(PhysExpr::Func {
                    func: ScalarFunc::Replace,
                    args,
                    data_type: TEXT,
                })
            }
            "pg_database_size" => {
                // kura's one database is its file: its size for the database's
                // name or OID, NULL for any other (PostgreSQL's error for a
                // constant that names none).
                arity(1..=1)?;
                let a = args[0].clone();
                let (this, what) = if a.data_type().is_text() {
                    (text_literal(&self.snapshot().database), "name")
                } else {
                    (
                        PhysExpr::literal(
                            Value::Integer(crate::system::DATABASE_OID),
                            DataType::Integer,
                        ),
                        "oid",
                    )
                };
                let a = coerce(a, this.data_type(), p)?;
                if let PhysExpr::Literal { value, .. } = &a {
                    let PhysExpr::Literal { value: ours, .. } = &this else {
                        unreachable!("a literal")
                    };
                    if !value.is_null() && value != ours {
                        return Err(SqlError::UndefinedObject(format!(
                            "database with {what} {value} does not exist"
                        )));
                    }
                }
                let bytes = self.catalog.database_bytes().map_or(Value::Null, |b| {
                    Value::BigInt(i64::try_from(b).unwrap_or(i64::MAX))
                });
                PhysExpr::Case {
                    whens: vec![(
                        PhysExpr::Binary {
                            op: BinaryOp::Eq,
                            left: Box::new(a),
                            right: Box::new(this),
                            data_type: DataType::Boolean,
                        },
                        PhysExpr::literal(bytes, DataType::BigInt),
                    )],
                    otherwise: None,
                    data_type: DataType::BigInt,
                }
            }
            // kura keeps no access statistics: NULL, not a made-up count.
            "pg_stat_get_numscans" => {
                arity(1..=1)?;
                oid_arg(0)?;
                typed_null(DataType::BigInt)
            }
            // A pg_proc signature's types, from the function list (NULL for
            // an OID pg_proc does not list, as PostgreSQL gives).
            "pg_get_function_result"
            | "pg_get_function_arguments"
            | "pg_get_function_identity_arguments" => {
                arity(1..=1)?;
                let oid = oid_arg(0)?;
                fold(PhysExpr::Func {
                    func: if name == "pg_get_function_result" {
                        ScalarFunc::FunctionResult
                    } else {
                        ScalarFunc::FunctionArguments
                    },
                    args: vec![oid],
                    data_type: TEXT,
                })
            }
            "pg_size_pretty" => {
                arity(1..=1)?;
                let a = args[0].clone();
                if !a.data_type().is_integer() && !is_null_literal(&a) {
                    return Err(SqlError::mismatch("pg_size_pretty needs an integer", p));
                }
                fold(PhysExpr::Func {
                    func: ScalarFunc::SizePretty,
                    args: vec![coerce(a, DataType::BigInt, p)?],
                    data_type: TEXT,
                })
            }
            "pg_table_size" | "pg_relation_size" | "pg_total_relation_size" | "pg_indexes_size" => {
                // Bytes in the database file: a table's column and overflow
                // pages, an index's nodes; the total adds the table's indexes,
                // pg_indexes_size counts only those. A view has none (0).
                arity(if name == "pg_relation_size" {
                    1..=2
                } else {
                    1..=1
                })?;
                // A name ('lineitem') is a regclass, as in PostgreSQL.
                let relation = if args[0].data_type().is_text() {
                    self.oid_of(args[0].clone(), "regclass", p)?
                } else {
                    oid_arg(0)?
                };
                let snap = self.snapshot();
                let index_bytes = |oid: i32| -> u64 {
                    snap.indexes
                        .iter()
                        .filter(|i| i.table_oid == oid)
                        .map(|i| i.bytes)
                        .sum()
                };
                let bytes = |own: u64, oid: i32| match name.as_str() {
                    "pg_total_relation_size" => own + index_bytes(oid),
                    "pg_indexes_size" => index_bytes(oid),
                    _ => own,
                };
                let sizes = snap
                    .relations
                    .iter()
                    .map(|r| (r.oid, bytes(r.bytes, r.oid)))
                    .chain(snap.indexes.iter().map(|i| {
                        let own = if name == "pg_indexes_size" {
                            0
                        } else {
                            i.bytes
                        };
                        (i.oid, own)
                    }))
                    .map(|(oid, b)| {
                        let b = i64::try_from(b).unwrap_or(i64::MAX);
                        (Value::Integer(oid), Value::BigInt(b))
                    })
                    .collect();
                lookup(relation, sizes, DataType::BigInt)
            }
            "to_regtype" => {
                arity(1..=1)?;
                PhysExpr::Func {
                    func: ScalarFunc::ToRegtype,
                    args: vec![coerce(args[0].clone(), TEXT, p)?],
                    data_type: DataType::Integer,
                }
            }
            "quote_ident" => {
                arity(1..=1)?;
                fold(PhysExpr::Func {
                    func: ScalarFunc::QuoteIdent,
                    args: vec![coerce(args[0].clone(), TEXT, p)?],
                    data_type: TEXT,
                })
            }
            _ => return Ok(None),
        }))
    }
}
