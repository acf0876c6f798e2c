//! kura vectors and batches to Arrow arrays and `RecordBatch`es, and kura types to an Arrow
//! schema (the direction the cluster and COPY TO Parquet send).
//!
//! Columns move into Arrow buffers without a per-row path where the layout is the same
//! (INTEGER, BIGINT, DOUBLE, DATE → Date32, TIMESTAMP → microseconds, text offsets and bytes
//! → Utf8); DECIMAL(p,s) widens kura's scaled i64 to Decimal128 in one loop over the slice;
//! BOOLEAN and validity are packed into bitmaps. A batch's selection vector is applied first
//! (a gather of the live rows). Types without a mapping here (arrays, vectors, UUID, BYTEA,
//! INTERVAL, JSON, JSONB) are refused with an error naming the type and the column.

use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, ListBuilder, StringBuilder};
use arrow_array::types::IntervalMonthDayNano;
use arrow_array::{
    ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float64Array, Int16Array, Int32Array,
    Int64Array, IntervalMonthDayNanoArray, RecordBatch, RecordBatchOptions, StringArray,
    TimestampMicrosecondArray,
};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType as ArrowType, Field, IntervalUnit, Schema, SchemaRef, TimeUnit};
use kura_common::decimal::MAX_PRECISION;
use kura_common::{Batch, ColumnData, DataType, StrVec, Vector};

use crate::error::{ExecError, ExecResult};

/// The Arrow type kura's `t` is converted to (every kura type has one).
pub fn arrow_type(t: DataType) -> ArrowType {
    match t {
        DataType::Boolean => ArrowType::Boolean,
        DataType::SmallInt => ArrowType::Int16,
        DataType::Integer => ArrowType::Int32,
        DataType::BigInt => ArrowType::Int64,
        DataType::Double => ArrowType::Float64,
        DataType::Decimal { precision, scale } => {
            // kura's unconstrained width is 0; Arrow needs 1..=38.
            let p = if precision == 0 {
                MAX_PRECISION
            } else {
                precision
            };
            ArrowType::Decimal128(p.min(38), scale as i8)
        }
        DataType::Date => ArrowType::Date32,
        DataType::Timestamp => ArrowType::Timestamp(TimeUnit::Microsecond, None),
        // Types kura holds as their text form travel as that text (Arrow's canonical UUID
        // and JSON are extension types over the same or other layouts; plain text is what
        // every reader takes).
        DataType::Varchar(_)
        | DataType::Char(_)
        | DataType::Uuid
        | DataType::Json
        | DataType::Jsonb
        | DataType::Vector(_) => ArrowType::Utf8,
        DataType::Bytea => ArrowType::Binary,
        DataType::Interval => ArrowType::Interval(IntervalUnit::MonthDayNano),
        DataType::Array(e) => ArrowType::List(Arc::new(Field::new(
            "item",
            arrow_type(e.data_type()),
            true,
        ))),
    }
}

/// The Arrow schema of named kura columns; `nullable[i]` says whether column `i` may hold NULL.
pub fn arrow_schema(columns: &[(String, DataType, bool)]) -> ExecResult<Schema> {
    let fields = columns
        .iter()
        .map(|(name, t, nullable)| Ok(Field::new(name, arrow_type(*t), *nullable)))
        .collect::<ExecResult<Vec<_>>>()?;
    Ok(Schema::new(fields))
}

