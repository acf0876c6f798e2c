//! Comparisons of a column with a constant (numbers, dates, text) or with another column of its type
//! evaluated straight into a selection
//! vector: one branch-free loop over the live rows, writing each row number and
//! advancing by the comparison's outcome. No boolean vector, no copy of the
//! column, and for a later conjunct no gather of its live rows (TPC-H Q6's three
//! range conjuncts over lineitem).

use kura_common::{Batch, ColumnData};

use kura_common::{DataType, Value};

use super::compare::{constant_in_width, test, trim_blanks};
use super::{BinaryOp, PhysExpr};

/// The selection `pred` leaves of `batch`'s live rows, when `pred` compares a
/// 32/64-bit integer, decimal, date or timestamp column with a non-NULL
/// constant that fits its width, or a text column with a text constant;
/// `None` for the general path. Like the general path, a NULL row is not
/// selected.
pub fn select_column_constant(pred: &PhysExpr, batch: &Batch) -> Option<Vec<u32>> {
    let (index, value, ty, op) = column_and_literal(pred)?;
    if !matches!(
        op,
        BinaryOp::Eq
            | BinaryOp::NotEq
            | BinaryOp::Lt
            | BinaryOp::LtEq
            | BinaryOp::Gt
            | BinaryOp::GtEq
    ) {
        return None;
    }
    let col = batch.columns.get(index)?;
    let valid = col.validity.as_deref();
    let live = batch.selection.as_deref();
    if let (ColumnData::Str(x), Value::Text(text)) = (&col.data, value) {
        // As `compare_text_constant`: bytewise, trailing blanks ignored when a
        // CHAR takes part; read in place at the live rows (TPC-H Q19's brands).
        let padded = matches!(col.data_type, DataType::Char(_)) || matches!(ty, DataType::Char(_));
        let c = if padded {
            trim_blanks(text.as_bytes())
        } else {
            text.as_bytes()
        };
        return Some(keep_rows(valid, live, batch.num_rows, |r| {
            let v = x.get_bytes(r);
            let o = if padded { trim_blanks(v) } else { v }.cmp(c);
            test(op, o)
        }));
    }
    let c = constant_in_width(col.data_type, value, ty)?;
    match &col.data {
        ColumnData::I32(x) => Some(by_op(op, x, c, valid, live, batch.num_rows)),
        ColumnData::I64(x) => Some(by_op(op, x, c, valid, live, batch.num_rows)),
        _ => None,
    }
}

/// `pred` as `column op literal`, the column's index first and the operator
/// flipped when the literal was on the left; `None` for any other shape.
fn column_and_literal(pred: &PhysExpr) -> Option<(usize, &Value, DataType, BinaryOp)> {
    let PhysExpr::Binary {
        op, left, right, ..
    } = pred
    else {
        return None;
    };
    match (&**left, &**right) {
        (PhysExpr::Column { index, .. }, PhysExpr::Literal { value, data_type }) => {
            Some((*index, value, *data_type, *op))
        }
        (PhysExpr::Literal { value, data_type }, PhysExpr::Column { index, .. }) => {
            Some((*index, value, *data_type, op.flip()))
        }
        _ => None,
    }
}

/// A comparison of a column with a constant in the column's own integer
/// representation: (column, operator with the column on the left, constant).
fn column_bound(pred: &PhysExpr, batch: &Batch) -> Option<(usize, BinaryOp, i64)> {
    let (index, value, ty, op) = column_and_literal(pred)?;
    let col = batch.columns.get(index)?;
    Some((index, op, constant_in_width(col.data_type, value, ty)?))
}

