//! TPC-H on a cluster of kura shards run by datafusion-distributed (paper 003 §2), compared
//! with single-node kura on the whole data: 3 shards of SF 0.01, 3 Flight workers on
//! localhost started in this process, kura's own query texts.
//!
//! `KURA_DIST_SF=0.1` runs it at another scale factor, `KURA_DIST_SHARDS=2` on other shards; `KURA_DIST_QUERIES=1,6` picks queries.
//! Each query's time on the cluster and on single-node kura is printed (`--nocapture`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType as ArrowType;
use datafusion::arrow::array::{
    AsArray, Date32Array, Decimal128Array, Float64Array, Int16Array, Int32Array, Int64Array,
};
use kura::{Database, OpenOptions, Value};
use kura_dist::profile::ExchangeKind;
use kura_dist::{Cluster, ShardDb};

/// The 22 TPC-H queries in kura's texts, checked against single-node kura.
const QUERIES: &[&str] = &[
    "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16", "17",
    "18", "19", "20", "21", "22",
];

/// Joins, and whether a cluster of several shards runs them on the shards.
const JOINS: &[(&str, bool)] = &[
    ("SELECT o_orderpriority, count(*), sum(l_quantity) FROM orders JOIN lineitem ON o_orderkey = l_orderkey WHERE l_shipmode = 'MAIL' GROUP BY o_orderpriority ORDER BY o_orderpriority", true),
    ("SELECT o_orderpriority, count(*) FROM orders WHERE EXISTS (SELECT 1 FROM lineitem WHERE l_orderkey = o_orderkey AND l_commitdate < l_receiptdate) GROUP BY o_orderpriority ORDER BY o_orderpriority", true),
    ("SELECT count(*) FROM orders WHERE NOT EXISTS (SELECT 1 FROM lineitem WHERE l_orderkey = o_orderkey AND l_quantity > 45)", true),
    ("SELECT s_name, count(*) FROM lineitem l1 JOIN supplier ON s_suppkey = l1.l_suppkey JOIN orders ON o_orderkey = l1.l_orderkey WHERE o_orderstatus = 'F' AND EXISTS (SELECT 1 FROM lineitem l2 WHERE l2.l_orderkey = l1.l_orderkey AND l2.l_suppkey <> l1.l_suppkey) GROUP BY s_name ORDER BY 2 DESC, s_name LIMIT 5", true),
    ("SELECT n_name FROM nation WHERE EXISTS (SELECT 1 FROM customer WHERE c_nationkey = n_nationkey AND c_acctbal > 9000) ORDER BY n_name", false),
    ("SELECT count(*), sum(o_totalprice) FROM customer JOIN orders ON c_custkey = o_custkey WHERE c_mktsegment = 'BUILDING'", false),
    // The FROM order joins CUSTOMER with ORDERS first: regrouped, ORDERS meets LINEITEM
    // on the shards (and the column order is the query's).
    ("SELECT c_name, o_orderkey, l_linenumber FROM customer, orders, lineitem WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey AND c_mktsegment = 'BUILDING' AND l_quantity > 49 ORDER BY o_orderkey, l_linenumber LIMIT 20", true),
    ("SELECT l_linenumber, c_name, o_orderkey FROM lineitem, orders, customer WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey AND c_mktsegment = 'BUILDING' AND l_quantity > 49 ORDER BY o_orderkey, l_linenumber LIMIT 20", true),
    // TPC-H Q18's shape: the IN subquery's semi join moved onto ORDERS, whose kept orders
    // then meet LINEITEM on the shards.
    ("SELECT c_name, o_orderkey, sum(l_quantity) FROM customer, orders, lineitem WHERE o_orderkey IN (SELECT l_orderkey FROM lineitem GROUP BY l_orderkey HAVING sum(l_quantity) > 250) AND c_custkey = o_custkey AND o_orderkey = l_orderkey GROUP BY c_name, o_orderkey ORDER BY o_orderkey", true),
    // Outer joins: the preserved side split with the other co-partitioned or replicated
    // (each shard gives its own rows' unmatched ones); not a replicated preserved side
    // (every shard would give its unmatched rows) nor across partitionings (TPC-H Q13).
    ("SELECT o_orderstatus, count(*), count(l_orderkey), sum(l_quantity) FROM orders LEFT JOIN lineitem ON o_orderkey = l_orderkey AND l_quantity > 48 GROUP BY o_orderstatus ORDER BY o_orderstatus", true),
    ("SELECT n_name, count(*) FROM customer LEFT JOIN nation ON c_nationkey = n_nationkey AND n_regionkey = 1 GROUP BY n_name ORDER BY n_name NULLS FIRST", true),
    ("SELECT count(*), count(o_orderkey), count(l_orderkey) FROM orders FULL JOIN lineitem ON o_orderkey = l_orderkey AND l_linenumber = 7 AND o_orderstatus = 'F'", true),
    ("SELECT n_name, count(c_custkey) FROM nation LEFT JOIN customer ON c_nationkey = n_nationkey AND c_acctbal > 9900 GROUP BY n_name ORDER BY n_name", false),
    ("SELECT c_count, count(*) FROM (SELECT c_custkey, count(o_orderkey) AS c_count FROM customer LEFT JOIN orders ON c_custkey = o_custkey AND o_comment NOT LIKE '%special%requests%' GROUP BY c_custkey) c GROUP BY c_count ORDER BY 2 DESC, 1 DESC", false),
];

