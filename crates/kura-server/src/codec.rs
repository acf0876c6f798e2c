//! Values on the wire: result values in PostgreSQL's text and binary encodings,
//! and parameter values decoded from either encoding into kura values.

use bytes::{BufMut, BytesMut};
use kura_common::date::format_date;
use kura_common::{DataType, Value};
use pgwire::api::results::FieldFormat;
use pgwire::messages::data::DataRow;

use kura::pg_numeric as numeric;

/// Days from 1970-01-01 (kura's epoch) to 2000-01-01 (PostgreSQL's).
const PG_EPOCH_DAYS: i32 = 10_957;
/// The same distance in microseconds (binary timestamps count from 2000-01-01).
const PG_EPOCH_MICROS: i64 = PG_EPOCH_DAYS as i64 * kura_common::timestamp::MICROS_PER_DAY;

/// PostgreSQL's text form of a value (`None` for NULL).
pub fn text(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::Double(v) if v.is_nan() => Some("NaN".into()),
        Value::Double(v) if v.is_infinite() => {
            Some(if *v > 0.0 { "Infinity" } else { "-Infinity" }.into())
        }
        Value::Date(d) => Some(format_date(*d)),
        other => Some(other.to_string()),
    }
}

/// PostgreSQL's binary form of a value sent as a column of type `dt`.
pub fn binary(value: &Value, dt: &DataType, out: &mut Vec<u8>) -> Result<(), String> {
    match (value, dt) {
        (Value::Text(s), DataType::Array(e)) => array_binary(s, &e.data_type(), out)?,
        (Value::Text(s), DataType::Vector(_)) => vector_binary(s, dt, out)?,
        // Scalars as the engine's binary COPY writes them.
        (v, dt) => kura::copy_binary::encode(v, *dt, out).map_err(|e| e.to_string())?,
    }
    Ok(())
}

/// PostgreSQL's binary array (array_send): dimensions, a NULL flag, the
/// element OID, then each element as its length and binary form.
fn array_binary(text: &str, elem: &DataType, out: &mut Vec<u8>) -> Result<(), String> {
    let elems = kura_common::array::parse(text).map_err(|e| format!("{e:?}"))?;
    let oid = crate::types::pg_type(elem).oid();
    elements_binary(&elems, elem, oid, 1, out)
}

/// A catalog vector in binary (int2vectorsend / oidvectorsend): an array of
/// int2 or oid whose subscripts start at 0.
fn vector_binary(text: &str, dt: &DataType, out: &mut Vec<u8>) -> Result<(), String> {
    let elems = kura_common::array::parse_vector(text).map_err(|e| format!("{e:?}"))?;
    let (elem, oid) = match dt {
        DataType::Vector(kura_common::ElemType::SmallInt) => (DataType::SmallInt, 21),
        _ => (DataType::Integer, 26),
    };
    elements_binary(&elems, &elem, oid, 0, out)
}

/// One dimension of `elems` (of `elem`, announced as type `oid`) whose first
/// subscript is `lower`, in array_send's form.
fn elements_binary(
    elems: &[Option<String>],
    elem: &DataType,
    oid: u32,
    lower: i32,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    out.extend_from_slice(&i32::from(!elems.is_empty()).to_be_bytes());
    out.extend_from_slice(&i32::from(elems.iter().any(Option::is_none)).to_be_bytes());
    out.extend_from_slice(&oid.to_be_bytes());
    if !elems.is_empty() {
        out.extend_from_slice(&(elems.len() as i32).to_be_bytes());
        out.extend_from_slice(&lower.to_be_bytes());
    }
    let mut one = Vec::new();
    for e in elems {
        match e {
            None => out.extend_from_slice(&(-1i32).to_be_bytes()),
            Some(t) => {
                one.clear();
                binary(
                    &kura::params::value_from_text(t, Some(elem))?,
                    elem,
                    &mut one,
                )?;
                out.extend_from_slice(&(one.len() as i32).to_be_bytes());
                out.extend_from_slice(&one);
            }
        }
    }
    Ok(())
}