/// The selection `a AND b` leaves of `batch`'s live rows when the two bound
/// one integer-stored column from both sides (`l_shipdate >= DATE '1995-09-01'
/// AND l_shipdate < DATE '1995-10-01'`, a BETWEEN): one pass and one unsigned
/// compare per row, `lo <= x <= hi` as `x - lo <= hi - lo`, instead of a pass
/// per bound. `None` for anything else.
pub fn select_column_range(a: &PhysExpr, b: &PhysExpr, batch: &Batch) -> Option<Vec<u32>> {
    let (ia, oa, ca) = column_bound(a, batch)?;
    let (ib, ob, cb) = column_bound(b, batch)?;
    if ia != ib {
        return None;
    }
    // Each bound as an inclusive end; `None` (for the whole range) when a
    // strict bound leaves no value at all of i64.
    let lower = |op: BinaryOp, c: i64| match op {
        BinaryOp::GtEq => Some(Some(c)),
        BinaryOp::Gt => Some(c.checked_add(1)),
        _ => None,
    };
    let upper = |op: BinaryOp, c: i64| match op {
        BinaryOp::LtEq => Some(Some(c)),
        BinaryOp::Lt => Some(c.checked_sub(1)),
        _ => None,
    };
    let (lo, hi) = match (lower(oa, ca), upper(ob, cb)) {
        (Some(lo), Some(hi)) => (lo, hi),
        _ => (lower(ob, cb)?, upper(oa, ca)?),
    };
    let col = &batch.columns[ia];
    let (valid, live, n) = (
        col.validity.as_deref(),
        batch.selection.as_deref(),
        batch.num_rows,
    );
    let (Some(lo), Some(hi)) = (lo, hi) else {
        return Some(Vec::new());
    };
    if lo > hi {
        return Some(Vec::new());
    }
    let span = hi.wrapping_sub(lo) as u64;
    let inside = move |x: i64| (x.wrapping_sub(lo) as u64) <= span;
    match &col.data {
        ColumnData::I32(x) => {
            let x = x.as_slice();
            Some(keep_rows(valid, live, n, move |r| inside(x[r] as i64)))
        }
        ColumnData::I64(x) => {
            let x = x.as_slice();
            Some(keep_rows(valid, live, n, move |r| inside(x[r])))
        }
        _ => None,
    }
}

/// The selection `pred` leaves of `batch`'s live rows, when `pred` compares two
/// columns of one type stored in 32 or 64 bits (dates, integers, decimals of one
/// scale: TPC-H's `l_commitdate < l_receiptdate`); `None` for the general path.
pub fn select_column_column(pred: &PhysExpr, batch: &Batch) -> Option<Vec<u32>> {
    let PhysExpr::Binary {
        op, left, right, ..
    } = pred
    else {
        return None;
    };
    let (PhysExpr::Column { index: a, .. }, PhysExpr::Column { index: b, .. }) =
        (&**left, &**right)
    else {
        return None;
    };
    let (a, b) = (batch.columns.get(*a)?, batch.columns.get(*b)?);
    if a.data_type != b.data_type {
        return None;
    }
    let valid = match (a.validity.as_deref(), b.validity.as_deref()) {
        (None, None) => None,
        // Rare: both validity masks combined once.
        (x, y) => Some(
            (0..a.len())
                .map(|i| x.is_none_or(|v| v[i]) && y.is_none_or(|v| v[i]))
                .collect::<Vec<bool>>(),
        ),
    };
    let (live, n) = (batch.selection.as_deref(), batch.num_rows);
    macro_rules! pairs {
        ($x:expr, $y:expr) => {{
            // Slices moved into the tests, so each loop reads them from
            // registers and inlines its test.
            let (x, y) = ($x.as_slice(), $y.as_slice());
            let v = valid.as_deref();
            match op {
                BinaryOp::Eq => keep_rows(v, live, n, move |r| x[r] == y[r]),
                BinaryOp::NotEq => keep_rows(v, live, n, move |r| x[r] != y[r]),
                BinaryOp::Lt => keep_rows(v, live, n, move |r| x[r] < y[r]),
                BinaryOp::LtEq => keep_rows(v, live, n, move |r| x[r] <= y[r]),
                BinaryOp::Gt => keep_rows(v, live, n, move |r| x[r] > y[r]),
                BinaryOp::GtEq => keep_rows(v, live, n, move |r| x[r] >= y[r]),
                _ => return None,
            }
        }};
    }
    Some(match (&a.data, &b.data) {
        (ColumnData::I32(x), ColumnData::I32(y)) => pairs!(x, y),
        (ColumnData::I64(x), ColumnData::I64(y)) => pairs!(x, y),
        _ => return None,
    })
}

/// Dispatches once per batch to a loop specialised for the operator.
fn by_op<T: Copy + Into<i64>>(
    op: BinaryOp,
    x: &[T],
    c: i64,
    valid: Option<&[bool]>,
    live: Option<&[u32]>,
    n: usize,
) -> Vec<u32> {
    let at = move |r: usize| -> i64 { x[r].into() };
    match op {
        BinaryOp::Eq => keep_rows(valid, live, n, |r| at(r) == c),
        BinaryOp::NotEq => keep_rows(valid, live, n, |r| at(r) != c),
        BinaryOp::Lt => keep_rows(valid, live, n, |r| at(r) < c),
        BinaryOp::LtEq => keep_rows(valid, live, n, |r| at(r) <= c),
        BinaryOp::Gt => keep_rows(valid, live, n, |r| at(r) > c),
        _ => keep_rows(valid, live, n, |r| at(r) >= c),
    }
}

