//! PostgreSQL's binary COPY format (`COPY ... (FORMAT binary)`): a signature
//! and header, then per row a field count and each field as its length and
//! its type's binary form (int2/int4/int8, float8, numeric, date, timestamp,
//! bool, text), then a trailer. Rows going out are written in it; rows coming
//! in are read from it and handed to the loader as CSV lines.

use std::io::Read;

use kura_common::{DataType, Value};

use crate::error::{KuraError, KuraResult};

/// The 11-byte signature every binary COPY stream starts with.
const SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";
/// Days from 1970-01-01 (kura's epoch) to 2000-01-01 (PostgreSQL's).
const PG_EPOCH_DAYS: i32 = 10_957;
/// The same distance in microseconds.
const PG_EPOCH_MICROS: i64 = PG_EPOCH_DAYS as i64 * kura_common::timestamp::MICROS_PER_DAY;

/// The signature, no flags and no header extension.
pub(crate) fn header() -> Vec<u8> {
    let mut out = SIGNATURE.to_vec();
    out.extend_from_slice(&0i32.to_be_bytes());
    out.extend_from_slice(&0i32.to_be_bytes());
    out
}

/// The end of the rows: a field count of -1.
pub(crate) fn trailer() -> Vec<u8> {
    (-1i16).to_be_bytes().to_vec()
}

fn bad(what: impl Into<String>) -> KuraError {
    KuraError::Invalid(format!("binary COPY: {}", what.into()))
}

/// One row: its field count, then each field (length -1 for NULL).
pub(crate) fn row(values: &[Value], types: &[DataType]) -> KuraResult<Vec<u8>> {
    let mut out = Vec::with_capacity(2 + 12 * values.len());
    out.extend_from_slice(&(values.len() as i16).to_be_bytes());
    let mut field = Vec::new();
    for (v, t) in values.iter().zip(types) {
        if v.is_null() {
            out.extend_from_slice(&(-1i32).to_be_bytes());
            continue;
        }
        field.clear();
        encode(v, *t, &mut field)?;
        out.extend_from_slice(&(field.len() as i32).to_be_bytes());
        out.extend_from_slice(&field);
    }
    Ok(out)
}

/// A non-NULL value of column type `t` in PostgreSQL's binary form (what
/// the server sends for a binary result column too).
pub fn encode(v: &Value, t: DataType, out: &mut Vec<u8>) -> KuraResult<()> {
    let int = |v: &Value| match v {
        Value::Integer(i) => Some(i64::from(*i)),
        Value::BigInt(i) => Some(*i),
        _ => None,
    };
    match (t, v) {
        (DataType::Boolean, Value::Boolean(b)) => out.push(u8::from(*b)),
        (DataType::SmallInt, v) => {
            let i = int(v).and_then(|i| i16::try_from(i).ok());
            out.extend_from_slice(&i.ok_or_else(|| bad("smallint out of range"))?.to_be_bytes())
        }
        (DataType::Integer, v) => {
            let i = int(v).and_then(|i| i32::try_from(i).ok());
            out.extend_from_slice(&i.ok_or_else(|| bad("integer out of range"))?.to_be_bytes())
        }
        (DataType::BigInt, v) if int(v).is_some() => {
            out.extend_from_slice(&int(v).unwrap_or_default().to_be_bytes())
        }
        (DataType::Double, Value::Double(f)) => out.extend_from_slice(&f.to_be_bytes()),
        (DataType::Decimal { .. }, Value::Decimal(x, s)) => crate::pg_numeric::encode(*x, *s, out),
        (DataType::Decimal { .. }, v) if int(v).is_some() => {
            crate::pg_numeric::encode(i128::from(int(v).unwrap_or_default()), 0, out)
        }
        (DataType::Date, Value::Date(d)) => {
            out.extend_from_slice(&(d - PG_EPOCH_DAYS).to_be_bytes())
        }
        (DataType::Timestamp, Value::Timestamp(m)) => {
            out.extend_from_slice(&(m - PG_EPOCH_MICROS).to_be_bytes())
        }
        (DataType::Varchar(_) | DataType::Char(_), Value::Text(s)) => {
            out.extend_from_slice(s.as_bytes())
        }
        (DataType::Uuid, Value::Text(s)) => out.extend_from_slice(
            &kura_common::binary::uuid_bytes(s).ok_or_else(|| bad("a malformed uuid value"))?,
        ),
        (DataType::Bytea, Value::Text(s)) => out.extend_from_slice(
            &kura_common::binary::bytea_bytes(s).ok_or_else(|| bad("a malformed bytea value"))?,
        ),
        (DataType::Interval, Value::Interval(x)) => out.extend_from_slice(
            &kura_common::interval::to_pg_binary(&kura_common::interval::Interval::unpack(*x)),
        ),
        // json's binary form is its text; jsonb's a version byte (1) and the text.
        (DataType::Json, Value::Text(s)) => out.extend_from_slice(s.as_bytes()),
        (DataType::Jsonb, Value::Text(s)) => {
            out.push(1);
            out.extend_from_slice(s.as_bytes())
        }
        (DataType::Array(_) | DataType::Vector(_), _) => {
            return Err(KuraError::Unsupported(format!(
                "binary COPY of {t} values (use the text or CSV format)"
            )))
        }
        (t, v) => return Err(KuraError::Internal(format!("binary COPY: {v:?} as {t}"))),
    }
    Ok(())
}

