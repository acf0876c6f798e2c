//! Property tests: for random rows (duplicates, NULL keys, text with common
//! prefixes, composite keys) and random conditions, index scans, pieces and
//! batched lookups return exactly the row ids a brute-force filter returns, with
//! 8 KiB and 16 KiB pages and trees of several heights.

#[path = "index_harness.rs"]
mod harness;

use std::ops::Bound;

use harness::{brute_force, Db};
use kura_common::{DataType, Value};
use kura_storage::index::{BTreeIndex, KeyRange};
use proptest::prelude::*;

fn page_size() -> impl Strategy<Value = usize> {
    prop_oneof![Just(8192usize), Just(16384usize)]
}

fn int_value() -> impl Strategy<Value = Value> {
    prop_oneof![1 => Just(Value::Null), 9 => (-30i32..30).prop_map(Value::Integer)]
}

/// A bound value for an INTEGER column: exact, between two integers, out of range.
fn int_bound_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => (-35i32..35).prop_map(Value::Integer),
        2 => (-350i128..350).prop_map(|x| Value::Decimal(x, 1)),
        1 => prop_oneof![Just(Value::BigInt(1 << 40)), Just(Value::BigInt(-(1 << 40)))],
        1 => (-35.0f64..35.0).prop_map(Value::Double),
    ]
}

fn int_bound() -> BoxedStrategy<Bound<Value>> {
    prop_oneof![
        1 => Just(Bound::Unbounded),
        2 => int_bound_value().prop_map(Bound::Included),
        2 => int_bound_value().prop_map(Bound::Excluded),
    ]
    .boxed()
}

fn int_condition() -> impl Strategy<Value = KeyRange> {
    prop_oneof![
        2 => int_value().prop_map(|v| KeyRange::eq(vec![v])),
        1 => int_bound_value().prop_map(|v| KeyRange::eq(vec![v])),
        4 => (int_bound(), int_bound()).prop_map(|(l, u)| KeyRange::range(vec![], l, u)),
        1 => Just(KeyRange::all()),
    ]
}

/// Text over a tiny alphabet (NUL and blank included) so prefixes are shared and
/// trailing blanks occur.
fn text() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![Just('a'), Just('b'), Just(' '), Just('\0')],
        0..6,
    )
    .prop_map(|v| v.into_iter().collect())
}

fn text_value() -> impl Strategy<Value = Value> {
    prop_oneof![1 => Just(Value::Null), 9 => text().prop_map(Value::Text)]
}

fn text_bound() -> BoxedStrategy<Bound<Value>> {
    prop_oneof![
        1 => Just(Bound::Unbounded),
        2 => text().prop_map(|t| Bound::Included(Value::Text(t))),
        2 => text().prop_map(|t| Bound::Excluded(Value::Text(t))),
    ]
    .boxed()
}

/// Conditions on an (INTEGER, VARCHAR) key.
fn pair_condition() -> impl Strategy<Value = KeyRange> {
    prop_oneof![
        1 => int_value().prop_map(|a| KeyRange::eq(vec![a])),
        2 => (int_value(), text_value()).prop_map(|(a, b)| KeyRange::eq(vec![a, b])),
        2 => (int_value(), text_bound(), text_bound()).prop_map(|(a, l, u)| KeyRange::range(vec![a], l, u)),
        2 => (int_value(), text()).prop_map(|(a, p)| KeyRange::prefix(vec![a], &p)),
        1 => (int_bound(), int_bound()).prop_map(|(l, u)| KeyRange::range(vec![], l, u)),
    ]
}

/// Index answer for `range`, with the original predicate re-applied where the
/// index says it must be.
fn index_answer(db: &Db, index: &BTreeIndex, rows: &[Vec<Value>], range: &KeyRange) -> Vec<u64> {
    let got = index.scan(&db.bm, range).unwrap();
    if range.needs_recheck() {
        got.into_iter()
            .filter(|&r| harness::matches(&rows[r as usize], range))
            .collect()
    } else {
        got
    }
}