/// The rows (all `n`, or the `live` ones) that are non-NULL and `pass`.
#[inline(always)]
pub fn keep_rows(
    valid: Option<&[bool]>,
    live: Option<&[u32]>,
    n: usize,
    pass: impl Fn(usize) -> bool,
) -> Vec<u32> {
    let len = live.map_or(n, <[u32]>::len);
    // Not zeroed first: every slot up to the final cursor is written below.
    let mut out: Vec<u32> = Vec::with_capacity(len);
    let slots = out.as_mut_ptr();
    // Every row is written and the cursor advances by the outcome: no branch to
    // mispredict at a selectivity near one half. The cursor is a local of
    // this function, not a closure's captured variable, so it stays in a
    // register: through a reference, each row's increment waited for the
    // previous row's store.
    let mut k = 0usize;
    macro_rules! put {
        ($r:expr, $pass:expr) => {{
            let (r, pass): (u32, bool) = ($r, $pass);
            // SAFETY: k < len, the capacity: it grows by at most one per row
            // seen, and at most `len` rows are seen.
            unsafe { slots.add(k).write(r) };
            k += pass as usize;
        }};
    }
    match (live, valid) {
        (None, None) => {
            for r in 0..n {
                put!(r as u32, pass(r));
            }
        }
        (None, Some(v)) => {
            for (r, &ok) in v.iter().enumerate().take(n) {
                put!(r as u32, ok & pass(r));
            }
        }
        (Some(l), None) => {
            for &r in l {
                put!(r, pass(r as usize));
            }
        }
        (Some(l), Some(v)) => {
            for &r in l {
                put!(r, v[r as usize] & pass(r as usize));
            }
        }
    }
    // SAFETY: slots 0..k were written above (k never passes the rows seen, at
    // most `len`, the capacity), so the first k elements are initialised.
    unsafe { out.set_len(k) };
    out
}

#[cfg(test)]
mod tests {
    use kura_common::{DataType, Value, Vector};
    use proptest::prelude::*;

    use super::*;
    use crate::expr::eval_predicate;

    fn literal(value: Value, data_type: DataType) -> PhysExpr {
        PhysExpr::Literal { value, data_type }
    }

    fn compare(op: BinaryOp, l: PhysExpr, r: PhysExpr) -> PhysExpr {
        PhysExpr::Binary {
            op,
            left: Box::new(l),
            right: Box::new(r),
            data_type: DataType::Boolean,
        }
    }

    const OPS: [BinaryOp; 6] = [
        BinaryOp::Eq,
        BinaryOp::NotEq,
        BinaryOp::Lt,
        BinaryOp::LtEq,
        BinaryOp::Gt,
        BinaryOp::GtEq,
    ];

    proptest! {
        // The selection equals the general path's (a boolean vector, then its
        // TRUE rows) for every operator, either side, with NULLs and a selection.
        #[test]
        fn agrees_with_the_general_path(
            values in proptest::collection::vec(proptest::option::weighted(0.8, -5i32..5), 1..60),
            c in -6i32..6,
            op in 0usize..6,
            constant_left: bool,
            decimal: bool,
            every in 1usize..4,
        ) {
            let (ty, vals): (DataType, Vec<Value>) = if decimal {
                let ty = DataType::Decimal { precision: 12, scale: 2 };
                (ty, values.iter().map(|v| v.map_or(Value::Null, |v| Value::Decimal(v as i128 * 50, 2))).collect())
            } else {
                (DataType::Integer, values.iter().map(|v| v.map_or(Value::Null, Value::Integer)).collect())
            };
            let column = PhysExpr::Column { index: 0, data_type: ty };
            // A decimal constant with one place less than the column: rescaled.
            let constant = if decimal {
                literal(Value::Decimal(c as i128 * 5, 1), DataType::Decimal { precision: 12, scale: 1 })
            } else {
                literal(Value::Integer(c), DataType::Integer)
            };
            let pred = if constant_left {
                compare(OPS[op], constant, column)
            } else {
                compare(OPS[op], column, constant)
            };
            let mut batch = Batch::new(vec![Vector::from_values(ty, &vals).unwrap()]);
            if every > 1 {
                batch.selection = Some((0..vals.len() as u32).step_by(every).collect());
            }
            let fast = select_column_constant(&pred, &batch).expect("takes the fast path");
            // The general path: evaluate on the live rows, keep the TRUE ones.
            let live: Vec<u32> = batch.selection.clone().unwrap_or_else(|| (0..vals.len() as u32).collect());
            let general = pred.eval(&batch).unwrap();
            let expect: Vec<u32> = live
                .into_iter()
                .filter(|&r| general.get_value(r as usize) == Value::Boolean(true))
                .collect();
            prop_assert_eq!(&fast, &expect);
            let via = eval_predicate(&pred, batch).unwrap();
            let got = via.selection.unwrap_or_else(|| (0..vals.len() as u32).collect());
            prop_assert_eq!(got, expect);
        }
    }

