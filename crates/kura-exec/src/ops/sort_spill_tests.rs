//! Tests of the external merge sort: runs written and merged, sorts and windows
//! past their memory limit, cancel and full temporary directories.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use kura_common::Value;

use super::super::sort::SortSink;
use super::super::sort_order::{order_rows, sort_run};
use super::*;
use crate::expr::PhysExpr;
use crate::pipeline::Sink;

fn types() -> Vec<DataType> {
    vec![DataType::BigInt, DataType::Varchar(None), DataType::BigInt]
}

/// k DESC NULLS FIRST, then s: many ties, broken by arrival only.
fn keys() -> Vec<SortKey> {
    vec![
        SortKey {
            expr: PhysExpr::Column {
                index: 0,
                data_type: DataType::BigInt,
            },
            descending: true,
            nulls_first: true,
        },
        SortKey {
            expr: PhysExpr::Column {
                index: 1,
                data_type: DataType::Varchar(None),
            },
            descending: false,
            nulls_first: false,
        },
    ]
}

/// Rows `from..to` of (k, s, tag): k NULL now and then, tag the row number.
fn rows(from: usize, to: usize) -> Batch {
    let k: Vec<Value> = (from..to)
        .map(|i| match i % 89 {
            0 => Value::Null,
            _ => Value::BigInt((i * 7919 % 23) as i64),
        })
        .collect();
    let words = ["b", "a", "", "ab", "a longer text value"];
    let s: Vec<Value> = (from..to)
        .map(|i| Value::Text(words[i * 31 % 5].into()))
        .collect();
    let t: Vec<Value> = (from..to).map(|i| Value::BigInt(i as i64)).collect();
    let ty = types();
    Batch::new(vec![
        Vector::from_values(ty[0], &k).unwrap(),
        Vector::from_values(ty[1], &s).unwrap(),
        Vector::from_values(ty[2], &t).unwrap(),
    ])
}

fn tags(batches: &[Batch]) -> Vec<i64> {
    batches
        .iter()
        .flat_map(|b| (0..b.len()).map(|i| b.row(i)[2].clone()))
        .map(|v| match v {
            Value::BigInt(t) => t,
            v => panic!("{v:?}"),
        })
        .collect()
}

fn read_all(src: &dyn Source, ctx: &ExecContext) -> Vec<Batch> {
    let mut out = Vec::new();
    for m in 0..src.morsels() {
        src.produce(m, ctx, &mut |b| {
            out.push(b);
            Ok(true)
        })
        .unwrap();
    }
    out
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("kura-{name}-{}", std::process::id()))
}

fn no_files_left(ctx: &ExecContext, dir: &std::path::Path) {
    assert_eq!(ctx.spill.written(), 0);
    let left = std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0);
    assert_eq!(left, 0);
}

