//! Shared test support: TPC-H data generated in memory (tpchgen), a session-like
//! runner over a memory catalog, and the reference answers located at run time.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use kura_common::{DataType, Value, Vector};
use kura_exec::expr::cast_value;
use kura_exec::{ExecContext, Executor, MemTable, OperatorRegistry, SourceColumn};
use kura_sql::{plan_query, MemoryCatalog, PlannerOptions, ViewDefinition};
use sqlparser::ast::Statement;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

fn dec() -> DataType {
    DataType::Decimal {
        precision: 15,
        scale: 2,
    }
}

/// TPC-H table schemas (specification types).
pub fn tpch_schema(table: &str) -> Vec<(&'static str, DataType)> {
    use DataType::*;
    match table {
        "region" => vec![
            ("r_regionkey", Integer),
            ("r_name", Char(25)),
            ("r_comment", Varchar(Some(152))),
        ],
        "nation" => vec![
            ("n_nationkey", Integer),
            ("n_name", Char(25)),
            ("n_regionkey", Integer),
            ("n_comment", Varchar(Some(152))),
        ],
        "part" => vec![
            ("p_partkey", Integer),
            ("p_name", Varchar(Some(55))),
            ("p_mfgr", Char(25)),
            ("p_brand", Char(10)),
            ("p_type", Varchar(Some(25))),
            ("p_size", Integer),
            ("p_container", Char(10)),
            ("p_retailprice", dec()),
            ("p_comment", Varchar(Some(23))),
        ],
        "supplier" => vec![
            ("s_suppkey", Integer),
            ("s_name", Char(25)),
            ("s_address", Varchar(Some(40))),
            ("s_nationkey", Integer),
            ("s_phone", Char(15)),
            ("s_acctbal", dec()),
            ("s_comment", Varchar(Some(101))),
        ],
        "partsupp" => vec![
            ("ps_partkey", Integer),
            ("ps_suppkey", Integer),
            ("ps_availqty", Integer),
            ("ps_supplycost", dec()),
            ("ps_comment", Varchar(Some(199))),
        ],
        "customer" => vec![
            ("c_custkey", Integer),
            ("c_name", Varchar(Some(25))),
            ("c_address", Varchar(Some(40))),
            ("c_nationkey", Integer),
            ("c_phone", Char(15)),
            ("c_acctbal", dec()),
            ("c_mktsegment", Char(10)),
            ("c_comment", Varchar(Some(117))),
        ],
        "orders" => vec![
            ("o_orderkey", Integer),
            ("o_custkey", Integer),
            ("o_orderstatus", Char(1)),
            ("o_totalprice", dec()),
            ("o_orderdate", Date),
            ("o_orderpriority", Char(15)),
            ("o_clerk", Char(15)),
            ("o_shippriority", Integer),
            ("o_comment", Varchar(Some(79))),
        ],
        "lineitem" => vec![
            ("l_orderkey", Integer),
            ("l_partkey", Integer),
            ("l_suppkey", Integer),
            ("l_linenumber", Integer),
            ("l_quantity", dec()),
            ("l_extendedprice", dec()),
            ("l_discount", dec()),
            ("l_tax", dec()),
            ("l_returnflag", Char(1)),
            ("l_linestatus", Char(1)),
            ("l_shipdate", Date),
            ("l_commitdate", Date),
            ("l_receiptdate", Date),
            ("l_shipinstruct", Char(25)),
            ("l_shipmode", Char(10)),
            ("l_comment", Varchar(Some(44))),
        ],
        _ => vec![],
    }
}

fn table_from_lines(name: &str, lines: impl Iterator<Item = String>) -> MemTable {
    let schema = tpch_schema(name);
    let mut cols: Vec<Vector> = schema.iter().map(|(_, t)| Vector::new(*t, 1024)).collect();
    for line in lines {
        for ((field, col), (_, t)) in line.split('|').zip(cols.iter_mut()).zip(&schema) {
            let v = cast_value(&Value::Text(field.to_string()), *t).expect("tpch value parses");
            assert!(col.push_value(&v));
        }
    }
    let columns = schema
        .iter()
        .map(|(n, t)| SourceColumn {
            name: n.to_string(),
            data_type: *t,
            nullable: false,
        })
        .collect();
    MemTable::new(name, columns, cols)
}