    proptest! {
        // Two bounds of one column, in either order and either side, strict or
        // not, with NULLs, a selection and i64 extremes: the range test keeps
        // the rows the two comparisons keep one after the other.
        #[test]
        fn ranges_agree_with_their_two_comparisons(
            values in proptest::collection::vec(proptest::option::weighted(0.8, prop_oneof![
                -6i64..6, Just(i64::MIN), Just(i64::MAX)]), 1..70),
            lo in prop_oneof![-7i64..7, Just(i64::MIN), Just(i64::MAX)],
            hi in prop_oneof![-7i64..7, Just(i64::MIN), Just(i64::MAX)],
            strict_lo: bool, strict_hi: bool, upper_first: bool, constant_left: bool,
            every in 1usize..4,
        ) {
            let ty = DataType::BigInt;
            let vals: Vec<Value> = values.iter().map(|v| v.map_or(Value::Null, Value::BigInt)).collect();
            let bound = |op: BinaryOp, c: i64| {
                let (column, constant) = (PhysExpr::Column { index: 0, data_type: ty }, literal(Value::BigInt(c), ty));
                if constant_left { compare(op.flip(), constant, column) } else { compare(op, column, constant) }
            };
            let lower = bound(if strict_lo { BinaryOp::Gt } else { BinaryOp::GtEq }, lo);
            let upper = bound(if strict_hi { BinaryOp::Lt } else { BinaryOp::LtEq }, hi);
            let (a, b) = if upper_first { (upper, lower) } else { (lower, upper) };
            let mut batch = Batch::new(vec![Vector::from_values(ty, &vals).unwrap()]);
            if every > 1 {
                batch.selection = Some((0..vals.len() as u32).step_by(every).collect());
            }
            let fast = select_column_range(&a, &b, &batch).expect("takes the range path");
            let one = eval_predicate(&a, batch.clone()).unwrap();
            let both = if one.is_empty() { one } else { eval_predicate(&b, one).unwrap() };
            let expect = both.selection.unwrap_or_else(|| (0..vals.len() as u32).collect());
            prop_assert_eq!(fast, expect);
        }
    }

    #[test]
    fn ranges_need_two_bounds_of_one_column() {
        let ty = DataType::Integer;
        let batch = Batch::new(vec![
            Vector::from_values(ty, &[Value::Integer(1)]).unwrap(),
            Vector::from_values(ty, &[Value::Integer(2)]).unwrap(),
        ]);
        let col = |i| PhysExpr::Column {
            index: i,
            data_type: ty,
        };
        let c = literal(Value::Integer(0), ty);
        let ge = |i| compare(BinaryOp::GtEq, col(i), c.clone());
        let lt = |i| compare(BinaryOp::Lt, col(i), c.clone());
        assert!(select_column_range(&ge(0), &lt(1), &batch).is_none());
        assert!(select_column_range(&ge(0), &ge(0), &batch).is_none());
        assert!(select_column_range(&lt(0), &lt(0), &batch).is_none());
        assert!(select_column_range(&ge(0), &lt(0), &batch).is_some());
    }

