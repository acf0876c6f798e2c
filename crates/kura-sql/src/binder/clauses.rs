//! The clauses of a query that sqlparser parses but kura does not implement,
//! refused with 0A000 before binding: a clause accepted and then ignored
//! (`FOR XML`, `QUALIFY`, `TOP`, `SELECT … INTO` …) would return a wrong answer.

use sqlparser::ast::{self, Spanned};

use crate::error::{Pos, SqlError, SqlResult};

fn refuse<T>(what: impl Into<String>, at: &impl Spanned) -> SqlResult<T> {
    Err(SqlError::unsupported(what, Pos::from_span(at.span())))
}

/// Refuses the query-level clauses kura does not implement. `FETCH FIRST n
/// ROWS ONLY` and the locking clauses are handled by their callers.
pub(super) fn check_query(q: &ast::Query) -> SqlResult<()> {
    if q.for_clause.is_some() {
        return refuse("FOR XML/JSON/BROWSE", q);
    }
    if q.settings.is_some() {
        return refuse("SETTINGS in a query", q);
    }
    if q.format_clause.is_some() {
        return refuse("FORMAT in a query", q);
    }
    if !q.pipe_operators.is_empty() {
        return refuse("pipe operators (|>)", q);
    }
    if let Some(f) = &q.fetch {
        if f.percent {
            return refuse("FETCH … PERCENT", q);
        }
    }
    if let Some(ast::OrderBy {
        kind: ast::OrderByKind::Expressions(keys),
        interpolate,
    }) = &q.order_by
    {
        if interpolate.is_some() {
            return refuse("ORDER BY … INTERPOLATE", q);
        }
        for k in keys {
            check_order_key(k)?;
        }
    }
    Ok(())
}

/// `USING <` and `USING >` are ascending and descending; other operators name
/// an ordering kura does not know. `WITH FILL` is ClickHouse's.
pub(super) fn check_order_key(k: &ast::OrderByExpr) -> SqlResult<()> {
    if k.with_fill.is_some() {
        return refuse("ORDER BY … WITH FILL", &k.expr);
    }
    if let Some(ast::OrderBySort::Using(op)) = &k.options.sort {
        let op = op.to_string();
        if op != "<" && op != ">" {
            return refuse(format!("ORDER BY … USING {op}"), &k.expr);
        }
    }
    Ok(())
}

/// Refuses the clauses of a SELECT kura does not implement (most are other
/// dialects' syntax that the PostgreSQL dialect of sqlparser still accepts).
pub(super) fn check_select(s: &ast::Select) -> SqlResult<()> {
    let clauses: [(bool, &str); 14] = [
        (!s.optimizer_hints.is_empty(), "optimizer hints"),
        (s.select_modifiers.is_some(), "SELECT modifiers"),
        (s.top.is_some(), "SELECT TOP (use LIMIT)"),
        (s.exclude.is_some(), "SELECT * EXCLUDE"),
        (
            s.into.is_some(),
            "SELECT … INTO (use CREATE TABLE … AS SELECT)",
        ),
        (!s.lateral_views.is_empty(), "LATERAL VIEW"),
        (s.prewhere.is_some(), "PREWHERE"),
        (!s.connect_by.is_empty(), "CONNECT BY"),
        (!s.cluster_by.is_empty(), "CLUSTER BY"),
        (!s.distribute_by.is_empty(), "DISTRIBUTE BY"),
        (!s.sort_by.is_empty(), "SORT BY"),
        (s.qualify.is_some(), "QUALIFY"),
        (s.value_table_mode.is_some(), "SELECT AS STRUCT/VALUE"),
        (
            !matches!(s.flavor, ast::SelectFlavor::Standard),
            "FROM-first SELECT",
        ),
    ];
    if let Some((_, what)) = clauses.iter().find(|(present, _)| *present) {
        return refuse(*what, s);
    }
    if let ast::GroupByExpr::Expressions(_, modifiers) = &s.group_by {
        if !modifiers.is_empty() {
            return refuse("GROUP BY … WITH ROLLUP/CUBE/TOTALS", s);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::parser::Parser;

    use super::*;

    fn check(sql: &str) -> SqlResult<()> {
        let stmts = Parser::parse_sql(&PostgreSqlDialect {}, sql).unwrap();
        let ast::Statement::Query(q) = &stmts[0] else {
            panic!("not a query")
        };
        check_query(q)?;
        if let ast::SetExpr::Select(s) = &*q.body {
            check_select(s)?;
        }
        Ok(())
    }

    #[test]
    fn clauses_kura_does_not_implement_are_refused() {
        for sql in [
            "select * from t fetch first 10 percent rows only",
            "select * into t2 from t",
            "select a from t qualify a > 1",
            "select top 1 a from t",
            "select a from t order by a using ~<~",
        ] {
            let e = check(sql).expect_err(sql);
            assert!(
                matches!(e, SqlError::Unsupported { .. }),
                "{sql}: {e:?} is not 0A000"
            );
        }
    }

    #[test]
    fn clauses_kura_implements_pass() {
        for sql in [
            "select a from t order by a using <, b using > limit 3",
            "select a from t fetch first 2 rows only",
            "select a, count(*) from t group by a order by 1 desc nulls last",
        ] {
            check(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
        }
    }
}
