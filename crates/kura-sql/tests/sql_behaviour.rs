//! SQL behaviour over small in-memory tables: joins (both implementations), NULLs,
//! aggregates, ordering, set operations, subqueries, decimals and dates, and the
//! binder's error messages.

mod common;

use common::{run_sql, Output};
use kura_common::{DataType, Value};
use kura_exec::{MemTable, SourceColumn};
use kura_sql::MemoryCatalog;

fn table(name: &str, cols: &[(&str, DataType)], rows: &[Vec<Value>]) -> MemTable {
    let columns = cols
        .iter()
        .map(|(n, t)| SourceColumn {
            name: n.to_string(),
            data_type: *t,
            nullable: true,
        })
        .collect();
    let data = cols
        .iter()
        .enumerate()
        .map(|(i, (_, t))| {
            kura_common::Vector::from_values(
                *t,
                &rows.iter().map(|r| r[i].clone()).collect::<Vec<_>>(),
            )
            .unwrap()
        })
        .collect();
    MemTable::new(name, columns, data).with_layout(2, 4)
}

fn i(v: i32) -> Value {
    Value::Integer(v)
}
fn t(s: &str) -> Value {
    Value::Text(s.into())
}
fn d(v: i128, s: u8) -> Value {
    Value::Decimal(v, s)
}
const N: Value = Value::Null;

fn catalog() -> MemoryCatalog {
    let mut c = MemoryCatalog::default();
    let dec = DataType::Decimal {
        precision: 10,
        scale: 2,
    };
    c.add_table(
        table(
            "a",
            &[
                ("id", DataType::Integer),
                ("name", DataType::Varchar(None)),
                ("amount", dec),
            ],
            &[
                vec![i(1), t("one"), d(150, 2)],
                vec![i(2), t("two"), d(250, 2)],
                vec![i(3), t("three"), N],
                vec![N, t("none"), d(100, 2)],
                vec![i(2), t("two bis"), d(5, 2)],
            ],
        )
        .into_arc(),
    );
    c.add_table(
        table(
            "b",
            &[("id", DataType::Integer), ("tag", DataType::Char(4))],
            &[
                vec![i(1), t("x")],
                vec![i(2), t("y")],
                vec![i(2), t("z")],
                vec![N, t("n")],
                vec![i(9), t("w")],
            ],
        )
        .into_arc(),
    );
    c.add_table(table("empty", &[("id", DataType::Integer)], &[]).into_arc());
    c
}

fn rows(sql: &str) -> Vec<Vec<String>> {
    rows_with(sql, "hash_join")
}

fn rows_with(sql: &str, join: &str) -> Vec<Vec<String>> {
    let mut c = catalog();
    let out: Output = run_sql(&mut c, sql, join).unwrap_or_else(|e| panic!("{sql}: {e}"));
    out.rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|v| {
                    if v.is_null() {
                        "NULL".into()
                    } else {
                        v.to_string()
                    }
                })
                .collect()
        })
        .collect()
}

fn error(sql: &str) -> String {
    let mut c = catalog();
    match run_sql(&mut c, sql, "hash_join") {
        Ok(_) => panic!("{sql} should fail"),
        Err(e) => e,
    }
}

fn flat(r: Vec<Vec<String>>) -> Vec<String> {
    r.into_iter().map(|x| x.join("|")).collect()
}

#[test]
fn inner_join_both_algorithms() {
    let q = "select a.id, a.name, b.tag from a join b on a.id = b.id order by a.name, b.tag";
    let want = vec![
        "1|one|x",
        "2|two|y",
        "2|two|z",
        "2|two bis|y",
        "2|two bis|z",
    ];
    assert_eq!(flat(rows_with(q, "hash_join")), want);
    assert_eq!(flat(rows_with(q, "nested_loop_join")), want);
}

#[test]
fn left_join_keeps_unmatched_and_null_keys() {
    let q =
        "select a.name, b.tag from a left join b on a.id = b.id and b.tag <> 'z' order by a.name";
    assert_eq!(
        flat(rows(q)),
        vec!["none|NULL", "one|x", "three|NULL", "two|y", "two bis|y"]
    );
}

#[test]
fn aggregates_with_nulls_and_empty_input() {
    assert_eq!(
        flat(rows(
            "select count(*), count(amount), sum(amount), min(amount), max(name) from a"
        )),
        vec!["5|4|5.05|0.05|two bis"]
    );
    assert_eq!(
        flat(rows("select count(*), sum(id), avg(id) from empty")),
        vec!["0|NULL|NULL"]
    );
    assert_eq!(
        flat(rows(
            "select id, count(*) from a group by id order by id nulls first"
        )),
        vec!["NULL|1", "1|1", "2|2", "3|1"]
    );
    assert_eq!(flat(rows("select count(distinct id) from b")), vec!["3"]);
    assert!(rows("select id, count(*) from empty group by id").is_empty());
}