/// Converts one kura vector (all of its rows) into an Arrow array of `target`'s type
/// (what [`arrow_type`] gives for the vector's type, or the type a schema declares for it).
pub fn vector_to_arrow(v: Vector, target: &ArrowType, column: &str) -> ExecResult<ArrayRef> {
    let len = v.len();
    let nulls = v.validity.map(NullBuffer::from);
    let mismatch = |what: &str| {
        ExecError::Internal(format!(
            "column {column:?}: a kura {} vector ({what}) cannot become Arrow {target}",
            v.data_type
        ))
    };
    let array: ArrayRef = match (v.data, target) {
        (ColumnData::Bool(b), ArrowType::Boolean) => {
            let bits = BooleanBuffer::collect_bool(len, |i| b[i]);
            Arc::new(BooleanArray::new(bits, nulls))
        }
        (ColumnData::I32(x), ArrowType::Int32) => {
            Arc::new(Int32Array::new(ScalarBuffer::from(x), nulls))
        }
        (ColumnData::I32(x), ArrowType::Date32) => {
            Arc::new(Date32Array::new(ScalarBuffer::from(x), nulls))
        }
        (ColumnData::I32(x), ArrowType::Int16) => {
            // kura holds SMALLINT in the 32-bit form, range-checked to i16 on every write.
            let narrow: Vec<i16> = x.iter().map(|&y| y as i16).collect();
            Arc::new(Int16Array::new(ScalarBuffer::from(narrow), nulls))
        }
        (ColumnData::I32(x), ArrowType::Int64) => {
            let wide: Vec<i64> = x.iter().map(|&y| y as i64).collect();
            Arc::new(Int64Array::new(ScalarBuffer::from(wide), nulls))
        }
        (ColumnData::I64(x), ArrowType::Int64) => {
            Arc::new(Int64Array::new(ScalarBuffer::from(x), nulls))
        }
        (ColumnData::I64(x), ArrowType::Timestamp(TimeUnit::Microsecond, None)) => {
            Arc::new(TimestampMicrosecondArray::new(ScalarBuffer::from(x), nulls))
        }
        (ColumnData::F64(x), ArrowType::Float64) => {
            Arc::new(Float64Array::new(ScalarBuffer::from(x), nulls))
        }
        (data @ (ColumnData::I64(_) | ColumnData::I128(_)), ArrowType::Decimal128(p, s)) => {
            let from_scale = match v.data_type {
                DataType::Decimal { scale, .. } => scale as i8,
                DataType::Integer | DataType::BigInt | DataType::SmallInt => 0,
                _ => return Err(mismatch("not a decimal")),
            };
            if from_scale != *s {
                return Err(mismatch("scale differs"));
            }
            let wide: Vec<i128> = match data {
                ColumnData::I64(x) => x.iter().map(|&y| y as i128).collect(),
                ColumnData::I128(x) => x,
                _ => unreachable!("matched above"),
            };
            let a = Decimal128Array::new(ScalarBuffer::from(wide), nulls)
                .with_precision_and_scale(*p, *s)
                .map_err(|e| ExecError::Internal(format!("column {column:?}: {e}")))?;
            Arc::new(a)
        }
        (ColumnData::Str(s), ArrowType::Utf8) => Arc::new(utf8(s, nulls, column)?),
        (ColumnData::Str(s), ArrowType::Binary) => {
            // kura holds BYTEA as its hex text (`\x01ff`): one decode per value.
            let mut b = BinaryBuilder::with_capacity(len, s.data.len() / 2);
            for i in 0..len {
                match nulls.as_ref().is_some_and(|n| n.is_null(i)) {
                    true => b.append_null(),
                    false => b.append_value(
                        kura_common::binary::bytea_bytes(s.get(i))
                            .ok_or_else(|| mismatch("bytea not in hex form"))?,
                    ),
                }
            }
            Arc::new(b.finish())
        }
        (ColumnData::I128(x), ArrowType::Interval(IntervalUnit::MonthDayNano)) => {
            let spans: Vec<IntervalMonthDayNano> = x
                .iter()
                .map(|&p| {
                    let iv = kura_common::interval::Interval::unpack(p);
                    IntervalMonthDayNano::new(iv.months, iv.days, iv.micros * 1000)
                })
                .collect();
            Arc::new(IntervalMonthDayNanoArray::new(
                ScalarBuffer::from(spans),
                nulls,
            ))
        }
        (ColumnData::Str(s), ArrowType::List(item)) => list(&s, nulls, item, column)?,
        _ => return Err(mismatch("physical form")),
    };
    Ok(array)
}

/// kura's arrays (held as PostgreSQL's text form `{1,NULL,3}`) as an Arrow list: each value
/// is parsed into its elements, built as a list of text and cast to the element type.
fn list(
    s: &StrVec,
    nulls: Option<NullBuffer>,
    item: &arrow_schema::FieldRef,
    column: &str,
) -> ExecResult<ArrayRef> {
    let mut b = ListBuilder::new(StringBuilder::new());
    for i in 0..s.len() {
        if nulls.as_ref().is_some_and(|n| n.is_null(i)) {
            b.append_null();
            continue;
        }
        let elems = kura_common::array::parse(s.get(i)).map_err(|e| {
            ExecError::Internal(format!(
                "column {column:?}: array value {:?}: {e:?}",
                s.get(i)
            ))
        })?;
        for e in elems {
            b.values().append_option(e);
        }
        b.append(true);
    }
    let text = b.finish();
    arrow_cast::cast(&text, &ArrowType::List(item.clone()))
        .map_err(|e| ExecError::Internal(format!("column {column:?}: array elements: {e}")))
}

