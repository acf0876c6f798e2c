//! Arrow arrays to kura vectors, and Arrow types to kura types (the direction files and,
//! later, Python objects come in by).
//!
//! An array is first cast (arrow-cast, overflow an error, never NULL) to the canonical Arrow
//! type of its kura type — what [`super::arrow_type`] gives — so dictionaries, views, large
//! offsets, narrower integers and other time units all arrive in one of a few layouts, whose
//! buffers are then copied whole into the vector (no per-row path, except widening SMALLINT
//! and narrow decimals, one loop over the slice).

use arrow_array::types::Int32Type;
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, Decimal64Array,
    DictionaryArray, FixedSizeBinaryArray, Float64Array, Int16Array, Int32Array, Int64Array,
    IntervalMonthDayNanoArray, ListArray, RecordBatch, StringArray, TimestampMicrosecondArray,
};
use arrow_cast::{cast_with_options, CastOptions};
use arrow_schema::DataType as ArrowType;
use kura_common::decimal::{MAX_I64_PRECISION, MAX_PRECISION};
use kura_common::interval::Interval;
use kura_common::{Batch, ColumnData, DataType, ElemType, StrVec, Value, Vector};

use super::to_arrow::arrow_type;
use crate::error::{ExecError, ExecResult};

/// The kura type an Arrow column of type `t` reads as; `column` names it in the error for
/// a type kura has no counterpart of (structs, maps, lists of those, times of day).
pub fn kura_type(t: &ArrowType, column: &str) -> ExecResult<DataType> {
    Ok(match t {
        ArrowType::Boolean => DataType::Boolean,
        ArrowType::Int8 | ArrowType::Int16 | ArrowType::UInt8 => DataType::SmallInt,
        ArrowType::Int32 | ArrowType::UInt16 => DataType::Integer,
        // UInt64 values above i64::MAX are refused when read (a cast error), not wrapped.
        ArrowType::Int64 | ArrowType::UInt32 | ArrowType::UInt64 => DataType::BigInt,
        ArrowType::Float16 | ArrowType::Float32 | ArrowType::Float64 => DataType::Double,
        ArrowType::Decimal32(p, s) | ArrowType::Decimal64(p, s) | ArrowType::Decimal128(p, s)
            if *s >= 0 && *p <= MAX_PRECISION && (*s as u8) <= *p =>
        {
            DataType::Decimal {
                precision: *p,
                scale: *s as u8,
            }
        }
        ArrowType::Date32 | ArrowType::Date64 => DataType::Date,
        ArrowType::Timestamp(_, _) => DataType::Timestamp,
        ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View => DataType::Varchar(None),
        ArrowType::Dictionary(_, values) => kura_type(values, column)?,
        // Sixteen fixed bytes are how Parquet (and DuckDB) store a UUID.
        ArrowType::FixedSizeBinary(16) => DataType::Uuid,
        ArrowType::Binary
        | ArrowType::LargeBinary
        | ArrowType::BinaryView
        | ArrowType::FixedSizeBinary(_) => DataType::Bytea,
        ArrowType::Interval(_) => DataType::Interval,
        // A list of a type kura has arrays of: that array type (one dimension).
        ArrowType::List(item) | ArrowType::LargeList(item) => {
            match kura_type(item.data_type(), column)?.array_of() {
                Some(t) => t,
                None => {
                    return Err(ExecError::Unsupported(format!(
                        "reading column {column:?} of Arrow type {t} (kura has no arrays of \
                         its elements' type)"
                    )))
                }
            }
        }
        other => {
            return Err(ExecError::Unsupported(format!(
                "reading column {column:?} of Arrow type {other} (kura has no matching type)"
            )))
        }
    })
}

