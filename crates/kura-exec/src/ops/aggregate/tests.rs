//! The hash aggregation's tests: spilled rows and partial states give the groups computed in memory.

use std::sync::atomic::AtomicBool;

use kura_common::Value;

use super::*;

fn col(index: usize, data_type: DataType) -> PhysExpr {
    PhysExpr::Column { index, data_type }
}

/// Groups by (k, t) with count(*), sum(v), count(DISTINCT v), min(t),
/// string_agg(t, ',') and bool_and(v > 0)-like bool_and over column 3.
fn sink(dir: &std::path::Path) -> (AggregateSink, ExecContext, ExecContext) {
    let text = DataType::Varchar(None);
    let calls = vec![
        AggCall::simple(AggFunc::CountStar, None, DataType::BigInt),
        AggCall::simple(
            AggFunc::Sum,
            Some(col(1, DataType::BigInt)),
            DataType::Decimal {
                precision: 38,
                scale: 0,
            },
        ),
        AggCall {
            distinct: true,
            ..AggCall::simple(
                AggFunc::Count,
                Some(col(1, DataType::BigInt)),
                DataType::BigInt,
            )
        },
        AggCall::simple(AggFunc::Min, Some(col(2, text)), text),
        AggCall {
            extra: vec![PhysExpr::Literal {
                value: Value::Text(",".into()),
                data_type: text,
            }],
            ..AggCall::simple(AggFunc::StringAgg, Some(col(2, text)), text)
        },
        AggCall::simple(
            AggFunc::BoolAnd,
            Some(col(3, DataType::Boolean)),
            DataType::Boolean,
        ),
    ];
    let s = AggregateSink::new(vec![col(0, DataType::BigInt), col(4, text)], calls);
    let free = ExecContext::unbounded();
    let small = ExecContext::new(Arc::new(AtomicBool::new(false)), 4 << 20)
        .with_spill(dir.to_path_buf(), u64::MAX);
    (s, free, small)
}

/// Row `i` of the input: 2,002 groups over keys with NULLs.
fn batch(from: usize, n: usize) -> Batch {
    let text = DataType::Varchar(None);
    let rows = from..from + n;
    let value = |v: Option<Value>| v.unwrap_or(Value::Null);
    let column = |ty: DataType, f: &dyn Fn(usize) -> Option<Value>| {
        let vals: Vec<Value> = rows.clone().map(|i| value(f(i))).collect();
        Vector::from_values(ty, &vals).unwrap()
    };
    Batch::new(vec![
        column(DataType::BigInt, &|i| {
            (i % 97 != 0).then_some(Value::BigInt((i % 2_000) as i64))
        }),
        column(DataType::BigInt, &|i| {
            (i % 13 != 0).then_some(Value::BigInt((i % 7) as i64))
        }),
        column(text, &|i| Some(Value::Text(format!("s{}", i % 5)))),
        column(DataType::Boolean, &|i| Some(Value::Boolean(i % 1000 != 3))),
        column(text, &|i| Some(Value::Text(["a", "b"][i % 2].into()))),
    ])
}

/// Every result row as text, sorted (string_agg's order is not defined:
/// its parts are sorted too).
fn run(s: &AggregateSink, ctx: &ExecContext) -> ExecResult<Vec<String>> {
    let mut locals = vec![s.local(), s.local()];
    for (i, from) in (0..200_000).step_by(1000).enumerate() {
        s.consume(&mut locals[i % 2], batch(from, 1000), ctx)?;
    }
    for l in locals {
        s.merge(l, ctx)?;
    }
    s.finish(ctx)?;
    let mut rows = Vec::new();
    let batches = match s.take_spilled() {
        Some(file) => file.read_all()?,
        None => s.take(),
    };
    for b in batches {
        for r in 0..b.len() {
            let mut vals: Vec<String> = b
                .columns
                .iter()
                .map(|c| format!("{:?}", c.get_value(r)))
                .collect();
            let mut parts: Vec<&str> = vals[6].split(',').collect();
            parts.sort();
            vals[6] = parts.join(",");
            rows.push(vals.join("|"));
        }
    }
    rows.sort();
    Ok(rows)
}