/// kura's string vector as a Utf8 array: the bytes move, the u32 offsets become i32 ones.
fn utf8(s: StrVec, nulls: Option<NullBuffer>, column: &str) -> ExecResult<StringArray> {
    let base = s.offsets[0];
    let last = *s.offsets.last().unwrap_or(&0);
    if last - base > i32::MAX as u32 {
        return Err(ExecError::TooLarge(format!(
            "column {column:?}: more than 2 GiB of text in one batch for Arrow Utf8"
        )));
    }
    let offsets: Vec<i32> = s.offsets.iter().map(|&o| (o - base) as i32).collect();
    let data = if base == 0 {
        let mut d = s.data;
        d.truncate(last as usize);
        d
    } else {
        s.data[base as usize..last as usize].to_vec()
    };
    StringArray::try_new(
        OffsetBuffer::new(ScalarBuffer::from(offsets)),
        Buffer::from_vec(data),
        nulls,
    )
    .map_err(|e| ExecError::Internal(format!("column {column:?}: {e}")))
}

/// Converts a kura batch into a `RecordBatch` of `schema` (one field per column, in order):
/// the selection is applied first, then every column moves over.
pub fn batch_to_arrow(batch: Batch, schema: &SchemaRef) -> ExecResult<RecordBatch> {
    if batch.columns.len() != schema.fields().len() {
        return Err(ExecError::Internal(format!(
            "a batch of {} columns for an Arrow schema of {}",
            batch.columns.len(),
            schema.fields().len()
        )));
    }
    let batch = batch.compact();
    let rows = batch.num_rows;
    let columns = batch
        .columns
        .into_iter()
        .zip(schema.fields())
        .map(|(v, f)| vector_to_arrow(v, f.data_type(), f.name()))
        .collect::<ExecResult<Vec<_>>>()?;
    RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &RecordBatchOptions::new().with_row_count(Some(rows)),
    )
    .map_err(|e| ExecError::Internal(format!("building an Arrow batch: {e}")))
}