/// All eight TPC-H tables at scale factor `sf`, in memory.
pub fn tpch_catalog(sf: f64) -> MemoryCatalog {
    use tpchgen::generators::*;
    let mut c = MemoryCatalog::default();
    let s = |x: &dyn std::fmt::Display| x.to_string();
    c.add_table(
        table_from_lines(
            "region",
            RegionGenerator::new(sf, 1, 1).iter().map(|r| s(&r)),
        )
        .into_arc(),
    );
    c.add_table(
        table_from_lines(
            "nation",
            NationGenerator::new(sf, 1, 1).iter().map(|r| s(&r)),
        )
        .into_arc(),
    );
    c.add_table(
        table_from_lines("part", PartGenerator::new(sf, 1, 1).iter().map(|r| s(&r))).into_arc(),
    );
    c.add_table(
        table_from_lines(
            "supplier",
            SupplierGenerator::new(sf, 1, 1).iter().map(|r| s(&r)),
        )
        .into_arc(),
    );
    c.add_table(
        table_from_lines(
            "partsupp",
            PartSuppGenerator::new(sf, 1, 1).iter().map(|r| s(&r)),
        )
        .into_arc(),
    );
    c.add_table(
        table_from_lines(
            "customer",
            CustomerGenerator::new(sf, 1, 1).iter().map(|r| s(&r)),
        )
        .into_arc(),
    );
    c.add_table(
        table_from_lines(
            "orders",
            OrderGenerator::new(sf, 1, 1).iter().map(|r| s(&r)),
        )
        .into_arc(),
    );
    c.add_table(
        table_from_lines(
            "lineitem",
            LineItemGenerator::new(sf, 1, 1).iter().map(|r| s(&r)),
        )
        .into_arc(),
    );
    c
}

/// Result of one statement: column names/types and rows.
pub struct Output {
    pub columns: Vec<(String, DataType)>,
    pub rows: Vec<Vec<Value>>,
}

/// Runs a script (`;`-separated) against the catalog; returns the last query's output.
pub fn run_sql(catalog: &mut MemoryCatalog, sql: &str, join: &str) -> Result<Output, String> {
    let stmts = Parser::parse_sql(&PostgreSqlDialect {}, sql).map_err(|e| e.to_string())?;
    let mut last = Output {
        columns: vec![],
        rows: vec![],
    };
    for st in stmts {
        match st {
            Statement::Query(q) => {
                let opts = PlannerOptions {
                    join_operator: join.to_string(),
                    ..PlannerOptions::default()
                };
                let planned = plan_query(catalog, &q, None, &opts).map_err(|e| e.to_string())?;
                let ctx = ExecContext::new(Arc::new(AtomicBool::new(false)), u64::MAX);
                let reg = OperatorRegistry::default();
                let batches = Executor {
                    registry: &reg,
                    ctx: &ctx,
                }
                .run(&planned.plan)
                .map_err(|e| e.to_string())?;
                let mut rows = Vec::new();
                for b in &batches {
                    for i in 0..b.len() {
                        rows.push(b.row(i));
                    }
                }
                last = Output {
                    columns: planned.columns,
                    rows,
                };
            }
            Statement::CreateView(v) => {
                let name = v.name.to_string().to_lowercase();
                catalog.views.push((
                    name,
                    ViewDefinition {
                        sql: v.query.to_string(),
                        columns: v
                            .columns
                            .iter()
                            .map(|c| c.name.value.to_lowercase())
                            .collect(),
                    },
                ));
            }
            Statement::Drop { names, .. } => {
                for n in names {
                    let n = n.to_string().to_lowercase();
                    catalog.views.retain(|(v, _)| *v != n);
                }
            }
            other => return Err(format!("test runner does not handle {other}")),
        }
    }
    Ok(last)
}

fn find_upwards(rel: &str) -> Option<PathBuf> {
    let mut dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    loop {
        for cand in [dir.join(rel), dir.join("..").join(rel)] {
            if cand.exists() {
                return Some(cand);
            }
        }
        if !dir.pop() {
            return None;
        }
    }
}

/// Directory of the reference answers for a scale factor (env `KURA_TPCH_ANSWERS` overrides).
pub fn answers_dir(sf: &str) -> Option<PathBuf> {
    if let Ok(d) = std::env::var("KURA_TPCH_ANSWERS") {
        return Some(PathBuf::from(d));
    }
    find_upwards(&format!("shared/tpch/answers/sf{sf}"))
}

/// Directory holding the TPC-H query texts.
pub fn queries_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../kura/src/tpch/queries")
}

/// Compares an output with an answer file; `Err` describes the first difference.
pub fn compare(out: &Output, answer: &str) -> Result<(), String> {
    let mut lines = answer.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split('|').collect();
    let expected: Vec<Vec<&str>> = lines
        .filter(|l| !l.is_empty())
        .map(|l| l.split('|').collect())
        .collect();
    if out.columns.len() != header.len() {
        return Err(format!(
            "{} columns, expected {}",
            out.columns.len(),
            header.len()
        ));
    }
    if out.rows.len() != expected.len() {
        return Err(format!(
            "{} rows, expected {}",
            out.rows.len(),
            expected.len()
        ));
    }
    for (r, (got, want)) in out.rows.iter().zip(&expected).enumerate() {
        for (c, (g, w)) in got.iter().zip(want).enumerate() {
            let gs = g.to_string();
            let ok = if g.is_null() || *w == "NULL" {
                g.is_null() && *w == "NULL"
            } else {
                match (gs.trim().parse::<f64>(), w.trim().parse::<f64>()) {
                    (Ok(a), Ok(b)) => (a - b).abs() <= 0.01 || (a - b).abs() <= 1e-9 * b.abs(),
                    _ => gs.trim_end() == w.trim_end(),
                }
            };
            if !ok {
                return Err(format!(
                    "row {r} column {}: got {gs:?}, expected {w:?}",
                    header[c]
                ));
            }
        }
    }
    Ok(())
}