/// Aggregations, and whether a cluster of several shards computes them whole on the shards
/// (every group on one shard: grouped by the split key; one shard computes every one whole).
const COMPLETE_AGGREGATES: &[(&str, bool)] = &[
    ("SELECT l_orderkey, sum(l_quantity) FROM lineitem GROUP BY l_orderkey HAVING sum(l_quantity) > 300 ORDER BY l_orderkey", true),
    ("SELECT l_orderkey, avg(l_extendedprice), count(DISTINCT l_suppkey), min(l_shipdate), max(l_comment), count(*) FROM lineitem WHERE l_orderkey < 2000 GROUP BY l_orderkey ORDER BY l_orderkey", true),
    ("SELECT o_orderkey, o_orderdate, sum(l_quantity) FROM orders, lineitem WHERE o_orderkey = l_orderkey AND o_orderkey IN (SELECT l_orderkey FROM lineitem GROUP BY l_orderkey HAVING sum(l_quantity) > 300) GROUP BY o_orderkey, o_orderdate ORDER BY o_orderkey", true),
    ("SELECT l_partkey, avg(l_quantity), count(*) FROM lineitem GROUP BY l_partkey HAVING count(*) > 40 ORDER BY l_partkey", false),
    ("SELECT avg(l_quantity), sum(l_quantity), count(*) FROM lineitem WHERE l_orderkey < 0", false),
    ("SELECT n_regionkey, sum(n_nationkey), count(*) FROM nation GROUP BY n_regionkey HAVING count(*) = 5 ORDER BY n_regionkey", true),
];

/// Whether DataFusion aggregates anything in the plan of `q` (rather than the shards).
async fn aggregates_in_datafusion(cluster: &Cluster, q: &str) -> bool {
    let plan = cluster.explain(q).await.unwrap();
    plan.lines().any(|l| l.contains("AggregateExec"))
}

#[derive(Debug, Clone)]
enum Cell {
    Null,
    Num(f64),
    Text(String),
}

fn same(a: &Cell, b: &Cell) -> bool {
    match (a, b) {
        (Cell::Null, Cell::Null) => true,
        (Cell::Num(x), Cell::Num(y)) => (x - y).abs() <= 1e-6 * x.abs().max(y.abs()) + 1e-6,
        (Cell::Text(x), Cell::Text(y)) => x.trim_end() == y.trim_end(),
        _ => false,
    }
}