/// A binary array parameter (array_recv) as array text, its elements decoded
/// by the element OID it names; the statement gives the text its type.
fn array_from_binary(b: &[u8]) -> Result<Value, String> {
    let bad = || "invalid binary array parameter".to_string();
    let mut at = 0usize;
    let int = |at: &mut usize| -> Result<i32, String> {
        let v = b.get(*at..*at + 4).ok_or_else(bad)?;
        *at += 4;
        Ok(i32::from_be_bytes(v.try_into().map_err(|_| bad())?))
    };
    let ndim = int(&mut at)?;
    let _has_null = int(&mut at)?;
    let oid = int(&mut at)? as u32;
    if ndim == 0 {
        return Ok(Value::Text("{}".into()));
    }
    if ndim != 1 {
        return Err("multidimensional arrays are not supported".into());
    }
    let len = int(&mut at)?;
    let _lower = int(&mut at)?;
    let elem = pgwire::api::Type::from_oid(oid)
        .and_then(|t| crate::types::from_pg_type(&t))
        .filter(|t| !t.is_array())
        .ok_or_else(|| format!("arrays of type OID {oid} are not supported"))?;
    let mut texts = Vec::with_capacity(len.max(0) as usize);
    for _ in 0..len {
        let n = int(&mut at)?;
        if n < 0 {
            texts.push(None);
            continue;
        }
        let start = at;
        let bytes = b.get(start..start + n as usize).ok_or_else(bad)?;
        at += n as usize;
        texts.push(text(&decode_binary(bytes, Some(&elem))?));
    }
    Ok(Value::Text(kura_common::array::format(
        texts.iter().map(|t| t.as_deref()),
    )))
}

/// One DataRow for `row`, each column in the format the client asked for.
pub fn data_row(
    row: &[Value],
    types: &[DataType],
    formats: &[FieldFormat],
) -> Result<DataRow, String> {
    let mut buf = BytesMut::with_capacity(16 * row.len());
    let mut scratch = Vec::new();
    for (i, value) in row.iter().enumerate() {
        if value.is_null() {
            buf.put_i32(-1);
            continue;
        }
        match formats.get(i).copied().unwrap_or(FieldFormat::Text) {
            FieldFormat::Text => {
                let t = text(value).unwrap_or_default();
                buf.put_i32(t.len() as i32);
                buf.put_slice(t.as_bytes());
            }
            FieldFormat::Binary => {
                scratch.clear();
                let dt = types.get(i).copied().unwrap_or(DataType::Varchar(None));
                binary(value, &dt, &mut scratch)?;
                buf.put_i32(scratch.len() as i32);
                buf.put_slice(&scratch);
            }
        }
    }
    Ok(DataRow::new(buf, row.len() as i16))
}

/// Decodes a parameter sent as `dt` in text or binary form.
pub fn decode_param(
    bytes: Option<&[u8]>,
    dt: Option<&DataType>,
    binary: bool,
) -> Result<Value, String> {
    let Some(bytes) = bytes else {
        return Ok(Value::Null);
    };
    if binary {
        decode_binary(bytes, dt)
    } else {
        let text =
            std::str::from_utf8(bytes).map_err(|_| "parameter is not valid UTF-8".to_string())?;
        kura::params::value_from_text(text, dt)
    }
}

