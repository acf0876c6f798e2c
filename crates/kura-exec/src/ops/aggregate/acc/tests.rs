//! The accumulators' tests: sums, overflow, and the final values.

use proptest::prelude::*;

use super::lanes::LANE_GROUPS;
use super::*;
use crate::expr::PhysExpr;

fn bigints(x: &[i64]) -> Vector {
    let v: Vec<Value> = x.iter().map(|&v| Value::BigInt(v)).collect();
    Vector::from_values(DataType::BigInt, &v).unwrap()
}

#[test]
fn integer_sums_finish_as_columns_with_nulls_for_groups_never_seen() {
    let dec = DataType::Decimal {
        precision: 15,
        scale: 2,
    };
    let arg = crate::expr::PhysExpr::Column {
        index: 0,
        data_type: dec,
    };
    let call = |func, data_type| AggCall::simple(func, Some(arg.clone()), data_type);
    let x = Vector::from_values(
        dec,
        &[
            Value::Decimal(150, 2),
            Value::Decimal(225, 2),
            Value::Decimal(-300, 2),
        ],
    )
    .unwrap();
    let sum = call(
        AggFunc::Sum,
        DataType::Decimal {
            precision: 38,
            scale: 2,
        },
    );
    let count = call(AggFunc::Count, DataType::BigInt);
    let (mut s, mut c) = (new_acc(&sum), new_acc(&count));
    for acc in [&mut s, &mut c] {
        acc.grow(3);
        acc.update(&[0, 0, 2], Some(&x)).unwrap();
    }
    let sums = s.finish(&sum, 3).unwrap();
    let values: Vec<Value> = (0..3).map(|g| sums.get_value(g)).collect();
    assert_eq!(
        values,
        vec![Value::Decimal(375, 2), Value::Null, Value::Decimal(-300, 2)]
    );
    let counts = c.finish(&count, 3).unwrap();
    let values: Vec<Value> = (0..3).map(|g| counts.get_value(g)).collect();
    assert_eq!(
        values,
        vec![Value::BigInt(2), Value::BigInt(0), Value::BigInt(1)]
    );
    // A sum past 38 digits is left to the general path.
    assert!(sums_as_column(&[pow10(38)], &[true], 2, sum.data_type).is_none());
    assert!(sums_as_column(&[i64::MAX as i128 + 1], &[true], 0, DataType::BigInt).is_none());
}

proptest! {
    // Partial sums per lane (and their 128-bit retry after a 64-bit
    // overflow) give the plain per-row sums; counts likewise.
    #[test]
    fn lanes_sum_and_count_like_one_loop(
        rows in proptest::collection::vec((0u32..5, prop_oneof![
            -1000i64..1000,
            Just(i64::MAX),
            Just(i64::MIN),
        ]), 0..70),
        many_groups: bool,
    ) {
        let groups = if many_groups { LANE_GROUPS + 1 } else { 5 };
        let g: Vec<u32> = rows.iter().map(|r| r.0).collect();
        let x: Vec<i64> = rows.iter().map(|r| r.1).collect();
        let mut expect = vec![0i128; groups];
        let mut counts_expect = vec![0i64; groups];
        for (&gi, &v) in g.iter().zip(&x) {
            expect[gi as usize] += v as i128;
            counts_expect[gi as usize] += 1;
        }
        let mut sums = vec![0i128; groups];
        prop_assert_eq!(add_dense(&mut sums, &g, &bigints(&x)), Some(true));
        prop_assert_eq!(&sums, &expect);
        // 128-bit data (products of decimals) through 128-bit lanes.
        let wide = Vector {
            data_type: DataType::Decimal { precision: 38, scale: 0 },
            data: ColumnData::I128(x.iter().map(|&v| v as i128 * 3).collect()),
            validity: None,
        };
        let mut sums = vec![0i128; groups];
        prop_assert_eq!(add_dense(&mut sums, &g, &wide), Some(true));
        prop_assert_eq!(sums, expect.iter().map(|&e| e * 3).collect::<Vec<_>>());
        let mut counts = vec![0i64; groups];
        count_rows(&mut counts, &g);
        prop_assert_eq!(&counts, &counts_expect);
        prop_assert_eq!(
            batch_counts(groups, &g),
            (groups <= LANE_GROUPS).then(|| counts_expect.clone())
        );
    }

    // Accumulators given a batch's counts per group end as without them:
    // count(*), count(x), avg's counts and sum's groups seen.
    #[test]
    fn batch_counts_update_like_counting_rows(
        batches in proptest::collection::vec(
            proptest::collection::vec((0u32..6, -1000i64..1000), 0..50), 1..4),
    ) {
        let groups = 6;
        let int = DataType::BigInt;
        let calls = [
            (AggFunc::CountStar, None),
            (AggFunc::Count, Some(int)),
            (AggFunc::Sum, Some(int)),
            (AggFunc::Avg, Some(int)),
        ];
        for (func, arg_type) in calls {
            let call = AggCall::simple(
                func,
                arg_type.map(|t| PhysExpr::Column { index: 0, data_type: t }),
                if func == AggFunc::Avg { DataType::Double } else { int },
            );
            let (mut plain, mut counted) = (new_acc(&call), new_acc(&call));
            plain.grow(groups);
            counted.grow(groups);
            for rows in &batches {
                let g: Vec<u32> = rows.iter().map(|r| r.0).collect();
                let x = bigints(&rows.iter().map(|r| r.1).collect::<Vec<_>>());
                let arg = arg_type.map(|_| &x);
                plain.update(&g, arg).unwrap();
                let counts = batch_counts(groups, &g);
                counted.update_counted(&g, arg, counts.as_deref()).unwrap();
            }
            let (a, b) = (plain.finish(&call, groups).unwrap(), counted.finish(&call, groups).unwrap());
            prop_assert_eq!(format!("{:?}", a), format!("{:?}", b));
        }
    }
}

#[test]
fn a_128_bit_overflow_is_reported() {
    let mut sums = vec![i128::MAX - 1, 0];
    assert_eq!(
        add_dense(&mut sums, &[0, 1], &bigints(&[5, 1])),
        Some(false)
    );
}

#[test]
fn float_sums_through_lanes_match_the_row_by_row_sums() {
    use super::lanes::add_floats;
    // Few groups (lanes) and many (row by row), with a remainder after the lanes' chunks.
    for groups in [3usize, 1000] {
        let n = 1003;
        let g: Vec<u32> = (0..n).map(|i| ((i * 7) % groups) as u32).collect();
        let x: Vec<f64> = (0..n).map(|i| (i as f64) * 0.25 - 100.0).collect();
        let mut want = vec![0.0; groups];
        for (&gi, &v) in g.iter().zip(&x) {
            want[gi as usize] += v;
        }
        let mut got = vec![0.0; groups];
        add_floats(&mut got, &g, &x);
        for (a, b) in got.iter().zip(&want) {
            assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "{a} vs {b}");
        }
    }
    // A group with no row in the batch keeps its sum bit for bit (-0.0 stays -0.0).
    let mut sums = vec![-0.0, 1.0];
    add_floats(&mut sums, &[1, 1, 1, 1, 1], &[1.0; 5]);
    assert!(sums[0] == 0.0 && sums[0].is_sign_negative());
    assert_eq!(sums[1], 6.0);
}