/// Checks scans, pieces and leaf coverage of one condition.
fn check(db: &Db, index: &BTreeIndex, rows: &[Vec<Value>], range: &KeyRange, per_piece: usize) {
    let expected = brute_force(rows, range);
    let got = index_answer(db, index, rows, range);
    assert_eq!(got, expected, "condition {range:?}");
    // Pieces are disjoint and together give the same answer in the same order.
    let pieces = index.range_pieces(&db.bm, range, per_piece).unwrap();
    let mut leaves: Vec<u64> = pieces
        .iter()
        .flat_map(|p| p.leaves.iter().copied())
        .collect();
    assert!(pieces
        .iter()
        .all(|p| !p.leaves.is_empty() && p.leaves.len() <= per_piece));
    let mut from_pieces = Vec::new();
    for p in &pieces {
        from_pieces.extend(index.scan_piece(&db.bm, p).unwrap());
    }
    if range.needs_recheck() {
        from_pieces.retain(|&r| harness::matches(&rows[r as usize], range));
    }
    assert_eq!(from_pieces, expected, "pieces of {range:?}");
    let n = leaves.len();
    leaves.sort_unstable();
    leaves.dedup();
    assert_eq!(leaves.len(), n, "a leaf appears in two pieces");
    assert!(n as u64 <= index.leaf_count);
    assert_eq!(db.bm.pinned_frames(), 0, "a page stayed pinned");
}

/// A key type and a strategy for its values (NULLs included) and for bound values
/// (which may be of another comparable type, or not exactly representable).
fn typed_column() -> impl Strategy<Value = (DataType, BoxedStrategy<Value>, BoxedStrategy<Value>)> {
    let dec = |p: u8, s: u8| DataType::Decimal {
        precision: p,
        scale: s,
    };
    prop_oneof![
        Just((
            DataType::Boolean,
            any::<bool>().prop_map(Value::Boolean).boxed(),
            any::<bool>().prop_map(Value::Boolean).boxed()
        )),
        Just((
            DataType::BigInt,
            prop_oneof![Just(i64::MIN), Just(i64::MAX), -5i64..5]
                .prop_map(Value::BigInt)
                .boxed(),
            prop_oneof![
                (-6i64..6).prop_map(Value::BigInt),
                (-60i128..60).prop_map(|x| Value::Decimal(x, 1))
            ]
            .boxed(),
        )),
        Just((
            DataType::Date,
            (-20i32..20).prop_map(Value::Date).boxed(),
            (-22i32..22).prop_map(Value::Date).boxed()
        )),
        Just((
            dec(15, 2),
            (-300i128..300).prop_map(|x| Value::Decimal(x, 2)).boxed(),
            prop_oneof![
                (-3100i128..3100).prop_map(|x| Value::Decimal(x, 3)),
                (-4i32..4).prop_map(Value::Integer),
                (-3.5f64..3.5).prop_map(Value::Double),
            ]
            .boxed(),
        )),
        Just((
            dec(30, 4),
            prop_oneof![
                Just(-(10i128.pow(29))),
                Just(10i128.pow(29)),
                -50000i128..50000
            ]
            .prop_map(|x| Value::Decimal(x, 4))
            .boxed(),
            (-600i128..600).prop_map(|x| Value::Decimal(x, 2)).boxed(),
        )),
        Just((
            DataType::Double,
            prop_oneof![
                Just(-0.0f64),
                Just(0.0),
                Just(f64::INFINITY),
                Just(f64::NEG_INFINITY),
                Just(f64::NAN),
                -4.0f64..4.0
            ]
            .prop_map(Value::Double)
            .boxed(),
            prop_oneof![
                (-5.0f64..5.0).prop_map(Value::Double),
                (-5i32..5).prop_map(Value::Integer),
                Just(Value::Double(-0.0))
            ]
            .boxed(),
        )),
        Just((
            DataType::Char(6),
            text().prop_map(Value::Text).boxed(),
            text().prop_map(Value::Text).boxed()
        )),
    ]
}

