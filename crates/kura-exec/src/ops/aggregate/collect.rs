//! Aggregates that need all of a group's values at once: `string_agg` and
//! `array_agg` (in their ORDER BY's order) and the ordered-set aggregates `percentile_cont`,
//! `percentile_disc` and `mode`. The values are kept with their group and
//! sorted when the groups finish; the bytes they take are reported so that the
//! aggregation charges them to the query's memory limit.

use std::cmp::Ordering;

use kura_common::{DataType, Value, Vector};

use crate::error::{ExecError, ExecResult};
use crate::expr::budget;
use crate::plan::{AggCall, AggFunc};

use super::group_map::SKIP;

/// One input row kept: its group, the argument and, for `string_agg`, the
/// delimiter followed by the ORDER BY keys.
struct Row {
    group: u32,
    value: Value,
    more: Box<[Value]>,
}

/// The rows of one collecting aggregate, all groups together.
pub(crate) struct CollectAcc {
    rows: Vec<Row>,
    /// Bytes added since [`CollectAcc::take_grown`] last ran.
    grown: u64,
    /// `array_agg`: NULL values are kept, and a row counts where its first
    /// `more` value (the FILTER condition) is TRUE.
    array: bool,
}

/// The heap block malloc gives `len` bytes: a header and 16-byte rounding,
/// at least 32 (glibc's chunks). Short texts cost far more than their bytes.
fn block_bytes(len: usize) -> u64 {
    if len == 0 {
        0
    } else {
        ((len + 8 + 15) & !15).max(32) as u64
    }
}

/// What a value keeps on the heap beyond its own slot: its text's block.
fn heap_bytes(v: &Value) -> u64 {
    match v {
        Value::Text(t) => block_bytes(t.capacity()),
        _ => 0,
    }
}

impl CollectAcc {
    pub(crate) fn new(array: bool) -> CollectAcc {
        CollectAcc {
            rows: Vec::new(),
            grown: 0,
            array,
        }
    }

    /// Keeps the rows whose argument is not NULL (every aggregate here but
    /// `array_agg` skips those); `more` are the delimiter (or `array_agg`'s
    /// filter) and the order keys.
    pub(crate) fn update(&mut self, g: &[u32], arg: &Vector, more: &[Vector]) {
        for (i, &gi) in g.iter().enumerate() {
            let skip = if self.array {
                more.first()
                    .is_some_and(|f| !matches!(f.get_value(i), Value::Boolean(true)))
            } else {
                arg.is_null(i)
            };
            if skip {
                continue;
            }
            let value = arg.get_value(i);
            let more: Box<[Value]> = more.iter().map(|m| m.get_value(i)).collect();
            self.grown += heap_bytes(&value)
                + block_bytes(more.len() * std::mem::size_of::<Value>())
                + more.iter().map(heap_bytes).sum::<u64>();
            self.push(Row {
                group: gi,
                value,
                more,
            });
        }
    }

    /// Keeps a row, counting the list's growth in full: a doubling list
    /// holds up to twice its rows, and both blocks while it moves.
    fn push(&mut self, row: Row) {
        let before = self.rows.capacity();
        self.rows.push(row);
        let after = self.rows.capacity();
        if after > before {
            self.grown += ((after - before) * std::mem::size_of::<Row>()) as u64;
        }
    }

    /// The bytes kept since the last call.
    pub(crate) fn take_grown(&mut self) -> u64 {
        std::mem::take(&mut self.grown)
    }

    /// Moves `other`'s rows here, its group `g` becoming group `ids[g]`; the
    /// rows of groups marked [`SKIP`] stay in `other` (the rest of a spilled
    /// aggregation's state, folded a partition at a time).
    pub(crate) fn merge(&mut self, other: &mut CollectAcc, ids: &[u32]) {
        let mut kept = Vec::new();
        for mut r in std::mem::take(&mut other.rows) {
            match ids[r.group as usize] {
                SKIP => kept.push(r),
                to => {
                    r.group = to;
                    self.push(r);
                }
            }
        }
        other.rows = kept;
    }