#[test]
fn merged_spilled_runs_equal_one_sort_with_ties_stable() {
    let dir = temp_dir("sort-runs");
    let total = 30_000;
    let expected = sort_run(&keys(), &types(), None, vec![rows(0, total)], &|| Ok(())).unwrap();
    let expected = tags(&[expected.rows]);
    // Runs of uneven sizes (one empty, one a single row), consecutive
    // slices of the input: a stable merge gives exactly the one sort.
    let cuts = [
        0, 0, 1, 700, 2_048, 4_096, 4_097, 9_000, 15_000, 22_222, 30_000,
    ];
    for (limit, memory) in [(None, 1 << 20), (None, u64::MAX), (Some(5_000), 1 << 20)] {
        let ctx = ExecContext::new(Arc::new(AtomicBool::new(false)), memory)
            .with_spill(dir.clone(), u64::MAX);
        let format = RunFormat {
            types: types(),
            keys: keys(),
            node: 0,
        };
        let runs: Vec<SpilledRun> = cuts
            .windows(2)
            .map(|w| {
                let run = order_rows(&keys(), &types(), limit, vec![rows(w[0], w[1])], &|| Ok(()))
                    .unwrap();
                write_ordered(run, &format, &ctx).unwrap()
            })
            .collect();
        let merged = merge_runs(runs, &format, limit, &ctx).unwrap().unwrap();
        let want = &expected[..limit.unwrap_or(total)];
        assert_eq!(merged.rows(), want.len());
        let src = SortedRunSource::new(merged, &format);
        let got = read_all(&src, &ctx);
        assert_eq!(tags(&got), want, "limit {limit:?}, memory {memory}");
        let stats = &ctx.stats()[0];
        assert_eq!(stats.spill_runs, 10);
        // A small memory merges a few runs at a time, in several passes.
        if memory == 1 << 20 {
            assert!(stats.spill_merge_passes > 1, "{stats:?}");
        } else {
            assert_eq!(stats.spill_merge_passes, 1, "{stats:?}");
        }
        drop(src);
        no_files_left(&ctx, &dir);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The sink's output: its batches, or its spilled file read back.
/// Two workers' states, or (`per_morsel`) one per batch, all merged only at
/// the end, as a pipeline does.
fn run_sink_with(sink: &SortSink, ctx: &ExecContext, per_morsel: bool) -> ExecResult<Vec<Batch>> {
    let states = if per_morsel { 60 } else { 2 };
    let mut locals: Vec<_> = (0..states).map(|_| sink.local()).collect();
    for (i, from) in (0..60_000).step_by(1_000).enumerate() {
        sink.consume(&mut locals[i % states], rows(from, from + 1_000), ctx)?;
    }
    for l in locals {
        sink.merge(l, ctx)?;
    }
    sink.finish(ctx)?;
    Ok(match sink.take_spilled() {
        Some(src) => read_all(&src, ctx),
        None => sink.take(),
    })
}

fn run_sink(sink: &SortSink, ctx: &ExecContext) -> ExecResult<Vec<Batch>> {
    run_sink_with(sink, ctx, false)
}

#[test]
fn a_sort_past_its_limit_spills_and_gives_the_same_rows() {
    let dir = temp_dir("sort-sink");
    for (limit, per_morsel) in [
        (None, false),
        (Some(10), false),
        (Some(45_000), false),
        (None, true),
        (Some(45_000), true),
    ] {
        let free = ExecContext::unbounded();
        let expected = run_sink(&SortSink::new(keys(), types(), limit), &free).unwrap();
        assert_eq!(free.stats().len(), 0, "nothing recorded without a node");
        let small = ExecContext::new(Arc::new(AtomicBool::new(false)), 2 << 20)
            .with_spill(dir.clone(), u64::MAX);
        let sink = SortSink::new(keys(), types(), limit).with_node(0);
        let got = run_sink_with(&sink, &small, per_morsel).unwrap();
        let spilled = small.stats().first().map_or(0, |s| s.spilled_bytes);
        // A top-10 keeps ten rows a worker: nothing to spill.
        assert_eq!(spilled > 0, limit != Some(10), "limit {limit:?}");
        let (got, expected) = (tags(&got), tags(&expected));
        assert_eq!(got.len(), limit.unwrap_or(60_000));
        // Workers' rows interleave differently: ties may differ between
        // workers, so compare the keys' order and the set of rows.
        let key_of = |t: &i64| {
            let b = rows(*t as usize, *t as usize + 1);
            (b.row(0)[0].clone(), b.row(0)[1].clone())
        };
        let gk: Vec<_> = got.iter().map(key_of).collect();
        let ek: Vec<_> = expected.iter().map(key_of).collect();
        assert_eq!(gk, ek);
        let (mut gs, mut es) = (got.clone(), expected.clone());
        gs.sort();
        es.sort();
        if limit.is_none() {
            assert_eq!(gs, es);
        }
        drop(sink);
        no_files_left(&small, &dir);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_canceled_spilled_sort_leaves_no_files() {
    let dir = temp_dir("sort-cancel");
    let flag = Arc::new(AtomicBool::new(false));
    let ctx = ExecContext::new(flag.clone(), 2 << 20).with_spill(dir.clone(), u64::MAX);
    let sink = SortSink::new(keys(), types(), None).with_node(0);
    let mut local = sink.local();
    for from in (0..40_000).step_by(1_000) {
        sink.consume(&mut local, rows(from, from + 1_000), &ctx)
            .unwrap();
    }
    assert!(ctx.spill.written() > 0, "nothing spilled");
    sink.merge(local, &ctx).unwrap();
    flag.store(true, std::sync::atomic::Ordering::Relaxed);
    let e = sink.finish(&ctx).unwrap_err();
    assert_eq!(e.sqlstate(), "57014");
    drop(sink);
    no_files_left(&ctx, &dir);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_full_temp_directory_is_disk_full() {
    let dir = temp_dir("sort-full");
    let ctx = ExecContext::new(Arc::new(AtomicBool::new(false)), 2 << 20)
        .with_spill(dir.clone(), 100_000);
    let sink = SortSink::new(keys(), types(), None).with_node(0);
    let e = run_sink(&sink, &ctx).unwrap_err();
    assert_eq!(e.sqlstate(), "53100");
    drop(sink);
    no_files_left(&ctx, &dir);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every row of a window's output, as text, sorted.
fn run_window(ctx: &ExecContext) -> ExecResult<Vec<String>> {
    use crate::plan::WindowFunc;
    let partition = vec![PhysExpr::Column {
        index: 0,
        data_type: DataType::BigInt,
    }];
    let order = vec![SortKey {
        expr: PhysExpr::Column {
            index: 2,
            data_type: DataType::BigInt,
        },
        descending: true,
        nulls_first: false,
    }];
    let functions = vec![WindowFunc::RowNumber, WindowFunc::DenseRank];
    run_window_of(ctx, partition, order, functions)
}

/// Every row of the output of a window over the rows of [`rows`], as text, sorted.
fn run_window_of(
    ctx: &ExecContext,
    partition: Vec<PhysExpr>,
    order: Vec<SortKey>,
    functions: Vec<crate::plan::WindowFunc>,
) -> ExecResult<Vec<String>> {
    use crate::ops::window::WindowSink;
    let sink = WindowSink::new(partition, order, functions, types()).with_node(0);
    let mut locals = vec![sink.local(), sink.local()];
    for (i, from) in (0..60_000).step_by(1_000).enumerate() {
        sink.consume(&mut locals[i % 2], rows(from, from + 1_000), ctx)?;
    }
    for l in locals {
        sink.merge(l, ctx)?;
    }
    sink.finish(ctx)?;
    let batches = match sink.take_spilled() {
        Some(src) => read_all(&src, ctx),
        None => sink.take(),
    };
    let mut out: Vec<String> = batches
        .iter()
        .flat_map(|b| (0..b.len()).map(|i| format!("{:?}", b.row(i))))
        .collect();
    out.sort();
    Ok(out)
}

#[test]
fn a_window_past_its_limit_gives_the_same_rows() {
    let dir = temp_dir("window-spill");
    let expected = run_window(&ExecContext::unbounded()).unwrap();
    assert_eq!(expected.len(), 60_000);
    let small = ExecContext::new(Arc::new(AtomicBool::new(false)), 2 << 20)
        .with_spill(dir.clone(), u64::MAX);
    let got = run_window(&small).unwrap();
    assert!(small.stats()[0].spilled_bytes > 0, "nothing spilled");
    assert_eq!(got, expected);
    no_files_left(&small, &dir);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A window without PARTITION BY: one partition of 60,000 rows.
fn one_partition(
    functions: Vec<crate::plan::WindowFunc>,
    order: Vec<SortKey>,
    ctx: &ExecContext,
) -> ExecResult<Vec<String>> {
    run_window_of(ctx, Vec::new(), order, functions)
}

fn tag() -> PhysExpr {
    PhysExpr::Column {
        index: 2,
        data_type: DataType::BigInt,
    }
}

/// [`keys`] (many ties: peer groups) then the unique tag: one row per peer group.
fn unique_keys() -> Vec<SortKey> {
    let mut k = keys();
    k.push(SortKey {
        expr: tag(),
        descending: false,
        nulls_first: false,
    });
    k
}

/// Functions whose values do not depend on how ties are broken: ranks and
/// aggregates over RANGE frames (whole peer groups) for an order with ties;
/// row numbers and ROWS frames for an order without.
fn streaming_functions(ties: bool) -> Vec<crate::plan::WindowFunc> {
    use crate::plan::{AggCall, AggFunc, FrameUnits, WindowFrame, WindowFunc};
    let range = WindowFrame::default_frame;
    let rows = || WindowFrame {
        units: FrameUnits::Rows,
        ..WindowFrame::default_frame()
    };
    let count = || AggCall::simple(AggFunc::Count, None, DataType::BigInt);
    let max = || AggCall::simple(AggFunc::Max, Some(tag()), DataType::BigInt);
    match ties {
        true => vec![
            WindowFunc::Rank,
            WindowFunc::DenseRank,
            WindowFunc::Aggregate(count(), range()),
            WindowFunc::Aggregate(max(), range()),
        ],
        false => vec![
            WindowFunc::RowNumber,
            WindowFunc::Aggregate(count(), rows()),
            WindowFunc::Aggregate(max(), rows()),
        ],
    }
}

#[test]
fn one_partition_past_its_limit_spills_a_run_of_peer_groups_at_a_time() {
    for (ties, order) in [(true, keys()), (false, unique_keys())] {
        let dir = temp_dir(&format!("window-one-partition-{ties}"));
        let run = |ctx: &ExecContext| one_partition(streaming_functions(ties), order.clone(), ctx);
        let expected = run(&ExecContext::unbounded()).unwrap();
        assert_eq!(expected.len(), 60_000);
        let small = ExecContext::new(Arc::new(AtomicBool::new(false)), 2 << 20)
            .with_spill(dir.clone(), u64::MAX);
        let got = run(&small).unwrap();
        assert!(small.stats()[0].spilled_bytes > 0, "nothing spilled");
        assert_eq!(got, expected, "ties: {ties}");
        no_files_left(&small, &dir);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn one_partition_reading_ahead_still_needs_it_in_memory() {
    use crate::plan::{FramePick, WindowFrame, WindowFunc};
    // last_value over the default frame looks at the current row's last peer,
    // which may lie in rows not read yet: computed in memory, so past the
    // limit it fails instead of giving a wrong answer.
    let ahead = vec![
        WindowFunc::RowNumber,
        WindowFunc::FrameValue {
            pick: FramePick::Last,
            value: tag(),
            frame: WindowFrame::default_frame(),
        },
    ];
    let small = ExecContext::new(Arc::new(AtomicBool::new(false)), 2 << 20);
    let err = one_partition(ahead, keys(), &small).unwrap_err();
    assert!(err.to_string().contains("memory"), "{err}");
}

#[test]
fn gather_picks_across_sources_with_nulls() {
    let a = Vector::from_values(
        DataType::Varchar(None),
        &[Value::Text("x".into()), Value::Null],
    )
    .unwrap();
    let b = Vector::from_values(DataType::Varchar(None), &[Value::Text("yy".into())]).unwrap();
    let g = gather(&[Some(&a), None, Some(&b)], &[(2, 0), (0, 1), (0, 0)]);
    let got: Vec<Value> = (0..3).map(|i| g.get_value(i)).collect();
    assert_eq!(
        got,
        vec![
            Value::Text("yy".into()),
            Value::Null,
            Value::Text("x".into())
        ]
    );
}