    proptest! {
        // Two columns of one type: the same rows as the general path.
        #[test]
        fn column_pairs_agree_with_the_general_path(
            rows in proptest::collection::vec(
                (proptest::option::weighted(0.8, -3i32..3), proptest::option::weighted(0.8, -3i32..3)),
                1..50,
            ),
            op in 0usize..6,
            every in 1usize..4,
        ) {
            let col = |side: usize| {
                let v: Vec<Value> = rows
                    .iter()
                    .map(|r| [r.0, r.1][side].map_or(Value::Null, Value::Date))
                    .collect();
                Vector::from_values(DataType::Date, &v).unwrap()
            };
            let mut batch = Batch::new(vec![col(0), col(1)]);
            if every > 1 {
                batch.selection = Some((0..rows.len() as u32).step_by(every).collect());
            }
            let pred = compare(
                OPS[op],
                PhysExpr::Column { index: 0, data_type: DataType::Date },
                PhysExpr::Column { index: 1, data_type: DataType::Date },
            );
            let fast = select_column_column(&pred, &batch).expect("takes the fast path");
            let live: Vec<u32> = batch.selection.clone().unwrap_or_else(|| (0..rows.len() as u32).collect());
            let general = pred.eval(&batch).unwrap();
            let expect: Vec<u32> = live
                .into_iter()
                .filter(|&r| general.get_value(r as usize) == Value::Boolean(true))
                .collect();
            prop_assert_eq!(fast, expect);
        }
    }

    #[test]
    fn text_constants_agree_with_the_general_path() {
        // CHAR ignores trailing blanks (either side), VARCHAR keeps them; NULL
        // rows never pass; every operator, both sides, with and without a
        // selection.
        let words = [
            Some("ab"),
            Some("ab  "),
            None,
            Some("b"),
            Some(""),
            Some("a"),
            Some("abc"),
        ];
        let vals: Vec<Value> = words
            .iter()
            .map(|w| w.map_or(Value::Null, |w| Value::Text(w.into())))
            .collect();
        for col_ty in [DataType::Char(4), DataType::Varchar(None)] {
            for lit_ty in [DataType::Char(4), DataType::Varchar(None)] {
                for c in ["ab", "ab ", "", "b"] {
                    for op in OPS {
                        for constant_left in [false, true] {
                            for every in [1usize, 2] {
                                let column = PhysExpr::Column {
                                    index: 0,
                                    data_type: col_ty,
                                };
                                let constant = literal(Value::Text(c.into()), lit_ty);
                                let pred = if constant_left {
                                    compare(op, constant, column)
                                } else {
                                    compare(op, column, constant)
                                };
                                let mut batch =
                                    Batch::new(vec![Vector::from_values(col_ty, &vals).unwrap()]);
                                if every > 1 {
                                    batch.selection =
                                        Some((0..vals.len() as u32).step_by(every).collect());
                                }
                                let fast =
                                    select_column_constant(&pred, &batch).expect("fast path");
                                let live: Vec<u32> = batch
                                    .selection
                                    .clone()
                                    .unwrap_or_else(|| (0..vals.len() as u32).collect());
                                let general = pred.eval(&batch).unwrap();
                                let expect: Vec<u32> = live
                                    .into_iter()
                                    .filter(|&r| {
                                        general.get_value(r as usize) == Value::Boolean(true)
                                    })
                                    .collect();
                                assert_eq!(
                                    fast, expect,
                                    "{col_ty} {op:?} {lit_ty} '{c}' left {constant_left}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn leaves_other_shapes_to_the_general_path() {
        let int = PhysExpr::Column {
            index: 0,
            data_type: DataType::Integer,
        };
        let batch = Batch::new(vec![Vector::from_values(
            DataType::Integer,
            &[Value::Integer(1)],
        )
        .unwrap()]);
        // A constant with more decimal places than the column, a NULL constant,
        // a non-comparison, two columns.
        for pred in [
            compare(
                BinaryOp::Lt,
                int.clone(),
                literal(
                    Value::Decimal(15, 1),
                    DataType::Decimal {
                        precision: 3,
                        scale: 1,
                    },
                ),
            ),
            compare(
                BinaryOp::Lt,
                int.clone(),
                literal(Value::Null, DataType::Integer),
            ),
            compare(
                BinaryOp::Add,
                int.clone(),
                literal(Value::Integer(1), DataType::Integer),
            ),
            compare(BinaryOp::Lt, int.clone(), int.clone()),
        ] {
            assert!(select_column_constant(&pred, &batch).is_none());
        }
        // Columns of different types (an integer and a decimal) compare in the
        // general path, which rescales.
        let two = Batch::new(vec![
            Vector::from_values(DataType::Integer, &[Value::Integer(1)]).unwrap(),
            Vector::from_values(DataType::BigInt, &[Value::BigInt(1)]).unwrap(),
        ]);
        let mixed = compare(
            BinaryOp::Lt,
            int.clone(),
            PhysExpr::Column {
                index: 1,
                data_type: DataType::BigInt,
            },
        );
        assert!(select_column_column(&mixed, &two).is_none());
    }
}