/// A field of column type `t` read from its binary form.
fn decode(b: &[u8], t: DataType) -> KuraResult<Value> {
    let wrong = || bad(format!("a {t} field of {} bytes", b.len()));
    let be = |n: usize| -> KuraResult<i64> {
        Ok(match n {
            2 => i64::from(i16::from_be_bytes([b[0], b[1]])),
            4 => i64::from(i32::from_be_bytes(b.try_into().map_err(|_| wrong())?)),
            8 => i64::from_be_bytes(b.try_into().map_err(|_| wrong())?),
            _ => return Err(wrong()),
        })
    };
    Ok(match t {
        DataType::Boolean if b.len() == 1 => Value::Boolean(b[0] != 0),
        // Any integer width a client sent (psycopg picks one by the value);
        // the loader checks the range of the column's type.
        DataType::SmallInt | DataType::Integer | DataType::BigInt => Value::BigInt(be(b.len())?),
        DataType::Double if b.len() == 8 => {
            Value::Double(f64::from_be_bytes(b.try_into().map_err(|_| wrong())?))
        }
        DataType::Double if b.len() == 4 => Value::Double(f64::from(f32::from_be_bytes(
            b.try_into().map_err(|_| wrong())?,
        ))),
        // A numeric is 8 bytes and more: a 2- or 4-byte field is an integer
        // a client sent as one (an 8-byte one reads as the numeric it can be).
        DataType::Decimal { .. } => match b.len() {
            2 | 4 => Value::BigInt(be(b.len())?),
            _ => {
                let (x, s) = crate::pg_numeric::decode(b).ok_or_else(wrong)?;
                Value::Decimal(x, s)
            }
        },
        DataType::Date if b.len() == 4 => Value::Date(be(4)? as i32 + PG_EPOCH_DAYS),
        DataType::Timestamp if b.len() == 8 => Value::Timestamp(be(8)? + PG_EPOCH_MICROS),
        DataType::Varchar(_) | DataType::Char(_) => Value::Text(
            String::from_utf8(b.to_vec()).map_err(|_| bad("a text field is not UTF-8"))?,
        ),
        DataType::Uuid if b.len() == 16 => Value::Text(kura_common::binary::uuid_from_bytes(
            b.try_into().map_err(|_| wrong())?,
        )),
        DataType::Bytea => Value::Text(kura_common::binary::bytea_from_bytes(b)),
        DataType::Interval => Value::Interval(
            kura_common::interval::from_pg_binary(b)
                .ok_or_else(wrong)?
                .pack()
                .map_err(|_| bad("an interval out of range"))?,
        ),
        DataType::Json => Value::Text(
            String::from_utf8(b.to_vec()).map_err(|_| bad("a json field is not UTF-8"))?,
        ),
        DataType::Jsonb => match b.split_first() {
            Some((1, text)) => Value::Text(
                String::from_utf8(text.to_vec()).map_err(|_| bad("a jsonb field is not UTF-8"))?,
            ),
            _ => return Err(bad("unsupported jsonb version number")),
        },
        DataType::Array(_) | DataType::Vector(_) => {
            return Err(KuraError::Unsupported(format!(
                "binary COPY of {t} values (use the text or CSV format)"
            )))
        }
        _ => return Err(wrong()),
    })
}

/// A binary COPY stream read as CSV lines (every field quoted, NULL an empty
/// unquoted field), for the loader: each row's fields decoded as the target
/// columns' types and written in their text forms.
pub(crate) struct BinaryRows<R> {
    inner: R,
    types: Vec<DataType>,
    started: bool,
    done: bool,
    /// CSV text decoded and not yet read, from `pos`.
    pending: Vec<u8>,
    pos: usize,
}

impl<R: Read> BinaryRows<R> {
    pub(crate) fn new(inner: R, types: Vec<DataType>) -> Self {
        BinaryRows {
            inner,
            types,
            started: false,
            done: false,
            pending: Vec::new(),
            pos: 0,
        }
    }