#[test]
fn having_distinct_order_limit_offset() {
    assert_eq!(
        flat(rows("select id from a group by id having count(*) > 1")),
        vec!["2"]
    );
    assert_eq!(
        flat(rows(
            "select distinct id from b where id is not null order by id desc"
        )),
        vec!["9", "2", "1"]
    );
    assert_eq!(
        flat(rows("select name from a order by name limit 2 offset 1")),
        vec!["one", "three"]
    );
    assert_eq!(
        flat(rows(
            "select name from a order by amount desc nulls last, name"
        )),
        vec!["two", "one", "none", "two bis", "three"]
    );
    assert!(rows("select name from a limit 0").is_empty());
}

#[test]
fn subqueries_decorrelated() {
    assert_eq!(flat(rows("select name from a where exists (select * from b where b.id = a.id and b.tag = 'z') order by name")), vec!["two", "two bis"]);
    assert_eq!(
        flat(rows(
            "select name from a where not exists (select * from b where b.id = a.id) order by name"
        )),
        vec!["none", "three"]
    );
    assert_eq!(
        flat(rows(
            "select name from a where id in (select id from b) order by name"
        )),
        vec!["one", "two", "two bis"]
    );
    // NOT IN with a NULL in the subquery is never true.
    assert!(rows("select name from a where id not in (select id from b)").is_empty());
    assert_eq!(flat(rows("select name from a where id not in (select id from b where id is not null) order by name")), vec!["three"]);
    assert_eq!(
        flat(rows(
            "select name, (select count(*) from b where b.id = a.id) as c from a where id = 1"
        )),
        vec!["one|1"]
    );
    assert_eq!(
        flat(rows(
            "select name, (select count(*) from b where b.id = a.id) as c from a order by name"
        )),
        vec!["none|0", "one|1", "three|0", "two|2", "two bis|2"]
    );
    assert_eq!(
        flat(rows(
            "select name from a where amount > (select avg(amount) from a) order by name"
        )),
        vec!["one", "two"]
    );
    assert_eq!(flat(rows("select name from a where id = 3 or exists (select 1 from b where b.id = a.id and tag = 'x')  order by name")), vec!["one", "three"]);
}

#[test]
fn set_operations_ctes_values() {
    assert_eq!(
        flat(rows(
            "select id from a where id = 1 union all select id from b where id = 9 order by 1"
        )),
        vec!["1", "9"]
    );
    assert_eq!(
        flat(rows("select id from b union select id from a order by id")),
        vec!["1", "2", "3", "9", "NULL"]
    );
    assert_eq!(flat(rows("with t as (select id, count(*) c from b group by id) select t.id, t.c from t where t.c > 1")), vec!["2|2"]);
    assert_eq!(
        flat(rows(
            "select column1 + 1, column2 from (values (1, 'a'), (2, 'b')) v order by 1 desc"
        )),
        vec!["3|b", "2|a"]
    );
}

#[test]
fn decimals_and_dates() {
    assert_eq!(
        flat(rows("select 1.005 * 2, 10 / 4, 10 % 4, 1.0 / 3")),
        vec!["2.010|2|2|0.3333333333333333"]
    );
    assert_eq!(
        flat(rows(
            "select round(2.5, 0), round(-2.5, 0), round(1.2345, 2)"
        )),
        vec!["3|-3|1.23"]
    );
    assert_eq!(
        flat(rows("select date '1995-01-31' + interval '1' month, date '1996-03-01' - interval '1' day, extract(year from date '1998-12-01'), date '1998-12-01' - date '1998-11-01'")),
        vec!["1995-02-28 00:00:00|1996-02-29 00:00:00|1998|30"]
    );
    assert_eq!(
        flat(rows("select tag from b where tag = 'x   '")),
        vec!["x"]
    );
    assert_eq!(flat(rows("select case when amount > 1 then 'big' when amount is null then 'none' else 'small' end from a order by name")), vec!["small", "big", "none", "big", "small"]);
    assert_eq!(
        flat(rows(
            "select substring('hello' from 2 for 3), upper('x') || 'y', coalesce(null, 2)"
        )),
        vec!["ell|Xy|2"]
    );
}