fn decode_binary(b: &[u8], dt: Option<&DataType>) -> Result<Value, String> {
    let fixed = |n: usize, ty: &str| -> Result<&[u8], String> {
        if b.len() == n {
            Ok(b)
        } else {
            Err(format!(
                "incorrect binary data format for {ty} parameter ({} bytes)",
                b.len()
            ))
        }
    };
    Ok(match dt {
        None | Some(DataType::Varchar(_)) | Some(DataType::Char(_)) => Value::Text(
            String::from_utf8(b.to_vec())
                .map_err(|_| "parameter is not valid UTF-8".to_string())?,
        ),
        Some(DataType::Array(_)) => array_from_binary(b)?,
        Some(DataType::Vector(_)) => {
            return Err("binary int2vector / oidvector parameters are not supported".into())
        }
        Some(DataType::Uuid) => Value::Text(kura_common::binary::uuid_from_bytes(
            fixed(16, "uuid")?.try_into().unwrap(),
        )),
        Some(DataType::Bytea) => Value::Text(kura_common::binary::bytea_from_bytes(b)),
        Some(DataType::Interval) => Value::Interval(
            kura_common::interval::from_pg_binary(fixed(16, "interval")?)
                .and_then(|iv| iv.pack().ok())
                .ok_or_else(|| "interval out of range".to_string())?,
        ),
        // json is its text; jsonb a version byte (1) and the text.
        Some(DataType::Json) => Value::Text(
            kura_common::json::json_input(
                std::str::from_utf8(b).map_err(|_| "parameter is not valid UTF-8".to_string())?,
            )
            .map_err(|e| e.message)?,
        ),
        Some(DataType::Jsonb) => match b.split_first() {
            Some((1, text)) => Value::Text(
                kura_common::json::jsonb_input(
                    std::str::from_utf8(text)
                        .map_err(|_| "parameter is not valid UTF-8".to_string())?,
                )
                .map_err(|e| e.message)?,
            ),
            _ => return Err("unsupported jsonb version number".into()),
        },
        Some(DataType::Boolean) => Value::Boolean(fixed(1, "boolean")?[0] != 0),
        Some(DataType::SmallInt) => Value::Integer(i32::from(i16::from_be_bytes(
            fixed(2, "smallint")?.try_into().unwrap(),
        ))),
        Some(DataType::Integer) => match b.len() {
            2 => Value::Integer(i32::from(i16::from_be_bytes([b[0], b[1]]))),
            _ => Value::Integer(i32::from_be_bytes(fixed(4, "integer")?.try_into().unwrap())),
        },
        Some(DataType::BigInt) => {
            Value::BigInt(i64::from_be_bytes(fixed(8, "bigint")?.try_into().unwrap()))
        }
        Some(DataType::Double) => match b.len() {
            4 => Value::Double(f64::from(f32::from_be_bytes(b.try_into().unwrap()))),
            _ => Value::Double(f64::from_be_bytes(
                fixed(8, "double precision")?.try_into().unwrap(),
            )),
        },
        Some(DataType::Decimal { .. }) => {
            let (v, s) =
                numeric::decode(b).ok_or_else(|| "invalid binary numeric parameter".to_string())?;
            Value::Decimal(v, s)
        }
        Some(DataType::Date) => {
            let d = i32::from_be_bytes(fixed(4, "date")?.try_into().unwrap());
            Value::Date(
                d.checked_add(PG_EPOCH_DAYS)
                    .ok_or_else(|| "date out of range".to_string())?,
            )
        }
        Some(DataType::Timestamp) => {
            let t = i64::from_be_bytes(fixed(8, "timestamp")?.try_into().unwrap());
            Value::Timestamp(
                t.checked_add(PG_EPOCH_MICROS)
                    .ok_or_else(|| "timestamp out of range".to_string())?,
            )
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_forms_are_postgresqls() {
        assert_eq!(text(&Value::Decimal(-5, 2)).unwrap(), "-0.05");
        assert_eq!(text(&Value::Date(9204)).unwrap(), "1995-03-15");
        assert_eq!(text(&Value::Boolean(true)).unwrap(), "t");
        assert_eq!(text(&Value::Double(f64::INFINITY)).unwrap(), "Infinity");
        assert_eq!(text(&Value::Double(0.25)).unwrap(), "0.25");
        assert_eq!(text(&Value::Null), None);
    }

    #[test]
    fn timestamps_on_the_wire() {
        let t = kura_common::timestamp::parse_timestamp("2000-01-01 00:00:01.5").unwrap();
        let mut out = Vec::new();
        binary(&Value::Timestamp(t), &DataType::Timestamp, &mut out).unwrap();
        assert_eq!(out, 1_500_000i64.to_be_bytes());
        assert_eq!(
            decode_param(Some(&out), Some(&DataType::Timestamp), true).unwrap(),
            Value::Timestamp(t)
        );
        assert_eq!(text(&Value::Timestamp(t)).unwrap(), "2000-01-01 00:00:01.5");
        assert_eq!(
            decode_param(
                Some(b"2000-01-01 00:00:01.5"),
                Some(&DataType::Timestamp),
                false
            )
            .unwrap(),
            Value::Timestamp(t)
        );
        assert!(decode_param(Some(b"2000-13-01"), Some(&DataType::Timestamp), false).is_err());
    }

    #[test]
    fn binary_dates_count_from_2000() {
        let mut out = Vec::new();
        binary(&Value::Date(10_957), &DataType::Date, &mut out).unwrap();
        assert_eq!(out, 0i32.to_be_bytes());
        assert_eq!(
            decode_param(Some(&1i32.to_be_bytes()), Some(&DataType::Date), true).unwrap(),
            Value::Date(10_958)
        );
    }

    #[test]
    fn parameters_decode_from_text_and_binary() {
        let dec = DataType::Decimal {
            precision: 15,
            scale: 2,
        };
        assert_eq!(
            decode_param(Some(b"0.06"), Some(&dec), false).unwrap(),
            Value::Decimal(6, 2)
        );
        assert_eq!(
            decode_param(Some(b"24"), Some(&DataType::Integer), false).unwrap(),
            Value::Integer(24)
        );
        assert_eq!(
            decode_param(Some(b"1994-01-01"), Some(&DataType::Date), false).unwrap(),
            Value::Date(8766)
        );
        assert_eq!(
            decode_param(Some(b"1994-01-01 +00"), Some(&DataType::Date), false).unwrap(),
            Value::Date(8766)
        );
        assert!(decode_param(Some(b"1994-01-01 noon"), Some(&DataType::Date), false).is_err());
        assert_eq!(
            decode_param(Some(&7i64.to_be_bytes()), Some(&DataType::BigInt), true).unwrap(),
            Value::BigInt(7)
        );
        assert_eq!(
            decode_param(Some(&3i16.to_be_bytes()), Some(&DataType::Integer), true).unwrap(),
            Value::Integer(3)
        );
        assert!(decode_param(None, Some(&DataType::Integer), false)
            .unwrap()
            .is_null());
        assert!(decode_param(Some(b"x1"), Some(&DataType::Integer), false)
            .unwrap_err()
            .contains("integer"));
        assert!(decode_param(Some(&[1, 2, 3]), Some(&DataType::BigInt), true).is_err());
        assert!(decode_param(Some(b"1995-02-30"), Some(&DataType::Date), false).is_err());
    }

    #[test]
    fn smallints_are_two_bytes_and_range_checked() {
        let mut out = Vec::new();
        binary(&Value::Integer(-2), &DataType::SmallInt, &mut out).unwrap();
        assert_eq!(out, (-2i16).to_be_bytes());
        assert!(binary(&Value::Integer(40_000), &DataType::SmallInt, &mut out).is_err());
        let small = Some(&DataType::SmallInt);
        assert_eq!(
            decode_param(Some(b" -32768"), small, false).unwrap(),
            Value::Integer(-32768)
        );
        assert_eq!(
            decode_param(Some(&7i16.to_be_bytes()), small, true).unwrap(),
            Value::Integer(7)
        );
        assert_eq!(
            decode_param(Some(b"32768"), small, false).unwrap_err(),
            "value \"32768\" is out of range for type smallint"
        );
        assert!(decode_param(Some(b"1.5"), small, false)
            .unwrap_err()
            .contains("invalid input syntax for type smallint"));
        assert!(decode_param(Some(&7i32.to_be_bytes()), small, true).is_err());
        let arr = DataType::SmallInt.array_of().unwrap();
        let mut out = Vec::new();
        binary(&Value::Text("{5}".into()), &arr, &mut out).unwrap();
        let mut want = Vec::new();
        for x in [1i32, 0, 21, 1, 1, 2] {
            want.extend_from_slice(&x.to_be_bytes());
        }
        want.extend_from_slice(&5i16.to_be_bytes());
        assert_eq!(out, want);
        assert_eq!(
            decode_param(Some(&out), Some(&arr), true).unwrap(),
            Value::Text("{5}".into())
        );
    }

    #[test]
    fn arrays_on_the_wire() {
        let ints = DataType::Integer.array_of().unwrap();
        let mut out = Vec::new();
        binary(&Value::Text("{1,NULL,3}".into()), &ints, &mut out).unwrap();
        let mut want = Vec::new();
        for x in [1i32, 1, 23, 3, 1, 4, 1, -1, 4, 3] {
            want.extend_from_slice(&x.to_be_bytes());
        }
        assert_eq!(out, want);
        assert_eq!(
            decode_param(Some(&out), Some(&ints), true).unwrap(),
            Value::Text("{1,NULL,3}".into())
        );
        let texts = DataType::Varchar(None).array_of().unwrap();
        let mut out = Vec::new();
        binary(&Value::Text(r#"{"a b",x}"#.into()), &texts, &mut out).unwrap();
        assert_eq!(
            decode_param(Some(&out), Some(&texts), true).unwrap(),
            Value::Text(r#"{"a b",x}"#.into())
        );
        let mut empty = Vec::new();
        binary(&Value::Text("{}".into()), &ints, &mut empty).unwrap();
        assert_eq!(empty.len(), 12);
        assert_eq!(
            decode_param(Some(&empty), Some(&ints), true).unwrap(),
            Value::Text("{}".into())
        );
        assert_eq!(
            decode_param(Some(b"{1,2}"), Some(&ints), false).unwrap(),
            Value::Text("{1,2}".into())
        );
    }

    #[test]
    fn data_row_mixes_formats() {
        let row = vec![Value::Integer(258), Value::Null, Value::Text("ab".into())];
        let types = [
            DataType::Integer,
            DataType::Integer,
            DataType::Varchar(None),
        ];
        let r = data_row(
            &row,
            &types,
            &[FieldFormat::Binary, FieldFormat::Text, FieldFormat::Text],
        )
        .unwrap();
        assert_eq!(r.field_count, 3);
        assert_eq!(
            &r.data[..],
            &[0, 0, 0, 4, 0, 0, 1, 2, 255, 255, 255, 255, 0, 0, 0, 2, b'a', b'b']
        );
    }
}