fn kura_cell(v: &Value) -> Cell {
    match v {
        Value::Null => Cell::Null,
        Value::Integer(x) => Cell::Num(*x as f64),
        Value::BigInt(x) => Cell::Num(*x as f64),
        Value::Double(x) => Cell::Num(*x),
        Value::Decimal(x, s) => Cell::Num(*x as f64 / 10f64.powi(*s as i32)),
        Value::Date(d) => Cell::Text(kura_common::date::format_date(*d)),
        Value::Text(t) => Cell::Text(t.clone()),
        other => Cell::Text(format!("{other:?}")),
    }
}

fn arrow_cell(a: &dyn Array, i: usize) -> Cell {
    if a.is_null(i) {
        return Cell::Null;
    }
    let any = a.as_any();
    match a.data_type() {
        ArrowType::Int16 => Cell::Num(any.downcast_ref::<Int16Array>().unwrap().value(i) as f64),
        ArrowType::Int32 => Cell::Num(any.downcast_ref::<Int32Array>().unwrap().value(i) as f64),
        ArrowType::Int64 => Cell::Num(any.downcast_ref::<Int64Array>().unwrap().value(i) as f64),
        ArrowType::Float64 => Cell::Num(any.downcast_ref::<Float64Array>().unwrap().value(i)),
        ArrowType::Decimal128(_, s) => Cell::Num(
            any.downcast_ref::<Decimal128Array>().unwrap().value(i) as f64 / 10f64.powi(*s as i32),
        ),
        ArrowType::Date32 => Cell::Text(kura_common::date::format_date(
            any.downcast_ref::<Date32Array>().unwrap().value(i),
        )),
        ArrowType::Utf8 => Cell::Text(a.as_string::<i32>().value(i).to_string()),
        ArrowType::Utf8View => Cell::Text(a.as_string_view().value(i).to_string()),
        other => panic!("no comparison for Arrow type {other}"),
    }
}

fn arrow_rows(batches: &[RecordBatch]) -> Vec<Vec<Cell>> {
    let mut rows = Vec::new();
    for b in batches {
        for i in 0..b.num_rows() {
            rows.push(
                b.columns()
                    .iter()
                    .map(|c| arrow_cell(c.as_ref(), i))
                    .collect(),
            );
        }
    }
    rows
}

/// Asserts that the cluster answers `q` as single-node kura does.
async fn assert_same_answer(cluster: &Cluster, whole: &Database, q: &str) {
    let got = arrow_rows(&cluster.sql(q).await.unwrap());
    let want: Vec<Vec<Cell>> = whole
        .session()
        .execute(q)
        .unwrap()
        .rows()
        .iter()
        .map(|r| r.iter().map(kura_cell).collect())
        .collect();
    assert_eq!(got.len(), want.len(), "{q}");
    for (g, w) in got.iter().zip(&want) {
        assert!(
            g.len() == w.len() && g.iter().zip(w).all(|(a, b)| same(a, b)),
            "{q}: cluster {g:?}, kura {w:?}"
        );
    }
}

/// Whether the plan of `q` joins on the shards.
async fn joins_on_shards(cluster: &Cluster, q: &str) -> bool {
    let plan = cluster.explain(q).await.unwrap();
    plan.lines().any(|l| {
        l.contains("KuraShardScanExec") && (l.contains(" JOIN ") || l.contains("EXISTS ("))
    })
}

