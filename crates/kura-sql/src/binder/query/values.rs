//! Binding of VALUES lists: each column's type common to its rows.

use super::*;

impl Binder<'_> {
    pub(super) fn bind_values(&mut self, v: &ast::Values) -> SqlResult<BoundQuery> {
        let scope = Scope::default();
        let mut rows: Vec<Vec<PhysExpr>> = Vec::new();
        for r in &v.rows {
            let mut cx = ExprCtx::new(&scope, &[]);
            let row = r
                .content
                .iter()
                .map(|e| self.bind_expr(e, &mut cx))
                .collect::<SqlResult<Vec<_>>>()?;
            rows.push(row);
        }
        let width = rows.first().map_or(0, |r| r.len());
        if rows.iter().any(|r| r.len() != width) {
            return Err(SqlError::mismatch(
                "VALUES lists must all be the same length",
                Pos::default(),
            ));
        }
        let mut types = Vec::new();
        for c in 0..width {
            let mut t: Option<DataType> = None;
            for r in &rows {
                // Quoted constants take the type of the typed rows (PostgreSQL's
                // `unknown`); text when every row has one.
                if crate::binder::types::is_untyped_null(&r[c])
                    || crate::binder::types::is_untyped_literal(&r[c])
                {
                    continue;
                }
                let rt = r[c].data_type();
                t = Some(match t {
                    None => rt,
                    Some(x) => common_type(x, rt).ok_or_else(|| {
                        SqlError::mismatch(
                            format!("VALUES types {x} and {rt} cannot be matched"),
                            Pos::default(),
                        )
                    })?,
                });
            }
            types.push(t.unwrap_or(DataType::Varchar(None)));
        }
        let mut values = Vec::new();
        for r in rows {
            let mut vals = Vec::new();
            for (e, t) in r.into_iter().zip(&types) {
                match crate::binder::types::fold(coerce(e, *t, Pos::default())?) {
                    PhysExpr::Literal { value, .. } => vals.push(value),
                    // A constant that did not fold failed to evaluate: say why.
                    e if {
                        let mut cols = Vec::new();
                        e.columns(&mut cols);
                        cols.is_empty()
                    } =>
                    {
                        // A constant fold keeps as it is (a typed NULL) is
                        // evaluated here; one that fails says why.
                        match e.eval(&kura_common::Batch::with_rows(1)) {
                            Ok(v) if v.len() == 1 => vals.push(v.get_value(0)),
                            r => {
                                return Err(SqlError::InvalidValue {
                                    message: r.err().map_or_else(
                                        || "a value that cannot be computed".into(),
                                        |x| x.to_string(),
                                    ),
                                    pos: Pos::default(),
                                })
                            }
                        }
                    }
                    _ => {
                        return Err(SqlError::unsupported(
                            "non-constant expressions in VALUES",
                            Pos::default(),
                        ))
                    }
                }
            }
            values.push(vals);
        }
        let out: Vec<(String, ColId)> = types
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let n = format!("column{}", i + 1);
                (n.clone(), self.cols.add(&n, *t))
            })
            .collect();
        Ok(BoundQuery {
            plan: Logical::Values {
                rows: values,
                cols: out.iter().map(|o| o.1).collect(),
            },
            out,
        })
    }
}