    /// The result of every group, as a vector of `call.data_type`. Results
    /// (a `string_agg` of every row) are counted as values built by
    /// expressions, so the caller runs this in a [`budget::ValueScope`].
    pub(crate) fn finish(&self, call: &AggCall, groups: usize) -> ExecResult<Vector> {
        // Each group's rows, in arrival order.
        budget::charge(self.rows.len() * std::mem::size_of::<&Row>() + groups * 24)?;
        let mut by_group: Vec<Vec<&Row>> = vec![Vec::new(); groups];
        for r in &self.rows {
            by_group
                .get_mut(r.group as usize)
                .ok_or_else(|| ExecError::Internal("collected row of no group".into()))?
                .push(r);
        }
        let fraction = match call.func {
            AggFunc::PercentileCont | AggFunc::PercentileDisc => {
                match call.extra.first().and_then(constant) {
                    Some(Value::Null) | None => None,
                    Some(v) => {
                        let f = v.as_f64().unwrap_or(f64::NAN);
                        if !(0.0..=1.0).contains(&f) {
                            return Err(ExecError::OutOfRange(format!(
                                "percentile value {f} is not between 0 and 1"
                            )));
                        }
                        Some(f)
                    }
                }
            }
            _ => None,
        };
        let descending = call.order.first().is_some_and(|k| k.descending);
        let mut out = Vector::new(call.data_type, groups);
        for mut rows in by_group {
            let v = match call.func {
                AggFunc::StringAgg => {
                    // A stable sort: rows equal on the keys keep their arrival order.
                    rows.sort_by(|a, b| order_keys(call, &a.more[1..], &b.more[1..]));
                    if call.distinct {
                        distinct_rows(call, &mut rows, true);
                    }
                    string_agg(&rows)?
                }
                AggFunc::ArrayAgg => {
                    rows.sort_by(|a, b| order_keys(call, &a.more[1..], &b.more[1..]));
                    if call.distinct {
                        distinct_rows(call, &mut rows, false);
                    }
                    if rows.is_empty() {
                        Value::Null
                    } else {
                        // The values' text, quoted and separated: about their
                        // bytes and a few more each.
                        let guess: u64 = rows.iter().map(|r| heap_bytes(&r.value) + 4).sum();
                        budget::check_room(guess as usize)?;
                        let values: Vec<Value> = rows.iter().map(|r| r.value.clone()).collect();
                        let text = kura_common::array::format_values(&values);
                        drop(values);
                        budget::charge(text.capacity())?;
                        Value::Text(text)
                    }
                }
                AggFunc::JsonAgg | AggFunc::JsonObjectAgg => {
                    let skip = call.extra.len();
                    rows.sort_by(|a, b| order_keys(call, &a.more[skip..], &b.more[skip..]));
                    let guess: u64 = rows
                        .iter()
                        .map(|r| {
                            heap_bytes(&r.value) + r.more.iter().map(heap_bytes).sum::<u64>() + 8
                        })
                        .sum();
                    budget::check_room(guess as usize)?;
                    json_agg(call, &rows)?
                }
                AggFunc::PercentileCont => {
                    let mut xs: Vec<f64> = rows.iter().filter_map(|r| r.value.as_f64()).collect();
                    xs.sort_by(|a, b| a.total_cmp(b));
                    if descending {
                        xs.reverse();
                    }
                    match (fraction, xs.is_empty()) {
                        (Some(f), false) => Value::Double(percentile_cont(&xs, f)),
                        _ => Value::Null,
                    }
                }
                AggFunc::PercentileDisc | AggFunc::Mode => {
                    let t = call
                        .arg
                        .as_ref()
                        .map_or(DataType::Boolean, |a| a.data_type());
                    rows.sort_by(|a, b| {
                        let o = a.value.total_cmp_of(&b.value, t);
                        if descending {
                            o.reverse()
                        } else {
                            o
                        }
                    });
                    if rows.is_empty() {
                        Value::Null
                    } else if call.func == AggFunc::Mode {
                        mode(&rows, t)
                    } else {
                        match fraction {
                            // PostgreSQL: the first value whose position reaches
                            // the fraction of the rows.
                            Some(f) => {
                                let at = ((f * rows.len() as f64).ceil() as usize).max(1);
                                rows[at.min(rows.len()) - 1].value.clone()
                            }
                            None => Value::Null,
                        }
                    }
                }
                other => {
                    return Err(ExecError::Internal(format!(
                        "{other:?} does not collect its values"
                    )))
                }
            };
            let v = crate::expr::cast_value(&v, call.data_type)?;
            if !out.push_value(&v) {
                return Err(ExecError::Internal(format!(
                    "aggregate value {v} is not {}",
                    call.data_type
                )));
            }
        }
        Ok(out)
    }
}

/// `json_agg`'s array or `json_object_agg`'s object of a group's rows
/// (NULL for none): json as PostgreSQL's json aggregates write it
/// (`[1, null]`, `{ "a" : 1 }`), jsonb canonical (the caller's cast).
fn json_agg(call: &AggCall, rows: &[&Row]) -> ExecResult<Value> {
    if rows.is_empty() {
        return Ok(Value::Null);
    }
    let json = |v: &Value| match v {
        Value::Text(t) => t.clone(),
        _ => "null".to_string(),
    };
    let text = if call.func == AggFunc::JsonAgg {
        let items: Vec<String> = rows.iter().map(|r| json(&r.value)).collect();
        format!("[{}]", items.join(", "))
    } else {
        let mut items = Vec::with_capacity(rows.len());
        for r in rows {
            let Value::Text(k) = &r.value else {
                return Err(ExecError::InvalidArgument {
                    code: "22023",
                    message: "field name must not be null".into(),
                });
            };
            let mut key = String::new();
            kura_common::json::write_string(k, &mut key);
            items.push(format!("{key} : {}", json(&r.more[1])));
        }
        format!("{{ {} }}", items.join(", "))
    };
    budget::charge(text.capacity())?;
    Ok(Value::Text(text))
}