/// Runs the chosen TPC-H queries (`KURA_DIST_QUERIES`, or all 22) on the cluster and on
/// single-node kura, printing each one's times and what ran on the shards; returns the
/// differences.
async fn compare_tpch(cluster: &Cluster, whole: &Database, sf: f64, shards: usize) -> Vec<String> {
    let chosen: Vec<String> = match std::env::var("KURA_DIST_QUERIES") {
        Ok(list) => list.split(',').map(str::to_string).collect(),
        Err(_) => QUERIES.iter().map(|s| s.to_string()).collect(),
    };
    let mut failures = Vec::new();
    let (mut t_cluster, mut t_single) = (0.0, 0.0);
    for id in &chosen {
        let text = kura::tpch::run::query_text(id).expect("query id");
        let start = Instant::now();
        let got = match cluster.sql(text).await {
            Ok(b) => arrow_rows(&b),
            Err(e) => {
                let plan = cluster
                    .explain(text)
                    .await
                    .unwrap_or_else(|e| e.to_string());
                failures.push(format!("Q{id}: cluster error: {e}\n{plan}"));
                continue;
            }
        };
        let dt_cluster = start.elapsed().as_secs_f64();
        let start = Instant::now();
        // The last statement that returns rows (Q15 is CREATE VIEW; SELECT; DROP VIEW).
        let want: Vec<Vec<Cell>> = whole
            .session()
            .execute_all(text)
            .unwrap()
            .into_iter()
            .rev()
            .find(|r| r.has_rows())
            .expect("a query result")
            .rows()
            .iter()
            .map(|r| r.iter().map(kura_cell).collect())
            .collect();
        let dt_single = start.elapsed().as_secs_f64();
        t_cluster += dt_cluster;
        t_single += dt_single;
        // What ran on the shards: joins and partial aggregations in their fragments.
        let plan = cluster.explain(text).await.unwrap_or_default();
        let leaves: Vec<&str> = plan
            .lines()
            .filter(|l| l.contains("KuraShardScanExec: shard 0"))
            .collect();
        let joined = leaves
            .iter()
            .filter(|l| l.contains(" JOIN ") || l.contains("EXISTS ("))
            .count();
        let grouped = leaves
            .iter()
            .filter(|l| {
                l.contains("sum(")
                    || l.contains("count(")
                    || l.contains("min(")
                    || l.contains("max(")
            })
            .count();
        println!(
            "Q{id}: {} rows; cluster {:.3} s, single-node kura {:.3} s; {} shard leaves, {joined} joining, {grouped} aggregating",
            want.len(),
            dt_cluster,
            dt_single,
            leaves.len()
        );
        if got.len() != want.len() {
            failures.push(format!(
                "Q{id}: {} rows, kura has {}",
                got.len(),
                want.len()
            ));
            continue;
        }
        for (r, (g, w)) in got.iter().zip(&want).enumerate() {
            if g.len() != w.len() || !g.iter().zip(w).all(|(a, b)| same(a, b)) {
                failures.push(format!("Q{id} row {r}: cluster {g:?}, kura {w:?}"));
                break;
            }
        }
    }
    println!("total: cluster {t_cluster:.3} s, single-node kura {t_single:.3} s (SF {sf}, {shards} shards, localhost)");
    failures
}

fn sf() -> f64 {
    std::env::var("KURA_DIST_SF")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.01)
}

