//! Executor-level checks: join implementations agree, the memory limit stops a
//! hash build with SQLSTATE 53200, and a canceled query stops with 57014.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use kura_common::{DataType, Value, Vector};
use kura_exec::expr::PhysExpr;
use kura_exec::{
    AggCall, AggFunc, ExecContext, Executor, JoinType, MemTable, OperatorRegistry, PlanKind,
    PlanNode, SortKey, SourceColumn,
};

fn ints(name: &str, vals: impl Iterator<Item = i32>) -> PlanNode {
    let vals: Vec<Value> = vals.map(Value::Integer).collect();
    let t = MemTable::new(
        name,
        vec![SourceColumn {
            name: "k".into(),
            data_type: DataType::Integer,
            nullable: false,
        }],
        vec![Vector::from_values(DataType::Integer, &vals).unwrap()],
    )
    .into_arc();
    let kind = PlanKind::Scan {
        table: t,
        columns: vec![0],
        zone_predicates: vec![],
        filter: None,
    };
    PlanNode::new("table_scan", kind, vec![DataType::Integer], 0.0)
}

fn join(op: &str, probe: PlanNode, build: PlanNode) -> PlanNode {
    let key = PhysExpr::column(0, DataType::Integer);
    let kind = PlanKind::Join {
        join_type: JoinType::Inner,
        probe: Box::new(probe),
        build: Box::new(build),
        probe_keys: vec![key.clone()],
        build_keys: vec![key],
        residual: None,
        null_safe: vec![],
    };
    let mut p = PlanNode::new(op, kind, vec![DataType::Integer, DataType::Integer], 0.0);
    p.number();
    p
}

fn run(plan: &PlanNode, ctx: &ExecContext) -> Result<usize, kura_exec::ExecError> {
    let reg = OperatorRegistry::default();
    Executor {
        registry: &reg,
        ctx,
    }
    .run(plan)
    .map(|b| b.iter().map(|x| x.len()).sum())
}

#[test]
fn hash_and_nested_loop_joins_agree() {
    // Keys 0..300 probe a build side holding each even key twice: 150 keys × 2 rows.
    let build = || ints("b", (0..300).filter(|k| k % 2 == 0).flat_map(|k| [k, k]));
    let ctx = ExecContext::unbounded();
    let h = run(&join("hash_join", ints("p", 0..300), build()), &ctx).unwrap();
    let n = run(&join("nested_loop_join", ints("p", 0..300), build()), &ctx).unwrap();
    assert_eq!(h, 300);
    assert_eq!(n, 300);
}

#[test]
fn a_build_past_the_memory_limit_spills_and_joins_the_same() {
    // 1 KB cannot hold 100,000 build rows: both sides go to temporary files,
    // partitioned by key (several levels deep), and are joined a partition at
    // a time.
    let ctx = ExecContext::new(Arc::new(AtomicBool::new(false)), 1024);
    for algorithm in ["hash_join", "nested_loop_join"] {
        let rows = run(
            &join(algorithm, ints("p", 0..10), ints("b", 0..100_000)),
            &ctx,
        )
        .unwrap();
        assert_eq!(rows, 10, "{algorithm}");
    }
    // Every partition gave its memory back: only the two collected results
    // (10 rows of two INTEGERs each) stay counted.
    assert_eq!(ctx.memory.used(), 2 * 10 * 2 * 4);
}

