//! Parquet's INTERVAL — twelve bytes: months, days and milliseconds, each an unsigned 32-bit
//! little-endian integer — to and from kura's intervals, which Arrow's Parquet writer and
//! reader do not carry whole (its writer has no month-day-nanosecond intervals, its reader
//! reads an INTERVAL as months alone or as days and milliseconds alone).

use std::sync::Arc;

use arrow_array::types::IntervalMonthDayNano;
use arrow_array::{
    Array, ArrayRef, FixedSizeBinaryArray, IntervalDayTimeArray, IntervalMonthDayNanoArray,
    IntervalYearMonthArray,
};
use arrow_buffer::{NullBuffer, ScalarBuffer};
use arrow_schema::{DataType as ArrowType, Field, IntervalUnit, Schema, SchemaRef};
use kura_common::timestamp::MICROS_PER_DAY;
use parquet::arrow::ArrowSchemaConverter;
use parquet::schema::types::SchemaDescriptor;

use crate::error::{ExecError, ExecResult};

/// The bytes of one Parquet INTERVAL.
const WIDTH: i32 = 12;

/// Whether an Arrow column holds intervals.
fn is_interval(t: &ArrowType) -> bool {
    matches!(t, ArrowType::Interval(_))
}

/// For writing Parquet from batches of `schema` (kura's Arrow schema): the schema the
/// batches take once [`to_parquet`] has made each interval column twelve fixed bytes, and
/// the Parquet schema that declares those bytes INTERVAL. `None` without interval columns.
pub fn parquet_writer_schema(schema: &Schema) -> ExecResult<Option<(SchemaRef, SchemaDescriptor)>> {
    if !schema.fields().iter().any(|f| is_interval(f.data_type())) {
        return Ok(None);
    }
    let with = |t: ArrowType| -> Vec<Field> {
        schema
            .fields()
            .iter()
            .map(|f| match is_interval(f.data_type()) {
                true => f.as_ref().clone().with_data_type(t.clone()),
                false => f.as_ref().clone(),
            })
            .collect()
    };
    // The converter makes any Arrow interval a FIXED_LEN_BYTE_ARRAY(12) of type INTERVAL.
    let parquet = ArrowSchemaConverter::new()
        .convert(&Schema::new(with(ArrowType::Interval(
            IntervalUnit::DayTime,
        ))))
        .map_err(|e| ExecError::Internal(format!("a Parquet schema: {e}")))?;
    let bytes = Arc::new(Schema::new(with(ArrowType::FixedSizeBinary(WIDTH))));
    Ok(Some((bytes, parquet)))
}

/// kura's intervals (Arrow month-day-nanosecond values) as Parquet INTERVAL bytes. Parquet
/// has no sign and nothing below a millisecond: a negative part or a part below a
/// millisecond is refused naming `column` (22008), not dropped; a time part past the 32 bits
/// of milliseconds carries its whole days into the days (an equal interval).
pub fn to_parquet(array: &ArrayRef, column: &str) -> ExecResult<ArrayRef> {
    let a = array
        .as_any()
        .downcast_ref::<IntervalMonthDayNanoArray>()
        .ok_or_else(|| ExecError::Internal(format!("column {column:?}: not intervals")))?;
    let mut bytes = Vec::with_capacity(a.len() * WIDTH as usize);
    for (i, v) in a.values().iter().enumerate() {
        if a.is_null(i) {
            bytes.extend_from_slice(&[0; WIDTH as usize]);
            continue;
        }
        let refuse = |what: &str| ExecError::InvalidArgument {
            code: "22008",
            message: format!(
                "column {column:?}: the interval {} {what}, which Parquet's INTERVAL cannot \
                 hold (cast the column to text)",
                kura_common::interval::format_interval(&kura_common::interval::Interval::new(
                    v.months,
                    v.days,
                    v.nanoseconds / 1000
                ))
            ),
        };
        if v.months < 0 || v.days < 0 || v.nanoseconds < 0 {
            return Err(refuse("is negative or has a negative part"));
        }
        if v.nanoseconds % 1_000_000 != 0 {
            return Err(refuse("has a part below a millisecond"));
        }
        let mut days = v.days as u64;
        let mut millis = (v.nanoseconds / 1_000_000) as u64;
        if millis > u32::MAX as u64 {
            let day = (MICROS_PER_DAY / 1000) as u64;
            days += millis / day;
            millis %= day;
        }
        let days = u32::try_from(days).map_err(|_| refuse("has too many days"))?;
        bytes.extend_from_slice(&(v.months as u32).to_le_bytes());
        bytes.extend_from_slice(&days.to_le_bytes());
        bytes.extend_from_slice(&(millis as u32).to_le_bytes());
    }
    let out = FixedSizeBinaryArray::try_new(WIDTH, bytes.into(), a.nulls().cloned())
        .map_err(|e| ExecError::Internal(format!("column {column:?}: {e}")))?;
    Ok(Arc::new(out))
}