/// Converts an Arrow array into a kura vector of type `t` (what [`kura_type`] gives for the
/// array's type).
pub fn arrow_to_vector(array: &dyn Array, t: DataType, column: &str) -> ExecResult<Vector> {
    if let (DataType::Decimal { precision, scale }, ArrowType::Decimal64(_, s)) =
        (t, array.data_type())
    {
        // A narrow decimal read as Decimal64 (what the Parquet reader is asked for): kura's
        // own layout, scaled i64, moved without widening to Decimal128 and back.
        if precision != 0 && precision <= MAX_I64_PRECISION && *s as i32 == scale as i32 {
            if let Some(a) = downcast::<Decimal64Array>(array) {
                let validity = a
                    .logical_nulls()
                    .filter(|n| n.null_count() > 0)
                    .map(|n| n.iter().collect::<Vec<bool>>());
                return Ok(Vector {
                    data_type: t,
                    data: ColumnData::I64(a.values().to_vec()),
                    validity,
                });
            }
        }
    }
    if let (DataType::Varchar(_) | DataType::Char(_), ArrowType::Dictionary(k, v)) =
        (t, array.data_type())
    {
        if **k == ArrowType::Int32 && **v == ArrowType::Utf8 {
            // Dictionary-encoded text (how Parquet readers hand low-cardinality columns):
            // each key's value copied straight into the vector, one pass.
            if let Some(a) = downcast::<DictionaryArray<Int32Type>>(array) {
                if let Some(values) = downcast::<StringArray>(a.values().as_ref()) {
                    return Ok(dictionary_text(a, values, t));
                }
            }
        }
    }
    if let (DataType::Uuid, ArrowType::FixedSizeBinary(16)) = (t, array.data_type()) {
        let a = downcast::<FixedSizeBinaryArray>(array).ok_or_else(|| {
            ExecError::Internal(format!("column {column:?}: a FixedSizeBinary(16) array"))
        })?;
        let mut text = StrVec::with_capacity(a.len(), a.len() * 36);
        for i in 0..a.len() {
            match a.is_null(i) {
                true => text.push(b""),
                false => {
                    let bytes: &[u8; 16] = a.value(i).try_into().expect("16 bytes");
                    text.push(kura_common::binary::uuid_from_bytes(bytes).as_bytes())
                }
            }
        }
        return Ok(Vector {
            data_type: t,
            data: ColumnData::Str(text),
            validity: a
                .logical_nulls()
                .filter(|n| n.null_count() > 0)
                .map(|n| n.iter().collect()),
        });
    }
    if let DataType::Array(e) = t {
        return list_to_vector(array, e, column);
    }
    let target = arrow_type(t);
    let options = CastOptions {
        safe: false,
        ..Default::default()
    };
    let cast: ArrayRef;
    let array: &dyn Array = if array.data_type() == &target {
        array
    } else {
        cast = cast_with_options(array, &target, &options)
            .map_err(|e| ExecError::OutOfRange(format!("column {column:?}: {e}")))?;
        cast.as_ref()
    };
    let len = array.len();
    let validity = array
        .logical_nulls()
        .filter(|n| n.null_count() > 0)
        .map(|n| n.iter().collect::<Vec<bool>>());
    let wrong = || {
        ExecError::Internal(format!(
            "column {column:?}: an Arrow {} array read as {t}",
            array.data_type()
        ))
    };
    let data = match t {
        DataType::Boolean => {
            let a = downcast::<BooleanArray>(array).ok_or_else(wrong)?;
            ColumnData::Bool((0..len).map(|i| a.value(i)).collect())
        }
        DataType::SmallInt => {
            let a = downcast::<Int16Array>(array).ok_or_else(wrong)?;
            ColumnData::I32(a.values().iter().map(|&v| i32::from(v)).collect())
        }
        DataType::Integer => ColumnData::I32(
            downcast::<Int32Array>(array)
                .ok_or_else(wrong)?
                .values()
                .to_vec(),
        ),
        DataType::Date => ColumnData::I32(
            downcast::<Date32Array>(array)
                .ok_or_else(wrong)?
                .values()
                .to_vec(),
        ),
        DataType::BigInt => ColumnData::I64(
            downcast::<Int64Array>(array)
                .ok_or_else(wrong)?
                .values()
                .to_vec(),
        ),
        DataType::Timestamp => ColumnData::I64(
            downcast::<TimestampMicrosecondArray>(array)
                .ok_or_else(wrong)?
                .values()
                .to_vec(),
        ),
        DataType::Double => ColumnData::F64(
            downcast::<Float64Array>(array)
                .ok_or_else(wrong)?
                .values()
                .to_vec(),
        ),
        DataType::Decimal { precision, .. } => {
            let a = downcast::<Decimal128Array>(array).ok_or_else(wrong)?;
            if precision != 0 && precision <= MAX_I64_PRECISION {
                // Precision ≤ 18 fits i64 by construction (the cast checked the precision).
                ColumnData::I64(a.values().iter().map(|&v| v as i64).collect())
            } else {
                ColumnData::I128(a.values().to_vec())
            }
        }
        // JSON read as text is the reader's own output (read_json's), checked JSON.
        DataType::Varchar(_) | DataType::Char(_) | DataType::Json => {
            let a = downcast::<StringArray>(array).ok_or_else(wrong)?;
            ColumnData::Str(str_vec(a, column)?)
        }
        DataType::Bytea => {
            // kura holds BYTEA as its hex text (`\x01ff`): one encode per value.
            let a = downcast::<BinaryArray>(array).ok_or_else(wrong)?;
            let mut text = StrVec::with_capacity(len, a.value_data().len() * 2 + 2 * len);
            for i in 0..len {
                match a.is_null(i) {
                    true => text.push(b""),
                    false => {
                        text.push(kura_common::binary::bytea_from_bytes(a.value(i)).as_bytes())
                    }
                }
            }
            ColumnData::Str(text)
        }
        DataType::Interval => {
            let a = downcast::<IntervalMonthDayNanoArray>(array).ok_or_else(wrong)?;
            ColumnData::I128(intervals(a, column)?)
        }
        _ => return Err(wrong()),
    };
    Ok(Vector {
        data_type: t,
        data,
        validity,
    })
}