#[test]
fn errors_name_the_problem_and_place() {
    let e = error("select nme from a");
    assert!(
        e.contains("column \"nme\" does not exist")
            && e.contains("line 1, column 8: ")
            && e.contains("(did you mean name?)"),
        "{e}"
    );
    let e = error("select *\nfrom aa");
    assert!(
        e.contains("relation \"aa\" does not exist")
            && e.contains("line 2, column 6: ")
            && e.contains("(did you mean a?)"),
        "{e}"
    );
    assert!(error("select id from a join b on a.id = b.id").contains("ambiguous"));
    assert!(error("select name, count(*) from a").contains("GROUP BY"));
    assert!(error("select 1 from a where id = date '2020-02-30'").contains("date"));
    assert!(error("select id / 0 from a").contains("division by zero"));
    assert!(error("select name + 1 from a").contains("operator does not exist"));
    // A quoted literal takes the other operand's type, as in PostgreSQL.
    assert!(error("select id + 'abc' from a").contains("invalid input syntax for type"));
    assert!(error("select id from a where sum(id) > 1").contains("not allowed in WHERE"));
    assert!(error("select id from a where id").contains("argument of WHERE must be type boolean"));
    assert!(error("select from where").contains("syntax error"));
    assert!(error("select summ(id) from a").contains("did you mean sum?"));
}

#[test]
fn later_ctes_see_earlier_ones() {
    assert_eq!(
        flat(rows(
            "with x as (select id from a where id > 1), y as (select id from x where id < 3) \
             select count(*) from y"
        )),
        vec!["2"]
    );
    // A CTE does not see the ones after it.
    assert!(
        error("with x as (select id from y), y as (select id from a) select * from x")
            .contains("relation \"y\" does not exist")
    );
}

#[test]
fn text_comparison_pads_only_char() {
    // VARCHAR keeps trailing blanks significant; CHAR(n) ignores them.
    assert_eq!(
        flat(rows(
            "select cast('ab ' as varchar(5)) = cast('ab' as varchar(5)), \
             cast('ab' as char(5)) = cast('ab ' as char(3))"
        )),
        vec!["f|t"]
    );
    assert_eq!(flat(rows("select id from b where tag = 'x   '")), vec!["1"]);
}

#[test]
fn round_to_negative_digits() {
    assert_eq!(
        flat(rows("select round(1250.0, -2), round(-1249.9, -2), round(cast(149 as double precision), -2)")),
        vec!["1300|-1200|100"]
    );
}

#[test]
fn unknown_types_are_named() {
    let e = error("select cast(id as blobby) from a");
    assert!(e.contains("type \"blobby\" does not exist"), "{e}");
    let e = error("select cast(id as frobtype) from a");
    assert!(e.contains("type \"frobtype\" does not exist"), "{e}");
}

/// The shared-result numbers of a query's plan, in plan order.
fn shared_marks(sql: &str) -> Vec<usize> {
    use sqlparser::ast::Statement;
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::parser::Parser;
    let c = catalog();
    let Statement::Query(q) = Parser::parse_sql(&PostgreSqlDialect {}, sql)
        .unwrap()
        .remove(0)
    else {
        panic!("{sql} is not a query");
    };
    let planned = kura_sql::plan_query(&c, &q, None, &Default::default()).unwrap();
    fn walk(n: &kura_exec::PlanNode, out: &mut Vec<usize>) {
        out.extend(n.shared);
        n.children().into_iter().for_each(|c| walk(c, out));
    }
    let mut out = Vec::new();
    walk(&planned.plan, &mut out);
    out
}

#[test]
fn a_subplan_used_twice_is_marked_to_run_once() {
    // A CTE used in FROM and in a scalar subquery (TPC-H Q15's shape).
    let q = "WITH s AS (SELECT id, sum(amount) AS total FROM a GROUP BY id) \
             SELECT id, total FROM s WHERE total = (SELECT max(total) FROM s)";
    assert_eq!(shared_marks(q), vec![1, 1]);
    assert_eq!(rows(q), vec![vec!["2", "2.55"]]);
    // Used once: nothing to share.
    assert!(
        shared_marks("WITH s AS (SELECT id, count(*) FROM a GROUP BY id) SELECT * FROM s")
            .is_empty()
    );
    // Two uses whose filters differ (one pushed below the aggregation) compute
    // different rows and stay apart.
    assert!(shared_marks(
        "WITH s AS (SELECT id, count(*) AS n FROM a GROUP BY id) \
         SELECT * FROM s x, s y WHERE x.id = y.id AND x.id = 1"
    )
    .is_empty());
    // Constants that compare equal but print differently are different plans.
    let q = "SELECT x.l, y.l FROM (SELECT max(length(name || 'x')) AS l FROM a) x, \
             (SELECT max(length(name || 'x  ')) AS l FROM a) y";
    assert!(shared_marks(q).is_empty());
    assert_eq!(rows(q), vec![vec!["8", "10"]]);
}