#[test]
fn a_spilled_aggregation_gives_the_same_groups() {
    let dir = std::env::temp_dir().join(format!("kura-agg-spill-{}", std::process::id()));
    let (s, free, _) = sink(&dir);
    let expected = run(&s, &free).unwrap();
    assert_eq!(expected.len(), 2_002);
    let (s, _, small) = sink(&dir.clone());
    let s = s.with_node(0);
    let got = run(&s, &small).unwrap();
    // The result went to a temporary file: none of it stays counted
    // against the limit (held, it took the room of the operators above).
    assert_eq!(small.memory.used(), 0);
    let stats = small.stats();
    assert!(stats[0].spilled_bytes > 0, "nothing spilled");
    assert_eq!(got, expected);
    // Every temporary file is gone.
    assert_eq!(small.spill.written(), 0);
    let left = std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0);
    assert_eq!(left, 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Groups by (k, t) with aggregates whose state is a few columns: all of
/// count(*), count(v), sum(v), avg(v), min(t), max(v), bool_or, and a
/// double sum and avg; or (`all` false) count(*) and sum(v) only.
fn state_sink(all: bool) -> AggregateSink {
    let text = DataType::Varchar(None);
    let big = || Some(col(1, DataType::BigInt));
    let wide = DataType::Decimal {
        precision: 38,
        scale: 0,
    };
    let double = || {
        Some(PhysExpr::Cast {
            expr: Box::new(col(1, DataType::BigInt)),
            to: DataType::Double,
        })
    };
    let mut calls = vec![
        AggCall::simple(AggFunc::CountStar, None, DataType::BigInt),
        AggCall::simple(AggFunc::Sum, big(), wide),
    ];
    if all {
        calls.extend([
            AggCall::simple(AggFunc::Count, big(), DataType::BigInt),
            AggCall::simple(AggFunc::Avg, big(), wide),
            AggCall::simple(AggFunc::Min, Some(col(2, text)), text),
            AggCall::simple(AggFunc::Max, big(), DataType::BigInt),
            AggCall::simple(
                AggFunc::BoolOr,
                Some(col(3, DataType::Boolean)),
                DataType::Boolean,
            ),
            AggCall::simple(AggFunc::Sum, double(), DataType::Double),
            AggCall::simple(AggFunc::Avg, double(), DataType::Double),
        ]);
    }
    AggregateSink::new(vec![col(0, DataType::BigInt), col(4, text)], calls)
}

/// Row `i` of the state sink's input: key `i / per_key` (NULL every 97th
/// row), t "a" or "b" by key, v NULL in every row of keys ending in 3.
fn state_batch(from: usize, n: usize, per_key: usize) -> Batch {
    let text = DataType::Varchar(None);
    let mut b = batch(from, n);
    let rows = from..from + n;
    let key = |i: usize| (i / per_key) as i64;
    let keys: Vec<Value> = rows
        .clone()
        .map(|i| {
            if i % 97 == 0 {
                Value::Null
            } else {
                Value::BigInt(key(i))
            }
        })
        .collect();
    let v: Vec<Value> = rows
        .clone()
        .map(|i| {
            if key(i) % 10 == 3 {
                Value::Null
            } else {
                Value::BigInt((i % 1_000) as i64 - 300)
            }
        })
        .collect();
    let t: Vec<Value> = rows
        .map(|i| Value::Text(["a", "b"][key(i) as usize % 2].into()))
        .collect();
    b.columns[0] = Vector::from_values(DataType::BigInt, &keys).unwrap();
    b.columns[1] = Vector::from_values(DataType::BigInt, &v).unwrap();
    b.columns[4] = Vector::from_values(text, &t).unwrap();
    b
}

/// The sorted result rows of 200,000 input rows, `per_key` rows a key.
fn run_states(s: &AggregateSink, ctx: &ExecContext, per_key: usize) -> ExecResult<Vec<String>> {
    let mut locals = vec![s.local(), s.local()];
    for (i, from) in (0..200_000).step_by(1000).enumerate() {
        s.consume(&mut locals[i % 2], state_batch(from, 1000, per_key), ctx)?;
    }
    for l in locals {
        s.merge(l, ctx)?;
    }
    s.finish(ctx)?;
    let batches = match s.take_spilled() {
        Some(file) => file.read_all()?,
        None => s.take(),
    };
    let mut rows: Vec<String> = batches
        .iter()
        .flat_map(|b| (0..b.len()).map(move |r| format!("{:?}", b.row(r))))
        .collect();
    rows.sort();
    Ok(rows)
}

#[test]
fn a_spilled_aggregation_writes_partial_states_and_gives_the_same_groups() {
    let dir = std::env::temp_dir().join(format!("kura-agg-states-{}", std::process::id()));
    for (all, per_key) in [(true, 4), (false, 8)] {
        let s = state_sink(all);
        assert!(s.spills_states);
        let expected = run_states(&s, &ExecContext::unbounded(), per_key).unwrap();
        // Every key, and the NULL key with "a" and with "b".
        assert_eq!(expected.len(), 200_000 / per_key + 2);
        assert!(expected.iter().any(|r| r.contains("Null")));
        let small = ExecContext::new(Arc::new(AtomicBool::new(false)), 1 << 20)
            .with_spill(dir.clone(), u64::MAX);
        let s = state_sink(all).with_node(0);
        let got = run_states(&s, &small, per_key).unwrap();
        assert_eq!(got, expected);
        let spilled = small.stats()[0].spilled_bytes;
        assert!(spilled > 0, "nothing spilled");
        if !all {
            // States, not rows: a partial state per key (and table it
            // was in) is a quarter of the rows' 16 bytes of key and value.
            assert!(spilled < 200_000 * 16 / 2, "{spilled} bytes spilled");
        }
        assert_eq!(small.memory.used(), 0);
        assert_eq!(small.spill.written(), 0);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_batch_past_the_share_even_alone_goes_to_disk_as_states() {
    // Another operator holds most of the memory: the aggregation is past
    // its share with an empty table, so each batch is folded on its own
    // and written out (a batch's groups alone would not fit the room).
    let dir = std::env::temp_dir().join(format!("kura-agg-alone-{}", std::process::id()));
    let expected = run_states(&state_sink(true), &ExecContext::unbounded(), 1).unwrap();
    let small = ExecContext::new(Arc::new(AtomicBool::new(false)), 1 << 20)
        .with_spill(dir.clone(), u64::MAX);
    small.memory.reserve(700 << 10, "another operator").unwrap();
    let s = state_sink(true).with_node(0);
    let got = run_states(&s, &small, 1).unwrap();
    assert_eq!(got, expected);
    assert!(small.stats()[0].spilled_bytes > 0, "nothing spilled");
    assert_eq!(small.memory.used(), 700 << 10);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn one_group_past_the_limit_still_fails() {
    let dir = std::env::temp_dir().join(format!("kura-agg-one-{}", std::process::id()));
    let text = DataType::Varchar(None);
    let calls = vec![AggCall {
        extra: vec![PhysExpr::Literal {
            value: Value::Text(",".into()),
            data_type: text,
        }],
        ..AggCall::simple(AggFunc::StringAgg, Some(col(2, text)), text)
    }];
    // One key for every row: group by (k / 1e9).
    let s = AggregateSink::new(vec![col(3, DataType::Boolean)], calls);
    let small = ExecContext::new(Arc::new(AtomicBool::new(false)), 1 << 20)
        .with_spill(dir.clone(), u64::MAX);
    let mut local = s.local();
    let mut result = Ok(());
    for from in (0..200_000).step_by(1000) {
        let mut b = batch(from, 1000);
        b.columns[3] =
            Vector::from_values(DataType::Boolean, &vec![Value::Boolean(true); 1000]).unwrap();
        result = s.consume(&mut local, b, &small);
        if result.is_err() {
            break;
        }
    }
    let result = result
        .and_then(|_| s.merge(local, &small))
        .and_then(|_| s.finish(&small));
    let e = result.unwrap_err();
    assert_eq!(e.sqlstate(), "53200");
    assert!(e.to_string().contains("single group"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `sum(v)`, `avg(v)`, `count(*)`, `sum(w)`, `avg(w)`, `sum(v)` grouped by
/// `k` (three groups): `v` has no NULLs, `w` has some in one stretch.
fn shared_sums_sink() -> AggregateSink {
    let big = DataType::BigInt;
    let dec = DataType::Decimal {
        precision: 38,
        scale: 0,
    };
    let avg = DataType::Decimal {
        precision: 38,
        scale: 6,
    };
    let calls = vec![
        AggCall::simple(AggFunc::Sum, Some(col(1, big)), dec),
        AggCall::simple(AggFunc::Avg, Some(col(1, big)), avg),
        AggCall::simple(AggFunc::CountStar, None, big),
        AggCall::simple(AggFunc::Sum, Some(col(2, big)), dec),
        AggCall::simple(AggFunc::Avg, Some(col(2, big)), avg),
        AggCall::simple(AggFunc::Sum, Some(col(1, big)), dec),
    ];
    AggregateSink::new(vec![col(0, big)], calls)
}

fn shared_sums_rows(s: &AggregateSink) -> Vec<String> {
    let ctx = ExecContext::unbounded();
    let mut locals = vec![s.local(), s.local()];
    for (i, from) in (0..60_000usize).step_by(1000).enumerate() {
        let rows = from..from + 1000;
        let ints = |f: &dyn Fn(usize) -> Value| {
            let vals: Vec<Value> = rows.clone().map(f).collect();
            Vector::from_values(DataType::BigInt, &vals).unwrap()
        };
        let b = Batch::new(vec![
            ints(&|i| Value::BigInt((i % 3) as i64)),
            ints(&|i| Value::BigInt((i * 7919 % 100_003) as i64 - 50_000)),
            ints(&|i| {
                if (20_000..21_500).contains(&i) && i % 2 == 0 {
                    Value::Null
                } else {
                    Value::BigInt(i as i64)
                }
            }),
        ]);
        s.consume(&mut locals[i % 2], b, &ctx).unwrap();
    }
    for l in locals {
        s.merge(l, &ctx).unwrap();
    }
    s.finish(&ctx).unwrap();
    let mut rows: Vec<String> = s
        .take()
        .iter()
        .flat_map(|b| {
            (0..b.len()).map(move |r| {
                let vals: Vec<String> = b
                    .columns
                    .iter()
                    .map(|c| format!("{:?}", c.get_value(r)))
                    .collect();
                vals.join("|")
            })
        })
        .collect();
    rows.sort();
    rows
}

#[test]
fn sums_of_one_argument_added_once_give_what_each_call_adds_itself() {
    let shared = shared_sums_sink();
    assert_eq!(
        shared.same_sum,
        vec![Some(0), Some(0), None, Some(3), Some(3), Some(0)]
    );
    let mut alone = shared_sums_sink();
    alone.same_sum = vec![None; 6];
    let rows = shared_sums_rows(&shared);
    assert_eq!(rows.len(), 3);
    assert_eq!(rows, shared_sums_rows(&alone));
    // Group 0's sum of v, computed here.
    let v0: i128 = (0..60_000usize)
        .filter(|i| i % 3 == 0)
        .map(|i| (i * 7919 % 100_003) as i128 - 50_000)
        .sum();
    let sum = format!("Decimal({v0}, 0)");
    assert!(
        rows[0].starts_with(&format!("BigInt(0)|{sum}|")) && rows[0].ends_with(&sum),
        "{} (expected sum {v0})",
        rows[0]
    );
}
