//! `::regclass`, `::regtype`, `::regproc` and the other OID casts: names to OIDs and back
//! through the snapshot.

use super::*;

impl Binder<'_> {
    pub(super) fn bind_system_cast(
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
    pub(super) fn bind_oid_cast(
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
    pub(super) fn oid_of(&mut self, x: PhysExpr, kind: &str, p: Pos) -> SqlResult<PhysExpr> {
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
    pub(super) fn oid_name(&mut self, oid: PhysExpr, kind: &str) -> PhysExpr {
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
        // Quoted where the name must be to read back, as PostgreSQL prints a regclass.
        use crate::binder::quote_ident;
        let snap = self.snapshot();
        let pairs = snap
            .relations
            .iter()
            .map(|r| (r.oid, quote_ident(&r.name)))
            .chain(snap.indexes.iter().map(|i| (i.oid, quote_ident(&i.name))))
            .chain(
                snap.sequences
                    .iter()
                    .map(|q| (q.oid, quote_ident(&q.info.name))),
            )
            .chain(
                crate::system::SYSTEM_RELATIONS
                    .iter()
                    .map(|r| (r.oid, r.name.to_string())),
            )
            .map(|(o, n)| (Value::Integer(o), Value::Text(n)))
            .collect();
        lookup(oid, pairs, TEXT)
    }
}