/// Rows and conditions for one typed column.
fn typed_case() -> impl Strategy<Value = (DataType, Vec<Vec<Value>>, Vec<KeyRange>)> {
    typed_column().prop_flat_map(|(t, values, bounds)| {
        let value = prop_oneof![1 => Just(Value::Null), 8 => values];
        let b = move || {
            prop_oneof![
                1 => Just(Bound::Unbounded),
                2 => bounds.clone().prop_map(Bound::Included),
                2 => bounds.clone().prop_map(Bound::Excluded),
            ]
        };
        let cond = prop_oneof![
            1 => value.clone().prop_map(|v| KeyRange::eq(vec![v])),
            3 => (b(), b()).prop_map(|(l, u)| KeyRange::range(vec![], l, u)),
        ];
        (
            Just(t),
            proptest::collection::vec(value.prop_map(|v| vec![v]), 0..2500),
            proptest::collection::vec(cond, 1..12),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn typed_keys_match_brute_force((t, rows, conditions) in typed_case(), ps in page_size()) {
        let mut db = Db::new(ps, 32);
        let index = db.build(&[t], &rows, false).unwrap();
        for c in &conditions {
            check(&db, &index, &rows, c, 2);
        }
    }

    #[test]
    fn integer_index_matches_brute_force(
        values in proptest::collection::vec(int_value(), 0..4000),
        conditions in proptest::collection::vec(int_condition(), 1..12),
        ps in page_size(),
        per_piece in 1usize..4,
    ) {
        let rows: Vec<Vec<Value>> = values.into_iter().map(|v| vec![v]).collect();
        let mut db = Db::new(ps, 32);
        let index = db.build(&[DataType::Integer], &rows, false).unwrap();
        prop_assert_eq!(index.entries, rows.len() as u64);
        for c in &conditions {
            check(&db, &index, &rows, c, per_piece);
        }
    }

    #[test]
    fn composite_index_matches_brute_force(
        rows in proptest::collection::vec((int_value(), text_value()), 0..3000),
        conditions in proptest::collection::vec(pair_condition(), 1..12),
        pad in prop_oneof![Just(0usize), Just(600usize), Just(2000usize)],
        ps in page_size(),
        per_piece in 1usize..4,
    ) {
        // A long shared pad makes separators long, inner nodes narrow and trees tall.
        let padded = |v: Value| match v {
            Value::Text(t) => Value::Text(format!("{}{t}", "p".repeat(pad))),
            other => other,
        };
        let rows: Vec<Vec<Value>> = rows.into_iter().map(|(a, b)| vec![a, padded(b)]).collect();
        let conditions: Vec<KeyRange> = conditions
            .into_iter()
            .map(|mut c| {
                c.eq = c.eq.into_iter().enumerate().map(|(i, v)| if i == 1 { padded(v) } else { v }).collect();
                if c.eq.len() == 1 {
                    c.last = match c.last {
                        kura_storage::index::LastColumn::Prefix(p) => {
                            kura_storage::index::LastColumn::Prefix(format!("{}{p}", "p".repeat(pad)))
                        }
                        kura_storage::index::LastColumn::Range { lower, upper } => {
                            let f = |b: Bound<Value>| match b {
                                Bound::Included(v) => Bound::Included(padded(v)),
                                Bound::Excluded(v) => Bound::Excluded(padded(v)),
                                Bound::Unbounded => Bound::Unbounded,
                            };
                            kura_storage::index::LastColumn::Range { lower: f(lower), upper: f(upper) }
                        }
                        other => other,
                    };
                }
                c
            })
            .collect();
        let mut db = Db::new(ps, 32);
        let types = [DataType::Integer, DataType::Varchar(None)];
        let index = db.build(&types, &rows, false).unwrap();
        for c in &conditions {
            check(&db, &index, &rows, c, per_piece);
        }
    }

    #[test]
    fn lookup_many_matches_brute_force(
        rows in proptest::collection::vec((int_value(), text_value()), 0..3000),
        probes in proptest::collection::vec(
            prop_oneof![
                3 => (int_value(), text_value()).prop_map(|(a, b)| vec![a, b]),
                1 => int_value().prop_map(|a| vec![a]),
            ],
            0..200,
        ),
        ps in page_size(),
    ) {
        let rows: Vec<Vec<Value>> = rows.into_iter().map(|(a, b)| vec![a, b]).collect();
        let mut db = Db::new(ps, 32);
        let index = db.build(&[DataType::Integer, DataType::Char(8)], &rows, false).unwrap();
        let got = index.lookup_many(&db.bm, &probes).unwrap();
        let mut expected = Vec::new();
        for (i, p) in probes.iter().enumerate() {
            if p.iter().any(|v| v.is_null()) {
                continue; // join semantics: NULL matches nothing
            }
            expected.extend(brute_force(&rows, &KeyRange::eq(p.clone())).into_iter().map(|r| (i, r)));
        }
        prop_assert_eq!(got, expected);
        prop_assert_eq!(db.bm.pinned_frames(), 0);
    }
}

/// Renders a value for comparison (NaN equals NaN; -0.0 and 0.0 stay apart).
fn exact(v: &Value) -> String {
    match v {
        Value::Double(x) => format!("D{:x}", x.to_bits()),
        other => format!("{other:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// A covering index (INTEGER key; the typed column and a text column with
    /// blanks included) gives back every stored value exactly, from range pieces
    /// and from batched probes, and so does the typed column as a key (text keys
    /// aside, whose trailing blanks the key drops).
    #[test]
    fn covering_entries_decode_to_the_stored_values(
        (t, rows, _) in typed_case(),
        texts in proptest::collection::vec(text_value(), 2500),
        ps in page_size(),
    ) {
        use kura_common::Vector;
        use kura_storage::index::{scan::EntryDecode, IndexBuilder};
        let mut db = Db::new(ps, 32);
        let text_t = DataType::Varchar(None);
        let keys: Vec<Value> = (0..rows.len()).map(|i| Value::Integer((i % 37) as i32 - 5)).collect();
        let mut b = IndexBuilder::new(vec![DataType::Integer], false)
            .unwrap()
            .with_include(vec![t, text_t])
            .unwrap();
        for (i, r) in rows.iter().enumerate() {
            b.push(&[keys[i].clone(), r[0].clone(), texts[i].clone()], i as u64).unwrap();
        }
        let mut sink = db.sink();
        let index = b.finish(&mut sink).unwrap();
        // Outputs: 0 ← included text, 1 ← typed column, 2 ← key.
        let wanted = [Some(2), Some(1), Some(0)];
        let check_row = |outs: &[Vector], k: usize, row: u64| {
            let i = row as usize;
            prop_assert_eq!(exact(&outs[0].get_value(k)), exact(&texts[i]));
            prop_assert_eq!(exact(&outs[1].get_value(k)), exact(&rows[i][0]));
            prop_assert_eq!(exact(&outs[2].get_value(k)), exact(&keys[i]));
            Ok(())
        };
        let mut seen = 0;
        for piece in index.range_pieces(&db.bm, &KeyRange::all(), 3).unwrap() {
            let mut outs = vec![Vector::new(text_t, 0), Vector::new(t, 0), Vector::new(DataType::Integer, 0)];
            let found = index
                .scan_piece_into(&db.bm, &piece, Some(EntryDecode { wanted: &wanted, outs: &mut outs }))
                .unwrap();
            prop_assert!(outs.iter().all(|o| o.len() == found.len()));
            for (k, &row) in found.iter().enumerate() {
                check_row(&outs, k, row)?;
            }
            seen += found.len();
        }
        prop_assert_eq!(seen, rows.len());
        let probes: Vec<Vec<Value>> = (-6..33).map(|k| vec![Value::Integer(k)]).collect();
        let mut outs = vec![Vector::new(text_t, 0), Vector::new(t, 0), Vector::new(DataType::Integer, 0)];
        let found = index
            .lookup_many_into(&db.bm, &probes, Some(EntryDecode { wanted: &wanted, outs: &mut outs }))
            .unwrap();
        prop_assert_eq!(found.len(), rows.len());
        for &(p, row, e) in &found {
            prop_assert_eq!(exact(&keys[row as usize]), exact(&probes[p][0]));
            check_row(&outs, e as usize, row)?;
        }
        // The typed column as the key.
        prop_assert_eq!(db.bm.pinned_frames(), 0);
        if !t.is_text() {
            // A database of its own: the builder above did not advance `db`'s pages.
            let mut db = Db::new(ps, 32);
            let index = db.build(&[t], &rows, false).unwrap();
            let mut seen = 0;
            for piece in index.range_pieces(&db.bm, &KeyRange::all(), 2).unwrap() {
                let mut outs = vec![Vector::new(t, 0)];
                let found = index
                    .scan_piece_into(&db.bm, &piece, Some(EntryDecode { wanted: &[Some(0)], outs: &mut outs }))
                    .unwrap();
                for (k, &row) in found.iter().enumerate() {
                    prop_assert_eq!(exact(&outs[0].get_value(k)), exact(&rows[row as usize][0]));
                }
                seen += found.len();
            }
            prop_assert_eq!(seen, rows.len());
        }
    }
}