/// Rows `skip .. skip + take` of `batches` as `RecordBatch`es of `schema`, merged into chunks
/// of at least `chunk_rows` rows (kura's batches are a few thousand rows; Arrow's consumers
/// pay per chunk: each crosses the C interface, becomes a pandas block, an IPC message).
pub fn batches_to_arrow(
    batches: impl IntoIterator<Item = Batch>,
    schema: &SchemaRef,
    skip: usize,
    take: usize,
    chunk_rows: usize,
) -> ExecResult<Vec<RecordBatch>> {
    let mut out = Vec::new();
    let mut pending: Option<Batch> = None;
    let (mut skip, mut left) = (skip, take);
    for b in batches {
        if left == 0 {
            break;
        }
        let b = b.compact();
        let len = b.len();
        if len <= skip {
            skip -= len;
            continue;
        }
        let keep = (len - skip).min(left);
        let b = if keep < len {
            let mut cut = Batch::new(b.columns.iter().map(|v| v.slice(skip, keep)).collect());
            cut.num_rows = keep;
            cut
        } else {
            b
        };
        skip = 0;
        left -= keep;
        let merged = match pending.take() {
            None => b,
            Some(mut m) => {
                for (all, part) in m.columns.iter_mut().zip(&b.columns) {
                    all.append(part);
                }
                m.num_rows += b.num_rows;
                m
            }
        };
        if merged.num_rows >= chunk_rows {
            out.push(batch_to_arrow(merged, schema)?);
        } else {
            pending = Some(merged);
        }
    }
    if let Some(m) = pending {
        out.push(batch_to_arrow(m, schema)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Array, Decimal128Array};
    use kura_common::{ElemType, Value};

    fn col(t: DataType, values: &[Value]) -> Vector {
        Vector::from_values(t, values).expect("values fit")
    }

    fn schema_of(cols: &[(&str, DataType)]) -> SchemaRef {
        let cols: Vec<_> = cols
            .iter()
            .map(|(n, t)| (n.to_string(), *t, true))
            .collect();
        Arc::new(arrow_schema(&cols).unwrap())
    }

    #[test]
    fn every_mapped_type_with_nulls() {
        let dec = DataType::Decimal {
            precision: 15,
            scale: 2,
        };
        let wide = DataType::Decimal {
            precision: 38,
            scale: 4,
        };
        let types = [
            ("b", DataType::Boolean),
            ("s", DataType::SmallInt),
            ("i", DataType::Integer),
            ("l", DataType::BigInt),
            ("d", DataType::Double),
            ("m", dec),
            ("w", wide),
            ("t", DataType::Date),
            ("ts", DataType::Timestamp),
            ("v", DataType::Varchar(None)),
            ("c", DataType::Char(3)),
        ];
        let columns = vec![
            col(
                DataType::Boolean,
                &[Value::Boolean(true), Value::Null, Value::Boolean(false)],
            ),
            col(
                DataType::SmallInt,
                &[Value::Integer(-7), Value::Integer(32767), Value::Null],
            ),
            col(
                DataType::Integer,
                &[Value::Null, Value::Integer(5), Value::Integer(-1)],
            ),
            col(
                DataType::BigInt,
                &[Value::BigInt(1 << 40), Value::Null, Value::BigInt(-3)],
            ),
            col(
                DataType::Double,
                &[Value::Double(0.5), Value::Double(-2.25), Value::Null],
            ),
            col(
                dec,
                &[Value::Decimal(12345, 2), Value::Null, Value::Decimal(-1, 2)],
            ),
            col(
                wide,
                &[
                    Value::Null,
                    Value::Decimal(10i128.pow(30), 4),
                    Value::Decimal(7, 4),
                ],
            ),
            col(
                DataType::Date,
                &[Value::Date(9000), Value::Date(-1), Value::Null],
            ),
            col(
                DataType::Timestamp,
                &[
                    Value::Timestamp(1_000_000),
                    Value::Null,
                    Value::Timestamp(0),
                ],
            ),
            col(
                DataType::Varchar(None),
                &[
                    Value::Text("héllo".into()),
                    Value::Null,
                    Value::Text("".into()),
                ],
            ),
            col(
                DataType::Char(3),
                &[
                    Value::Null,
                    Value::Text("AB".into()),
                    Value::Text("xyz".into()),
                ],
            ),
        ];
        let schema = schema_of(&types);
        let rb = batch_to_arrow(Batch::new(columns), &schema).unwrap();
        assert_eq!(rb.num_rows(), 3);
        assert_eq!(
            rb.schema().field(5).data_type(),
            &ArrowType::Decimal128(15, 2)
        );
        assert_eq!(rb.schema().field(7).data_type(), &ArrowType::Date32);
        let nulls: Vec<usize> = rb.columns().iter().map(|c| c.null_count()).collect();
        assert_eq!(nulls, vec![1; 11]);
        let b = rb
            .column(0)
            .as_any()
            .downcast_ref::<BooleanArray>()
            .unwrap();
        assert!(b.value(0) && b.is_null(1) && !b.value(2));
        let s = rb.column(1).as_any().downcast_ref::<Int16Array>().unwrap();
        assert_eq!((s.value(0), s.value(1)), (-7, 32767));
        let i = rb.column(2).as_any().downcast_ref::<Int32Array>().unwrap();
        assert!(i.is_null(0));
        assert_eq!(i.value(2), -1);
        let l = rb.column(3).as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(l.value(0), 1 << 40);
        let d = rb
            .column(4)
            .as_any()
            .downcast_ref::<Float64Array>()
            .unwrap();
        assert_eq!(d.value(1), -2.25);
        let m = rb
            .column(5)
            .as_any()
            .downcast_ref::<Decimal128Array>()
            .unwrap();
        assert_eq!(m.value_as_string(0), "123.45");
        assert_eq!(m.value_as_string(2), "-0.01");
        let w = rb
            .column(6)
            .as_any()
            .downcast_ref::<Decimal128Array>()
            .unwrap();
        assert_eq!(w.value(1), 10i128.pow(30));
        let t = rb.column(7).as_any().downcast_ref::<Date32Array>().unwrap();
        assert_eq!((t.value(0), t.value(1)), (9000, -1));
        let ts = rb
            .column(8)
            .as_any()
            .downcast_ref::<TimestampMicrosecondArray>()
            .unwrap();
        assert_eq!(ts.value(0), 1_000_000);
        let v = rb.column(9).as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!((v.value(0), v.value(2)), ("héllo", ""));
        let c = rb
            .column(10)
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        assert_eq!((c.value(1), c.value(2)), ("AB", "xyz"));
    }

    #[test]
    fn selection_is_applied_and_text_offsets_rebased() {
        let mut v = col(
            DataType::Varchar(None),
            &[
                Value::Text("aa".into()),
                Value::Text("b".into()),
                Value::Null,
                Value::Text("dddd".into()),
            ],
        );
        // A slice whose offsets do not start at 0 (as an appended or sliced vector may be).
        if let ColumnData::Str(s) = &mut v.data {
            s.data.insert(0, b'#');
            for o in &mut s.offsets {
                *o += 1;
            }
        }
        let n = col(
            DataType::Integer,
            &[
                Value::Integer(1),
                Value::Integer(2),
                Value::Integer(3),
                Value::Integer(4),
            ],
        );
        let mut batch = Batch::new(vec![v, n]);
        batch.selection = Some(vec![1, 2, 3]);
        let schema = schema_of(&[("v", DataType::Varchar(None)), ("n", DataType::Integer)]);
        let rb = batch_to_arrow(batch, &schema).unwrap();
        assert_eq!(rb.num_rows(), 3);
        let v = rb.column(0).as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(v.value(0), "b");
        assert!(v.is_null(1));
        assert_eq!(v.value(2), "dddd");
        let n = rb.column(1).as_any().downcast_ref::<Int32Array>().unwrap();
        assert_eq!(n.values().to_vec(), vec![2, 3, 4]);
        let utf = utf8(
            StrVec {
                offsets: vec![3, 5, 6],
                data: b"xyzabc".to_vec(),
            },
            None,
            "u",
        )
        .unwrap();
        assert_eq!((utf.value(0), utf.value(1)), ("ab", "c"));
    }

    #[test]
    fn rows_without_columns() {
        let rb = batch_to_arrow(Batch::with_rows(5), &Arc::new(Schema::empty())).unwrap();
        assert_eq!((rb.num_rows(), rb.num_columns()), (5, 0));
    }

    #[test]
    fn text_held_types_convert_by_value() {
        use arrow_array::{BinaryArray, IntervalMonthDayNanoArray, ListArray};
        let iv = kura_common::interval::parse_interval("1 mon 2 days 3 seconds")
            .unwrap()
            .pack()
            .unwrap();
        let schema = schema_of(&[
            ("u", DataType::Uuid),
            ("b", DataType::Bytea),
            ("i", DataType::Interval),
            ("a", DataType::Array(ElemType::Integer)),
            ("j", DataType::Jsonb),
        ]);
        let batch = Batch::new(vec![
            col(
                DataType::Uuid,
                &[
                    Value::Text("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11".into()),
                    Value::Null,
                ],
            ),
            col(
                DataType::Bytea,
                &[Value::Text("\\x00ff".into()), Value::Null],
            ),
            col(DataType::Interval, &[Value::Interval(iv), Value::Null]),
            col(
                DataType::Array(ElemType::Integer),
                &[Value::Text("{1,NULL,3}".into()), Value::Null],
            ),
            col(
                DataType::Jsonb,
                &[Value::Text("{\"a\": 1}".into()), Value::Null],
            ),
        ]);
        let rb = batch_to_arrow(batch, &schema).unwrap();
        let u = rb.column(0).as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(u.value(0), "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
        let b = rb.column(1).as_any().downcast_ref::<BinaryArray>().unwrap();
        assert_eq!(b.value(0), &[0u8, 255]);
        let i = rb
            .column(2)
            .as_any()
            .downcast_ref::<IntervalMonthDayNanoArray>()
            .unwrap();
        assert_eq!(i.value(0), IntervalMonthDayNano::new(1, 2, 3_000_000_000));
        let a = rb.column(3).as_any().downcast_ref::<ListArray>().unwrap();
        let first = a.value(0);
        let ints = first.as_any().downcast_ref::<Int32Array>().unwrap();
        assert_eq!(
            ints.iter().collect::<Vec<_>>(),
            vec![Some(1), None, Some(3)]
        );
        for c in rb.columns() {
            assert!(c.is_null(1));
        }
    }

    #[test]
    fn decimal_scale_mismatch_is_an_error_not_a_wrong_value() {
        let v = col(
            DataType::Decimal {
                precision: 10,
                scale: 3,
            },
            &[Value::Decimal(1, 3)],
        );
        let e = vector_to_arrow(v, &ArrowType::Decimal128(10, 2), "q").unwrap_err();
        assert!(e.to_string().contains("scale"), "{e}");
    }
}