/// The value of a constant argument (a literal, possibly cast).
fn constant(e: &crate::expr::PhysExpr) -> Option<Value> {
    match e {
        crate::expr::PhysExpr::Literal { value, .. } => Some(value.clone()),
        _ => None,
    }
}

/// Rows compared on the call's ORDER BY keys.
fn order_keys(call: &AggCall, a: &[Value], b: &[Value]) -> Ordering {
    for ((x, y), k) in a.iter().zip(b).zip(&call.order) {
        let o = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) if k.nulls_first => Ordering::Less,
            (true, false) => Ordering::Greater,
            (false, true) if k.nulls_first => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) if k.descending => y.total_cmp_of(x, k.expr.data_type()),
            (false, false) => x.total_cmp_of(y, k.expr.data_type()),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// DISTINCT: keeps one of each set of rows with equal arguments (the value,
/// and `string_agg`'s delimiter when `delimiter`), in the order of the call's
/// ORDER BY keys and then of the value — as PostgreSQL, which sorts to find
/// them, gives them without an ORDER BY. The keys are arguments (the binder
/// sees to it), so equal rows are neighbours once sorted so.
fn distinct_rows(call: &AggCall, rows: &mut Vec<&Row>, delimiter: bool) {
    let t = call
        .arg
        .as_ref()
        .map_or(DataType::Boolean, |a| a.data_type());
    let args = |r: &Row| -> Vec<Value> {
        let mut v = vec![r.value.clone()];
        if delimiter {
            v.push(r.more[0].clone());
        }
        v
    };
    let cmp_args = |a: &Row, b: &Row| {
        args(a)
            .iter()
            .zip(args(b).iter())
            .map(|(x, y)| x.total_cmp_of(y, t))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    };
    // `more` holds the delimiter (array_agg: its filter), then the keys.
    rows.sort_by(|a, b| order_keys(call, &a.more[1..], &b.more[1..]).then_with(|| cmp_args(a, b)));
    rows.dedup_by(|b, a| cmp_args(a, b).is_eq());
}

/// The values joined, each after the first preceded by its own row's
/// delimiter (an empty one for a NULL delimiter, as in PostgreSQL).
fn string_agg(rows: &[&Row]) -> ExecResult<Value> {
    let text = |v: &Value| match v {
        Value::Text(t) => t.len(),
        _ => 0,
    };
    let len: usize = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            text(&r.value)
                + if i > 0 {
                    r.more.first().map_or(0, text)
                } else {
                    0
                }
        })
        .sum();
    // Built at its exact size, once there is room: a doubling string would
    // hold up to twice its text, and both blocks while it moves.
    budget::check_value("string_agg", len, 0)?;
    budget::charge(len)?;
    let mut s = String::with_capacity(len);
    for (i, r) in rows.iter().enumerate() {
        if i > 0 {
            if let Some(Value::Text(d)) = r.more.first() {
                s.push_str(d);
            }
        }
        if let Value::Text(t) = &r.value {
            s.push_str(t);
        }
    }
    Ok(if rows.is_empty() {
        Value::Null
    } else {
        Value::Text(s)
    })
}

/// PostgreSQL's `percentile_cont`: the value at fraction `f` of the sorted
/// values, interpolated linearly between the two nearest.
fn percentile_cont(xs: &[f64], f: f64) -> f64 {
    let at = f * (xs.len() - 1) as f64;
    let (lo, hi) = (at.floor(), at.ceil());
    let first = xs[lo as usize];
    if hi > lo {
        let second = xs[hi as usize];
        first + (at - lo) * (second - first)
    } else {
        first
    }
}

/// The most frequent value of sorted rows, the first in sort order among ties.
fn mode(rows: &[&Row], t: DataType) -> Value {
    let (mut best, mut best_n) = (&rows[0].value, 0);
    let mut i = 0;
    while i < rows.len() {
        let mut j = i + 1;
        while j < rows.len() && rows[j].value.total_cmp_of(&rows[i].value, t) == Ordering::Equal {
            j += 1;
        }
        if j - i > best_n {
            best = &rows[i].value;
            best_n = j - i;
        }
        i = j;
    }
    best.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_cont_interpolates() {
        let xs = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile_cont(&xs, 0.5), 2.5);
        assert_eq!(percentile_cont(&xs, 0.0), 1.0);
        assert_eq!(percentile_cont(&xs, 1.0), 4.0);
        assert_eq!(percentile_cont(&[7.0], 0.3), 7.0);
    }

    #[test]
    fn mode_prefers_the_first_of_ties() {
        let rows: Vec<Row> = [1, 2, 2, 3, 3]
            .iter()
            .map(|&v| Row {
                group: 0,
                value: Value::Integer(v),
                more: Box::new([]),
            })
            .collect();
        let refs: Vec<&Row> = rows.iter().collect();
        assert_eq!(mode(&refs, DataType::Integer), Value::Integer(2));
    }
}