/// Arrow's (months, days, nanoseconds) as kura's packed intervals; a part below a
/// microsecond (kura's unit) is refused rather than dropped.
fn intervals(a: &IntervalMonthDayNanoArray, column: &str) -> ExecResult<Vec<i128>> {
    let mut out = Vec::with_capacity(a.len());
    for (i, v) in a.values().iter().enumerate() {
        if a.is_null(i) {
            out.push(0);
            continue;
        }
        let refuse = |what: &str| ExecError::InvalidArgument {
            code: "22008",
            message: format!(
                "column {column:?}: the interval of {} months, {} days and {} nanoseconds {what}",
                v.months, v.days, v.nanoseconds
            ),
        };
        if v.nanoseconds % 1000 != 0 {
            return Err(refuse(
                "has a part below a microsecond, which kura does not hold",
            ));
        }
        let iv = Interval::new(v.months, v.days, v.nanoseconds / 1000);
        out.push(iv.pack().map_err(|_| refuse("is out of range"))?);
    }
    Ok(out)
}

/// An Arrow list as kura's array values (PostgreSQL's text form `{1,NULL,3}`): the elements
/// converted as a vector of their type, then each list written from its elements' values.
fn list_to_vector(array: &dyn Array, e: ElemType, column: &str) -> ExecResult<Vector> {
    let t = DataType::Array(e);
    let target = arrow_type(t);
    let cast: ArrayRef;
    let array: &dyn Array = if array.data_type() == &target {
        array
    } else {
        let options = CastOptions {
            safe: false,
            ..Default::default()
        };
        cast = cast_with_options(array, &target, &options)
            .map_err(|e| ExecError::OutOfRange(format!("column {column:?}: {e}")))?;
        cast.as_ref()
    };
    let list = downcast::<ListArray>(array).ok_or_else(|| {
        ExecError::Internal(format!("column {column:?}: an Arrow {target} array"))
    })?;
    // Only the elements of these rows (a slice of a larger list shares its child array).
    let offsets = list.value_offsets();
    let first = offsets[0] as usize;
    let children = list
        .values()
        .slice(first, offsets[list.len()] as usize - first);
    let elems = arrow_to_vector(children.as_ref(), e.data_type(), column)?;
    let mut text = StrVec::with_capacity(list.len(), elems.len() * 4 + 2 * list.len());
    let mut row: Vec<Value> = Vec::new();
    for i in 0..list.len() {
        if list.is_null(i) {
            text.push(b"");
            continue;
        }
        row.clear();
        row.extend(
            (offsets[i] as usize..offsets[i + 1] as usize).map(|j| elems.get_value(j - first)),
        );
        text.push(kura_common::array::format_values(&row).as_bytes());
    }
    Ok(Vector {
        data_type: t,
        data: ColumnData::Str(text),
        validity: list
            .logical_nulls()
            .filter(|n| n.null_count() > 0)
            .map(|n| n.iter().collect()),
    })
}