fn shards() -> usize {
    std::env::var("KURA_DIST_SHARDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3)
}

fn small() -> OpenOptions {
    OpenOptions {
        buffer_bytes: Some(256 << 20),
        max_memory: Some(1 << 30),
        ..OpenOptions::default()
    }
}

/// Starts one worker per shard on 127.0.0.1 in this process; returns their addresses.
async fn start_workers(paths: &[std::path::PathBuf]) -> Vec<String> {
    start_workers_with_dbs(paths).await.0
}

/// [`start_workers`], and the shard databases the workers serve (in shard order).
async fn start_workers_with_dbs(paths: &[std::path::PathBuf]) -> (Vec<String>, Vec<Arc<ShardDb>>) {
    let mut addrs = Vec::new();
    let mut dbs = Vec::new();
    for p in paths {
        let db = Arc::new(ShardDb::open(p, small()).expect("open shard"));
        dbs.push(db.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        addrs.push(listener.local_addr().unwrap().to_string());
        tokio::spawn(async move {
            kura_dist::worker::serve(db, listener)
                .await
                .expect("worker");
        });
    }
    (addrs, dbs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tpch_on_shards_matches_single_node_kura() {
    let (sf, shards) = (sf(), shards());
    let dir = tempfile::tempdir().unwrap();
    let loads = kura_dist::load::load_tpch(sf, shards, dir.path(), &small(), &|_, _| {})
        .expect("load shards");
    let paths: Vec<_> = loads.iter().map(|l| l.path.clone()).collect();

    let whole = Database::open(&dir.path().join("whole.db"), small()).unwrap();
    kura::tpch::load(
        &mut whole.session(),
        kura::tpch::load::Source::Generate(sf),
        &|_, _| {},
    )
    .unwrap();

    // Each shard holds a slice of the split tables, all of the replicated ones (counted
    // before the workers open the shards: a database file has one owner at a time).
    let count = |db: &Database, t: &str| {
        let r = db
            .session()
            .execute(&format!("SELECT count(*) FROM {t}"))
            .unwrap();
        match &r.rows()[0][0] {
            Value::BigInt(n) => *n,
            other => panic!("{other:?}"),
        }
    };
    let checked = [("lineitem", true), ("orders", true), ("nation", false)];
    let mut totals = Vec::new();
    for (table, split) in checked {
        let total = count(&whole, table);
        let parts: Vec<i64> = paths
            .iter()
            .map(|p| count(&Database::open(p, small()).unwrap(), table))
            .collect();
        if split {
            assert_eq!(parts.iter().sum::<i64>(), total, "{table}: {parts:?}");
            assert!(
                parts.iter().all(|&n| n > 0 && n < total),
                "{table}: {parts:?}"
            );
        } else {
            assert!(parts.iter().all(|&n| n == total), "{table}: {parts:?}");
        }
        totals.push((table, total));
    }

    // The workers given in reverse: connecting orders them by the shard each holds.
    let (mut addrs, dbs) = start_workers_with_dbs(&paths).await;
    addrs.reverse();
    let cluster = Cluster::connect(&addrs).await.expect("connect");
    assert_eq!(
        cluster.workers()[0].port(),
        addrs[shards - 1].rsplit(':').next().unwrap().parse().ok()
    );
    assert_eq!(cluster.tables().len(), 8);
    for (table, total) in totals {
        let b = cluster
            .sql(&format!("SELECT count(*) FROM {table}"))
            .await
            .unwrap();
        let got = arrow_rows(&b);
        assert!(
            same(&got[0][0], &Cell::Num(total as f64)),
            "{table}: {got:?} vs {total}"
        );
    }

    // What each shard sends: a replicated table's rows from one shard only, a split
    // table's slice from every shard (joined in DataFusion: NATION meets an aggregation,
    // ORDERS meets CUSTOMER by a key they are not split by).
    let served = |t: &str| dbs.iter().map(|d| d.rows_served(t)).collect::<Vec<u64>>();
    let (nation_before, orders_before) = (served("nation"), served("orders"));
    cluster
        .sql("SELECT n_name, s.n FROM nation JOIN (SELECT c_nationkey, count(*) AS n FROM customer GROUP BY c_nationkey) s ON n_nationkey = s.c_nationkey")
        .await
        .unwrap();
    cluster
        .sql("SELECT c_name, o_orderkey FROM customer JOIN orders ON c_custkey = o_custkey")
        .await
        .unwrap();
    let delta = |after: Vec<u64>, before: &[u64]| -> Vec<u64> {
        after.iter().zip(before).map(|(a, b)| a - b).collect()
    };
    let nation = delta(served("nation"), &nation_before);
    assert_eq!(
        nation.iter().sum::<u64>(),
        25,
        "nation rows sent by shard: {nation:?}"
    );
    assert_eq!(nation.iter().filter(|&&n| n > 0).count(), 1, "{nation:?}");
    let orders = delta(served("orders"), &orders_before);
    let orders_total = (sf * 1_500_000.0).round() as u64;
    assert_eq!(orders.iter().sum::<u64>(), orders_total, "{orders:?}");
    assert!(orders.iter().all(|&n| n > 0), "{orders:?}");

    // A query over replicated tables only runs whole on one shard, as written.
    let replicated = "SELECT r_name, count(*) FROM nation JOIN region ON n_regionkey = r_regionkey GROUP BY r_name ORDER BY r_name";
    let plan = cluster.explain(replicated).await.unwrap();
    let leaves: Vec<&str> = plan
        .lines()
        .filter(|l| l.contains("KuraShardScanExec"))
        .collect();
    assert!(
        !leaves.is_empty() && leaves.iter().all(|l| l.contains(replicated)),
        "{plan}"
    );
    // (Its rows are counted under the tables it reads.)
    let routed_before = served("nation+region");
    assert_same_answer(&cluster, &whole, replicated).await;
    let routed = delta(served("nation+region"), &routed_before);
    assert_eq!(routed.iter().sum::<u64>(), 5, "{routed:?}");

    // The profile (the cluster's EXPLAIN ANALYZE) counts what crossed each exchange and the
    // time kura spent on the shards: every order reaches the coordinator once, joined; an
    // aggregation sends a few partial states per shard.
    let join = "SELECT c_name, o_orderkey FROM customer JOIN orders ON c_custkey = o_custkey";
    let p = cluster.profile(join).await.unwrap();
    assert_eq!(p.moved(ExchangeKind::Gather).rows, orders_total, "{p}");
    assert!(
        p.shard_rows >= orders_total && p.total_moved().bytes > 0,
        "{p}"
    );
    assert!(
        p.shard_kura > Duration::ZERO && p.wall >= p.shard_kura / shards as u32,
        "{p}"
    );
    let by_flags = "SELECT l_returnflag, l_linestatus, count(*) FROM lineitem GROUP BY l_returnflag, l_linestatus";
    let p = cluster.profile(by_flags).await.unwrap();
    assert!(p.total_moved().rows <= (4 * shards + 4) as u64, "{p}");
    let text = arrow_rows(
        &cluster
            .sql(&format!("EXPLAIN ANALYZE {by_flags}"))
            .await
            .unwrap(),
    );
    assert!(
        text.iter()
            .any(|r| matches!(&r[0], Cell::Text(t) if t.starts_with("kura-cluster-profile: "))),
        "{text:?}"
    );

    // Aggregations run on the shards (phase 2): each shard sends its groups' partial
    // states, not its rows, and the answer is single-node kura's — also where a shard has
    // no row (order keys below 100 live on shard 0 only) and for each state kind.
    let lineitem_before = served("lineitem");
    let aggregates = [
        "SELECT l_returnflag, l_linestatus, sum(l_quantity), sum(l_extendedprice * (1 - l_discount)), avg(l_discount), count(*), min(l_shipdate), max(l_comment) FROM lineitem GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus",
        "SELECT sum(l_quantity), avg(l_extendedprice), count(l_orderkey), count(*), min(l_partkey) FROM lineitem WHERE l_orderkey < 100",
        "SELECT sum(CASE WHEN l_shipmode IN ('MAIL', 'SHIP') THEN l_extendedprice ELSE 0 END), count(*) FROM lineitem WHERE l_orderkey < 0",
    ];
    for q in aggregates {
        let plan = cluster.explain(q).await.unwrap();
        assert!(
            plan.lines()
                .any(|l| l.contains("KuraShardScanExec") && l.contains("count(")),
            "not aggregated on the shards: {q}\n{plan}"
        );
        assert_same_answer(&cluster, &whole, q).await;
    }
    let lineitem = delta(served("lineitem"), &lineitem_before);
    assert!(
        lineitem.iter().sum::<u64>() <= (shards * (4 + 1 + 1)) as u64,
        "lineitem rows sent by shard for three aggregations: {lineitem:?}"
    );

    // Joins on the shards where each shard can answer for its own rows: ORDERS and
    // LINEITEM by order key (co-partitioned), a split table with a replicated one; not
    // where the rows kept are a replicated table's (a semi join would keep them once per
    // shard) nor across partitionings — and every answer is single-node kura's.
    for (q, on_shards) in JOINS {
        assert_eq!(
            joins_on_shards(&cluster, q).await,
            *on_shards,
            "{q}\n{}",
            cluster.explain(q).await.unwrap()
        );
        assert_same_answer(&cluster, &whole, q).await;
    }

    // Aggregations whose groups each live on one shard run whole there, HAVING included,
    // and a semi join with them too (TPC-H Q18's subquery).
    for (q, complete) in COMPLETE_AGGREGATES {
        assert_eq!(
            !aggregates_in_datafusion(&cluster, q).await,
            *complete,
            "{q}\n{}",
            cluster.explain(q).await.unwrap()
        );
        assert_same_answer(&cluster, &whole, q).await;
    }

    let failures = compare_tpch(&cluster, &whole, sf, shards).await;
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// One worker holding one shard (the distributed engine's own overhead): every join runs on
/// it, every answer is single-node kura's.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_shard_cluster() {
    let sf = 0.01;
    let dir = tempfile::tempdir().unwrap();
    let loads = kura_dist::load::load_tpch(sf, 1, dir.path(), &small(), &|_, _| {}).expect("load");
    let paths: Vec<_> = loads.iter().map(|l| l.path.clone()).collect();
    let whole = Database::open(&dir.path().join("whole.db"), small()).unwrap();
    kura::tpch::load(
        &mut whole.session(),
        kura::tpch::load::Source::Generate(sf),
        &|_, _| {},
    )
    .unwrap();
    let addrs = start_workers(&paths).await;
    let cluster = Cluster::connect(&addrs).await.expect("connect one worker");
    // Every query reads tables the one shard holds whole: each runs there as written, one
    // leaf with the query's own text (views as common table expressions); kura's answers.
    let q = "SELECT c_name, o_orderkey FROM customer JOIN orders ON c_custkey = o_custkey ORDER BY o_orderkey LIMIT 3";
    let plan = cluster.explain(q).await.unwrap();
    assert_eq!(plan.matches("KuraShardScanExec").count(), 1, "{plan}");
    assert!(plan.contains(q), "{plan}");
    assert_same_answer(&cluster, &whole, q).await;
    let failures = compare_tpch(&cluster, &whole, sf, 1).await;
    assert!(failures.is_empty(), "routed: {}", failures.join("\n"));
    let view = "CREATE VIEW big (k, n) AS SELECT l_orderkey, count(*) FROM lineitem GROUP BY l_orderkey; SELECT count(*) FROM big WHERE n > 5; DROP VIEW big";
    let plan = cluster.explain(view).await.unwrap();
    assert!(
        plan.contains("WITH big (k, n) AS (SELECT l_orderkey"),
        "{plan}"
    );
    let got = arrow_rows(&cluster.sql(view).await.unwrap());
    let want = whole
        .session()
        .execute("SELECT count(*) FROM (SELECT l_orderkey, count(*) AS n FROM lineitem GROUP BY l_orderkey) AS big WHERE n > 5")
        .unwrap()
        .rows()[0][0]
        .clone();
    assert!(same(&got[0][0], &kura_cell(&want)), "{got:?} vs {want:?}");

    // The distributed engine itself on one shard: DataFusion plans, the shard joins.
    cluster.set_routing(false);
    for (q, _) in JOINS {
        assert!(
            joins_on_shards(&cluster, q).await,
            "{q}\n{}",
            cluster.explain(q).await.unwrap()
        );
        assert_same_answer(&cluster, &whole, q).await;
    }
    // One shard holds every group: every aggregation is computed there.
    for (q, _) in COMPLETE_AGGREGATES {
        assert!(
            !aggregates_in_datafusion(&cluster, q).await,
            "{q}\n{}",
            cluster.explain(q).await.unwrap()
        );
        assert_same_answer(&cluster, &whole, q).await;
    }
    let failures = compare_tpch(&cluster, &whole, sf, 1).await;
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let loads =
        kura_dist::load::load_tpch(0.001, 2, dir.path(), &small(), &|_, _| {}).expect("load");
    let paths: Vec<_> = loads.iter().map(|l| l.path.clone()).collect();
    let addrs = start_workers(&paths).await;

    // No worker; one worker of a two-shard cluster.
    let e = Cluster::connect(&[]).await.err().expect("refused");
    assert!(e.to_string().contains("no worker given"), "{e}");
    let e = Cluster::connect(&addrs[..1]).await.err().expect("refused");
    assert!(e.to_string().contains("holds shard 0 of 2"), "{e}");
    assert!(kura_dist::load::load_tpch(0.001, 0, dir.path(), &small(), &|_, _| {}).is_err());

    // The same shard twice.
    let twice = vec![addrs[0].clone(), addrs[0].clone()];
    let e = Cluster::connect(&twice).await.err().expect("refused");
    assert!(e.to_string().contains("both hold shard"), "{e}");

    // A file that is no shard database.
    let plain = dir.path().join("plain.db");
    Database::open(&plain, small()).unwrap();
    let e = ShardDb::open(&plain, small()).unwrap_err();
    assert!(e.to_string().contains("not a kura shard database"), "{e}");

    // A query kura's tables cannot answer is DataFusion's plain error.
    let cluster = Cluster::connect(&addrs).await.unwrap();
    let e = cluster.sql("SELECT nope FROM lineitem").await.unwrap_err();
    assert!(e.to_string().contains("nope"), "{e}");
}

/// Any file as a table of a cluster: split by ranges of a column (each value on one shard),
/// or replicated; the workers serve it like TPC-H's tables.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_loaded_as_a_split_table() {
    use kura_dist::load::{load_table, Spread};
    let dir = tempfile::tempdir().unwrap();
    let people = dir.path().join("people.csv");
    let mut text = String::from("id,city,score\n");
    for i in 1..=300 {
        let city = ["Oslo", "Kyoto", "Lima"][i % 3];
        text.push_str(&format!("{i},{city},{}\n", i % 7));
    }
    std::fs::write(&people, text).unwrap();
    let cities = dir.path().join("cities.csv");
    std::fs::write(&cities, "city,country\nOslo,NO\nKyoto,JP\nLima,PE\n").unwrap();
    let shards = dir.path().join("c");
    let opts = small();
    let loads = load_table(
        "people",
        &people,
        &Spread::By("id".into()),
        &shards,
        Some(3),
        &opts,
    )
    .unwrap();
    assert_eq!(loads.iter().map(|l| l.rows).sum::<u64>(), 300);
    assert!(loads.iter().all(|l| l.rows > 0), "{loads:?}");
    let loads = load_table("cities", &cities, &Spread::Replicated, &shards, None, &opts).unwrap();
    assert!(loads.iter().all(|l| l.rows == 3), "{loads:?}");
    // A table of that name is there already; the cluster has 3 shards.
    let again = load_table("people", &people, &Spread::Replicated, &shards, None, &opts);
    assert!(again
        .unwrap_err()
        .to_string()
        .contains("has a table people already"));
    let wrong = load_table(
        "other",
        &people,
        &Spread::Replicated,
        &shards,
        Some(2),
        &opts,
    );
    assert!(wrong
        .unwrap_err()
        .to_string()
        .contains("cluster of 3 shards"));

    let paths: Vec<_> = (0..3)
        .map(|k| kura_dist::load::shard_path(&shards, k))
        .collect();
    let addrs = start_workers(&paths).await;
    let cluster = Cluster::connect(&addrs).await.expect("connect");
    let rows = |b: &[RecordBatch]| arrow_rows(b);
    let got = rows(
        &cluster
            .sql("SELECT count(*), count(DISTINCT id), sum(score) FROM people")
            .await
            .unwrap(),
    );
    let want: f64 = (1..=300).map(|i| (i % 7) as f64).sum();
    assert!(
        same(&got[0][0], &Cell::Num(300.0)) && same(&got[0][1], &Cell::Num(300.0)),
        "{got:?}"
    );
    assert!(same(&got[0][2], &Cell::Num(want)), "{got:?} vs {want}");
    let got = rows(
        &cluster
            .sql("SELECT country, count(*) FROM people JOIN cities USING (city) GROUP BY country ORDER BY country")
            .await
            .unwrap(),
    );
    assert_eq!(got.len(), 3, "{got:?}");
    assert!(
        got.iter().all(|r| same(&r[1], &Cell::Num(100.0))),
        "{got:?}"
    );
}