    fn exact(&mut self, n: usize) -> std::io::Result<Vec<u8>> {
        let mut buf = vec![0; n];
        self.inner
            .read_exact(&mut buf)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::UnexpectedEof => invalid("the data ends inside a row"),
                _ => e,
            })?;
        Ok(buf)
    }

    fn int(&mut self, n: usize) -> std::io::Result<i64> {
        let b = self.exact(n)?;
        Ok(match n {
            2 => i64::from(i16::from_be_bytes([b[0], b[1]])),
            _ => i64::from(i32::from_be_bytes([b[0], b[1], b[2], b[3]])),
        })
    }

    /// Reads the header; checks the signature and that no flag it does not
    /// know (OIDs) is set.
    fn start(&mut self) -> std::io::Result<()> {
        self.started = true;
        let sig = self.exact(SIGNATURE.len())?;
        if sig != SIGNATURE {
            return Err(invalid("COPY file signature not recognized"));
        }
        let flags = self.int(4)?;
        if flags & (1 << 16) != 0 {
            return Err(invalid("rows with OIDs are not supported"));
        }
        let extension = self.int(4)?;
        if extension < 0 {
            return Err(invalid("invalid COPY file header (missing length)"));
        }
        self.exact(extension as usize)?;
        Ok(())
    }

    /// Decodes the next row into `pending`; false at the trailer.
    fn next_row(&mut self) -> std::io::Result<bool> {
        let mut count = [0u8; 2];
        if let Err(e) = self.inner.read_exact(&mut count) {
            return Err(match e.kind() {
                std::io::ErrorKind::UnexpectedEof => invalid("the data ends without its trailer"),
                _ => e,
            });
        }
        let count = i16::from_be_bytes(count);
        if count == -1 {
            return Ok(false);
        }
        if count as usize != self.types.len() {
            return Err(invalid(&format!(
                "row field count is {count}, expected {}",
                self.types.len()
            )));
        }
        for i in 0..self.types.len() {
            if i > 0 {
                self.pending.push(b',');
            }
            let len = self.int(4)?;
            if len < 0 {
                continue;
            }
            let field = self.exact(len as usize)?;
            let value = decode(&field, self.types[i]).map_err(|e| invalid(&e.to_string()))?;
            self.pending.push(b'"');
            for &c in value.to_string().as_bytes() {
                if c == b'"' {
                    self.pending.push(b'"');
                }
                self.pending.push(c);
            }
            self.pending.push(b'"');
        }
        self.pending.push(b'\n');
        Ok(true)
    }
}

fn invalid(what: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("binary COPY: {what}"),
    )
}

impl<R: Read> Read for BinaryRows<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if !self.started {
            self.start()?;
        }
        if self.pos == self.pending.len() {
            self.pending.clear();
            self.pos = 0;
            // Rows up to a block's worth, so the loader reads in large steps.
            while !self.done && self.pending.len() < 64 << 10 {
                if !self.next_row()? {
                    self.done = true;
                }
            }
        }
        let n = (self.pending.len() - self.pos).min(out.len());
        out[..n].copy_from_slice(&self.pending[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_written_read_back_as_csv() {
        let types = [
            DataType::SmallInt,
            DataType::BigInt,
            DataType::Decimal {
                precision: 12,
                scale: 2,
            },
            DataType::Varchar(None),
            DataType::Date,
            DataType::Timestamp,
            DataType::Boolean,
            DataType::Double,
        ];
        let values = [
            Value::Integer(-7),
            Value::BigInt(1 << 40),
            Value::Decimal(-1234, 2),
            Value::Text("say \"hi\", ok".into()),
            Value::Date(0),
            Value::Timestamp(1_500_000),
            Value::Boolean(true),
            Value::Double(0.5),
        ];
        let mut stream = header();
        stream.extend(row(&values, &types).unwrap());
        stream.extend(row(&vec![Value::Null; 8], &types).unwrap());
        // A numeric zero is its 8-byte header alone.
        let zero = row(
            &[Value::Decimal(0, 2)],
            &[DataType::Decimal {
                precision: 12,
                scale: 2,
            }],
        )
        .unwrap();
        let mut only_zero = header();
        only_zero.extend(&zero);
        only_zero.extend(trailer());
        let mut z = String::new();
        BinaryRows::new(
            only_zero.as_slice(),
            vec![DataType::Decimal {
                precision: 12,
                scale: 2,
            }],
        )
        .read_to_string(&mut z)
        .unwrap();
        assert_eq!(z, "\"0.00\"\n");
        stream.extend(trailer());
        let mut csv = String::new();
        BinaryRows::new(stream.as_slice(), types.to_vec())
            .read_to_string(&mut csv)
            .unwrap();
        assert_eq!(
            csv,
            "\"-7\",\"1099511627776\",\"-12.34\",\"say \"\"hi\"\", ok\",\"1970-01-01\",\
             \"1970-01-01 00:00:01.5\",\"t\",\"0.5\"\n,,,,,,,\n"
        );
    }

    #[test]
    fn a_bad_stream_is_an_error() {
        let types = vec![DataType::Integer];
        let mut out = String::new();
        let e = BinaryRows::new(&b"PGCOPY\nxx"[..], types.clone()).read_to_string(&mut out);
        assert!(e.is_err());
        let mut stream = header();
        stream.extend(row(&[Value::Integer(1)], &types).unwrap());
        // No trailer: the data ends mid-stream.
        let e = BinaryRows::new(stream.as_slice(), types).read_to_string(&mut out);
        assert!(e.unwrap_err().to_string().contains("trailer"));
    }
}
