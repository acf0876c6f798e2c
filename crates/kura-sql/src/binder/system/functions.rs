//! The catalog functions clients call (`format_type`, `pg_get_indexdef`,
//! `pg_table_is_visible`, `current_schemas` ...), as CASE expressions over the snapshot.

use super::*;

/// The text element of an array kura can only know when binding: the
/// schemas `current_schemas(implicit)` lists.
pub(super) fn current_schemas(implicit: bool) -> Vec<&'static str> {
    if implicit {
        vec!["pg_catalog", "public"]
    } else {
        vec!["public"]
    }
}

/// `x IS NOT NULL`: true for every object (there is one schema on the path,
/// one role with every privilege), NULL for a NULL argument as in PostgreSQL.
pub(super) fn true_unless_null(x: PhysExpr) -> PhysExpr {
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

/// `pg_get_serial_sequence(table, column)` for arguments known only per row:
/// `CASE WHEN table IN (t, public.t) AND column = c THEN seq ... END` over the
/// sequences `owned` (table, column, qualified sequence name).
pub(super) fn serial_sequence_of(
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

impl Binder<'_> {
    /// The catalog functions; `None` for any other function.
    pub(super) fn bind_system_function(
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
                        let table = crate::binder::relation_name(&table);
                        let column = crate::binder::relation_name(&column);
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

    pub(super) fn function_args(
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

    /// The schemas `current_schemas(b)` lists, `b` a constant.
    pub(super) fn current_schemas_arg(
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
}