#[test]
fn sorts_past_a_small_limit_on_several_workers_spill_and_keep_every_row() {
    // Both workers fill the sort's share at once: a batch the limit refuses
    // goes to a run on disk, never an out-of-memory error, whichever worker
    // took the room first. Repeated, as the workers' interleaving varies.
    let n = 200_000;
    for round in 0..10 {
        let ctx = ExecContext::new(Arc::new(AtomicBool::new(false)), 256 << 10);
        let input = ints("t", (0..n).map(|i| (i * 7_919) % n));
        let kind = PlanKind::Sort {
            input: Box::new(input),
            keys: vec![SortKey {
                expr: PhysExpr::column(0, DataType::Integer),
                descending: false,
                nulls_first: false,
            }],
            limit: None,
        };
        let mut plan = PlanNode::new("sort", kind, vec![DataType::Integer], 0.0);
        plan.number();
        let reg = OperatorRegistry::default();
        let mut next = 0;
        // Streamed: the result is larger than the limit.
        Executor {
            registry: &reg,
            ctx: &ctx,
        }
        .run_streaming(&plan, &mut |b| {
            for r in 0..b.num_rows {
                assert_eq!(
                    b.columns[0].get_value(r),
                    Value::Integer(next),
                    "round {round}"
                );
                next += 1;
            }
            Ok(true)
        })
        .unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert_eq!(next, n, "round {round}");
    }
}

#[test]
fn aggregations_past_a_small_limit_on_several_workers_spill_and_keep_every_group() {
    // The workers fill the aggregation's share while another operator of
    // the query takes and gives back memory beside them: a batch whose
    // growth no longer fits at that moment writes the worker's groups out
    // rather than failing with 53200. Two rows per group, so that groups
    // meet again across spilled states.
    let n = 200_000;
    for round in 0..6 {
        let ctx = ExecContext::new(Arc::new(AtomicBool::new(false)), 1 << 20);
        let done = Arc::new(AtomicBool::new(false));
        let neighbour = {
            let (memory, done) = (ctx.memory.clone(), done.clone());
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    if memory.try_reserve(384 << 10) {
                        std::thread::sleep(std::time::Duration::from_micros(300));
                        memory.release(384 << 10);
                    }
                    std::thread::sleep(std::time::Duration::from_micros(100));
                }
            })
        };
        let input = ints("t", (0..n).map(|i| ((i * 7_919) % n) / 2));
        let key = PhysExpr::column(0, DataType::Integer);
        let kind = PlanKind::Aggregate {
            input: Box::new(input),
            group_by: vec![key.clone()],
            aggregates: vec![
                AggCall::simple(AggFunc::CountStar, None, DataType::BigInt),
                AggCall::simple(AggFunc::Sum, Some(key), DataType::BigInt),
            ],
            key_range: None,
        };
        let types = vec![DataType::Integer, DataType::BigInt, DataType::BigInt];
        let mut plan = PlanNode::new("hash_aggregate", kind, types, 0.0);
        plan.number();
        let reg = OperatorRegistry::default();
        let mut seen = vec![false; (n / 2) as usize];
        Executor {
            registry: &reg,
            ctx: &ctx,
        }
        .run_streaming(&plan, &mut |b| {
            for r in 0..b.num_rows {
                let Value::Integer(k) = b.columns[0].get_value(r) else {
                    panic!("round {round}: key {:?}", b.columns[0].get_value(r));
                };
                assert_eq!(b.columns[1].get_value(r), Value::BigInt(2), "round {round}");
                assert_eq!(b.columns[2].get_value(r), Value::BigInt(2 * k as i64));
                assert!(!std::mem::replace(&mut seen[k as usize], true), "{k} twice");
            }
            Ok(true)
        })
        .unwrap_or_else(|e| panic!("round {round}: {e}"));
        done.store(true, Ordering::Relaxed);
        neighbour.join().unwrap();
        assert!(seen.iter().all(|s| *s), "round {round}: a group is missing");
        assert!(
            ctx.stats().iter().any(|s| s.spilled_bytes > 0),
            "nothing spilled"
        );
    }
}

#[test]
fn cancel_stops_the_query() {
    let ctx = ExecContext::new(Arc::new(AtomicBool::new(true)), u64::MAX);
    let e = run(&join("hash_join", ints("p", 0..10), ints("b", 0..10)), &ctx).unwrap_err();
    assert_eq!(e.sqlstate(), "57014");
}

#[test]
fn unknown_operator_is_reported() {
    let ctx = ExecContext::unbounded();
    let e = run(
        &join("radix_join", ints("p", 0..10), ints("b", 0..10)),
        &ctx,
    )
    .unwrap_err();
    assert!(e.to_string().contains("hash_join"), "{e}");
}