fn downcast<T: 'static>(a: &dyn Array) -> Option<&T> {
    a.as_any().downcast_ref::<T>()
}

/// A dictionary of text expanded into kura's string vector of type `t`: offsets first (a
/// running sum of the keys' lengths), then the bytes — a gather of single bytes when every
/// value is one byte long (flags and codes), so no row pays a copy call.
fn dictionary_text(a: &DictionaryArray<Int32Type>, values: &StringArray, t: DataType) -> Vector {
    let validity = a
        .logical_nulls()
        .filter(|n| n.null_count() > 0)
        .map(|n| n.iter().collect::<Vec<bool>>());
    // A NULL's key may point anywhere: it reads as the empty placeholder.
    let key = |i: usize, k: i32| match &validity {
        Some(v) if !v[i] => None,
        _ => Some(k as usize),
    };
    let keys = a.keys().values();
    let mut offsets = Vec::with_capacity(keys.len() + 1);
    offsets.push(0u32);
    let mut end = 0u32;
    for (i, &k) in keys.iter().enumerate() {
        end += key(i, k).map_or(0, |k| values.value_length(k) as u32);
        offsets.push(end);
    }
    let one_byte = validity.is_none() && (0..values.len()).all(|v| values.value_length(v) == 1);
    let data = if one_byte {
        let bytes: Vec<u8> = (0..values.len())
            .map(|v| values.value(v).as_bytes()[0])
            .collect();
        keys.iter().map(|&k| bytes[k as usize]).collect()
    } else {
        let mut data = Vec::with_capacity(end as usize);
        for (i, &k) in keys.iter().enumerate() {
            if let Some(k) = key(i, k) {
                data.extend_from_slice(values.value(k).as_bytes());
            }
        }
        data
    };
    Vector {
        data_type: t,
        data: ColumnData::Str(StrVec { offsets, data }),
        validity,
    }
}

/// A Utf8 array's offsets (rebased to 0) and bytes as kura's string vector.
fn str_vec(a: &StringArray, column: &str) -> ExecResult<StrVec> {
    let offsets = a.value_offsets();
    let (first, last) = (offsets[0], offsets[offsets.len() - 1]);
    if (last - first) as u64 > u32::MAX as u64 {
        return Err(ExecError::TooLarge(format!(
            "column {column:?}: more than 4 GiB of text in one Arrow array"
        )));
    }
    Ok(StrVec {
        offsets: offsets.iter().map(|&o| (o - first) as u32).collect(),
        data: a.value_data()[first as usize..last as usize].to_vec(),
    })
}