/// Parquet INTERVAL values that Arrow's reader read twice — as `months` (a year-month
/// interval: the first four bytes) and as `rest` (a day-time interval: the other eight) —
/// as one month-day-nanosecond array. The parts are unsigned in the file: one past what
/// kura's fields hold is refused naming `column`.
pub fn from_parquet(months: &ArrayRef, rest: &ArrayRef, column: &str) -> ExecResult<ArrayRef> {
    let wrong = || ExecError::Internal(format!("column {column:?}: the two reads of an interval"));
    let m = months
        .as_any()
        .downcast_ref::<IntervalYearMonthArray>()
        .ok_or_else(wrong)?;
    let r = rest
        .as_any()
        .downcast_ref::<IntervalDayTimeArray>()
        .ok_or_else(wrong)?;
    if m.len() != r.len() {
        return Err(wrong());
    }
    let nulls = NullBuffer::union(m.nulls(), r.nulls());
    let mut values = Vec::with_capacity(m.len());
    for i in 0..m.len() {
        if nulls.as_ref().is_some_and(|n| n.is_null(i)) {
            values.push(IntervalMonthDayNano::new(0, 0, 0));
            continue;
        }
        let (months, dt) = (m.value(i), r.value(i));
        let too_big = |what: &str, v: u32| ExecError::InvalidArgument {
            code: "22008",
            message: format!("column {column:?}: an interval of {v} {what} is out of range"),
        };
        let months = i32::try_from(months as u32).map_err(|_| too_big("months", months as u32))?;
        let days = i32::try_from(dt.days as u32).map_err(|_| too_big("days", dt.days as u32))?;
        let nanos = dt.milliseconds as u32 as i64 * 1_000_000;
        values.push(IntervalMonthDayNano::new(months, days, nanos));
    }
    Ok(Arc::new(IntervalMonthDayNanoArray::new(
        ScalarBuffer::from(values),
        nulls,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::basic::{ConvertedType, Type as PhysicalType};

    fn intervals(v: Vec<Option<IntervalMonthDayNano>>) -> ArrayRef {
        Arc::new(IntervalMonthDayNanoArray::from(v))
    }

    #[test]
    fn the_writer_schema_declares_twelve_bytes_of_interval() {
        let schema = Schema::new(vec![
            Field::new("i", ArrowType::Int32, true),
            Field::new("iv", ArrowType::Interval(IntervalUnit::MonthDayNano), true),
        ]);
        let (bytes, parquet) = parquet_writer_schema(&schema).unwrap().unwrap();
        assert_eq!(
            bytes.field(1).data_type(),
            &ArrowType::FixedSizeBinary(WIDTH)
        );
        let c = parquet.column(1);
        assert_eq!(c.physical_type(), PhysicalType::FIXED_LEN_BYTE_ARRAY);
        assert_eq!(c.converted_type(), ConvertedType::INTERVAL);
        assert_eq!(c.type_length(), WIDTH);
        let plain = Schema::new(vec![Field::new("i", ArrowType::Int32, true)]);
        assert!(parquet_writer_schema(&plain).unwrap().is_none());
    }

    #[test]
    fn bytes_are_months_days_millis_and_read_back() {
        let hour = 3_600_000_000_000i64;
        let a = intervals(vec![
            Some(IntervalMonthDayNano::new(1, 2, 3_000_000_000)),
            None,
            Some(IntervalMonthDayNano::new(0, 0, 2000 * hour)),
        ]);
        let b = to_parquet(&a, "iv").unwrap();
        let b = b.as_any().downcast_ref::<FixedSizeBinaryArray>().unwrap();
        assert_eq!(b.value(0), [1, 0, 0, 0, 2, 0, 0, 0, 0xb8, 0x0b, 0, 0]);
        assert!(b.is_null(1));
        // 2000 hours pass 2^32 milliseconds: 83 days and 8 hours.
        let months = IntervalYearMonthArray::from(vec![Some(1), None, Some(0)]);
        let rest = IntervalDayTimeArray::from(vec![
            Some(arrow_buffer::IntervalDayTime::new(2, 3000)),
            None,
            Some(arrow_buffer::IntervalDayTime::new(
                i32::from_le_bytes(b.value(2)[4..8].try_into().unwrap()),
                i32::from_le_bytes(b.value(2)[8..12].try_into().unwrap()),
            )),
        ]);
        let back = from_parquet(
            &(Arc::new(months) as ArrayRef),
            &(Arc::new(rest) as ArrayRef),
            "iv",
        )
        .unwrap();
        let back = back
            .as_any()
            .downcast_ref::<IntervalMonthDayNanoArray>()
            .unwrap();
        assert_eq!(
            back.value(0),
            IntervalMonthDayNano::new(1, 2, 3_000_000_000)
        );
        assert!(back.is_null(1));
        assert_eq!(back.value(2), IntervalMonthDayNano::new(0, 83, 8 * hour));
    }

    #[test]
    fn negative_and_sub_millisecond_intervals_are_refused() {
        for v in [
            IntervalMonthDayNano::new(-1, 0, 0),
            IntervalMonthDayNano::new(0, 0, -1_000_000),
            IntervalMonthDayNano::new(0, 0, 1_000),
        ] {
            let e = to_parquet(&intervals(vec![Some(v)]), "iv").unwrap_err();
            assert_eq!(e.sqlstate(), "22008");
            assert!(e.to_string().contains("\"iv\""), "{e}");
        }
    }
}