/// Converts a `RecordBatch` into a kura batch whose column `i` has type `types[i]`.
pub fn batch_from_arrow(rb: &RecordBatch, types: &[DataType]) -> ExecResult<Batch> {
    if rb.num_columns() != types.len() {
        return Err(ExecError::Internal(format!(
            "an Arrow batch of {} columns read as {}",
            rb.num_columns(),
            types.len()
        )));
    }
    let schema = rb.schema();
    let columns = rb
        .columns()
        .iter()
        .zip(types)
        .zip(schema.fields())
        .map(|((a, t), f)| arrow_to_vector(a.as_ref(), *t, f.name()))
        .collect::<ExecResult<Vec<_>>>()?;
    let mut batch = Batch::new(columns);
    batch.num_rows = rb.num_rows();
    Ok(batch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arrow::{arrow_schema, batch_to_arrow};
    use arrow_array::builder::StringDictionaryBuilder;
    use arrow_array::types::Int32Type;
    use arrow_array::{
        Decimal64Array, LargeStringArray, TimestampNanosecondArray, UInt64Array, UInt8Array,
    };
    use arrow_schema::TimeUnit;
    use kura_common::Value;
    use std::sync::Arc;

    #[test]
    fn round_trip_of_every_mapped_type() {
        let dec = DataType::Decimal {
            precision: 15,
            scale: 2,
        };
        let wide = DataType::Decimal {
            precision: 30,
            scale: 4,
        };
        let types = [
            DataType::Boolean,
            DataType::SmallInt,
            DataType::Integer,
            DataType::BigInt,
            DataType::Double,
            dec,
            wide,
            DataType::Date,
            DataType::Timestamp,
            DataType::Varchar(None),
        ];
        let rows = [
            vec![
                Value::Boolean(true),
                Value::Integer(-7),
                Value::Integer(1 << 30),
                Value::BigInt(-(1 << 40)),
                Value::Double(0.25),
                Value::Decimal(12345, 2),
                Value::Decimal(10i128.pow(25), 4),
                Value::Date(-3),
                Value::Timestamp(86_400_000_001),
                Value::Text("héllo".into()),
            ],
            vec![Value::Null; 10],
            vec![
                Value::Boolean(false),
                Value::Integer(32767),
                Value::Integer(0),
                Value::BigInt(5),
                Value::Double(-1e300),
                Value::Decimal(-1, 2),
                Value::Decimal(7, 4),
                Value::Date(20000),
                Value::Timestamp(0),
                Value::Text(String::new()),
            ],
        ];
        let columns: Vec<Vector> = (0..types.len())
            .map(|c| {
                let values: Vec<Value> = rows.iter().map(|r| r[c].clone()).collect();
                Vector::from_values(types[c], &values).unwrap()
            })
            .collect();
        let named: Vec<_> = types
            .iter()
            .enumerate()
            .map(|(i, t)| (format!("c{i}"), *t, true))
            .collect();
        let schema = Arc::new(arrow_schema(&named).unwrap());
        let rb = batch_to_arrow(Batch::new(columns.clone()), &schema).unwrap();
        for (i, f) in schema.fields().iter().enumerate() {
            assert_eq!(kura_type(f.data_type(), f.name()).unwrap(), types[i]);
        }
        let back = batch_from_arrow(&rb, &types).unwrap();
        assert_eq!(back.num_rows, 3);
        for (i, v) in back.columns.iter().enumerate() {
            for r in 0..3 {
                assert_eq!(
                    v.get_value(r),
                    columns[i].get_value(r),
                    "column {i} row {r}"
                );
            }
        }
    }

    #[test]
    fn dictionary_text_expands_keys_nulls_and_slices() {
        use kura_common::Value;
        let text = |v: &Vector| -> Vec<Value> { (0..v.len()).map(|i| v.get_value(i)).collect() };
        let s = |x: &str| Value::Text(x.into());
        // One-byte values without NULLs take the gather; a slice keeps its own rows.
        let mut flags = StringDictionaryBuilder::<Int32Type>::new();
        for f in ["R", "A", "R", "N", "A"] {
            flags.append_value(f);
        }
        let flags = flags.finish();
        let t = DataType::Varchar(None);
        let v = arrow_to_vector(&flags, t, "f").unwrap();
        assert_eq!(text(&v), vec![s("R"), s("A"), s("R"), s("N"), s("A")]);
        let v = arrow_to_vector(&flags.slice(2, 2), t, "f").unwrap();
        assert_eq!(text(&v), vec![s("R"), s("N")]);
        // Longer values and NULLs: the NULL holds the empty placeholder and is NULL.
        let mut modes = StringDictionaryBuilder::<Int32Type>::new();
        modes.append_value("TRUCK");
        modes.append_null();
        modes.append_value("é");
        modes.append_value("TRUCK");
        let modes = modes.finish();
        let v = arrow_to_vector(&modes, t, "m").unwrap();
        assert_eq!(text(&v), vec![s("TRUCK"), Value::Null, s("é"), s("TRUCK")]);
        assert_eq!(v.validity, Some(vec![true, false, true, true]));
    }

    #[test]
    fn other_layouts_are_cast_to_the_canonical_one() {
        let mut dict = StringDictionaryBuilder::<Int32Type>::new();
        dict.append_value("x");
        dict.append_null();
        dict.append_value("x");
        let dict = dict.finish();
        let t = kura_type(dict.data_type(), "d").unwrap();
        let v = arrow_to_vector(&dict, t, "d").unwrap();
        assert_eq!(
            (v.get_value(0), v.get_value(1), v.get_value(2)),
            (
                Value::Text("x".into()),
                Value::Null,
                Value::Text("x".into())
            )
        );
        let large = LargeStringArray::from(vec!["a", "bc"]);
        let v = arrow_to_vector(&large, DataType::Varchar(None), "l").unwrap();
        assert_eq!(v.get_value(1), Value::Text("bc".into()));
        let small = UInt8Array::from(vec![255u8]);
        let t = kura_type(small.data_type(), "u").unwrap();
        assert_eq!(t, DataType::SmallInt);
        assert_eq!(
            arrow_to_vector(&small, t, "u").unwrap().get_value(0),
            Value::Integer(255)
        );
        let ns = TimestampNanosecondArray::from(vec![1_500_000_123i64]);
        let v = arrow_to_vector(&ns, DataType::Timestamp, "ts").unwrap();
        assert_eq!(v.get_value(0), Value::Timestamp(1_500_000));
    }

    #[test]
    fn a_narrow_decimal64_moves_as_is_and_a_wide_one_is_cast() {
        let a = Decimal64Array::from(vec![Some(12345), None, Some(-1)])
            .with_precision_and_scale(15, 2)
            .unwrap();
        let t = kura_type(a.data_type(), "m").unwrap();
        let v = arrow_to_vector(&a, t, "m").unwrap();
        assert_eq!(v.data, ColumnData::I64(vec![12345, 0, -1]));
        assert_eq!(
            (v.get_value(0), v.get_value(1)),
            (Value::Decimal(12345, 2), Value::Null)
        );
        let wide = DataType::Decimal {
            precision: 30,
            scale: 2,
        };
        let v = arrow_to_vector(&a, wide, "m").unwrap();
        assert_eq!(v.get_value(2), Value::Decimal(-1, 2));
    }

    #[test]
    fn overflow_is_an_error_not_null_and_unknown_types_are_named() {
        let big = UInt64Array::from(vec![u64::MAX]);
        let e = arrow_to_vector(&big, DataType::BigInt, "big").unwrap_err();
        assert!(e.to_string().contains("big"), "{e}");
        let e = kura_type(&ArrowType::Time64(TimeUnit::Microsecond), "t_of_day").unwrap_err();
        assert!(
            e.to_string().contains("t_of_day") && e.to_string().contains("Time64"),
            "{e}"
        );
    }
}
