//! Functions of `uuid` and `bytea` values (held in their text forms, see
//! `kura_common::binary`): `encode`/`decode` (hex, base64, escape), `md5`,
//! `length`/`octet_length` of binary data, `||` of two, and
//! `gen_random_uuid()` (version 4, drawn anew for every row).

use base64::Engine;
use kura_common::binary::{bytea_bytes, bytea_from_bytes, bytea_input, to_hex, uuid_from_bytes};
use kura_common::{DataType, Value, Vector};
use rand::Rng;

use crate::error::{ExecError, ExecResult};

/// The functions this module evaluates (`ScalarFunc::Binary`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinaryFunc {
    /// `encode(bytea, format)`: text.
    Encode,
    /// `decode(text, format)`: bytea.
    Decode,
    /// `md5(text | bytea)`: 32 hex digits.
    Md5,
    /// `length(bytea)`, `octet_length(bytea | text)`: bytes.
    Length,
    /// `bytea || bytea`.
    Concat,
    /// `gen_random_uuid()`.
    RandomUuid,
}

impl BinaryFunc {
    pub fn name(self) -> &'static str {
        match self {
            BinaryFunc::Encode => "encode",
            BinaryFunc::Decode => "decode",
            BinaryFunc::Md5 => "md5",
            BinaryFunc::Length => "octet_length",
            BinaryFunc::Concat => "byteacat",
            BinaryFunc::RandomUuid => "gen_random_uuid",
        }
    }
}

fn invalid(message: impl Into<String>) -> ExecError {
    ExecError::InvalidArgument {
        code: "22023",
        message: message.into(),
    }
}

/// The bytes of a bytea value.
fn bytes_of(v: &str) -> ExecResult<Vec<u8>> {
    bytea_bytes(v).ok_or_else(|| ExecError::Internal(format!("malformed bytea value {v:?}")))
}

/// PostgreSQL's `escape` format: a backslash doubled, a zero byte and bytes
/// with the high bit set as `\ooo`, every other byte as it is.
fn escape(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len());
    for &x in b {
        match x {
            b'\\' => s.push_str("\\\\"),
            0x01..=0x7f => s.push(x as char),
            _ => s.push_str(&format!("\\{x:03o}")),
        }
    }
    s
}

/// Base64 in lines of 76 characters, as PostgreSQL writes it.
fn base64_lines(b: &[u8]) -> String {
    let flat = base64::engine::general_purpose::STANDARD.encode(b);
    let lines: Vec<&str> = flat
        .as_bytes()
        .chunks(76)
        .map(|c| std::str::from_utf8(c).unwrap_or_default())
        .collect();
    lines.join("\n")
}

fn encode(b: &[u8], format: &str) -> ExecResult<String> {
    Ok(match format.to_ascii_lowercase().as_str() {
        "hex" => to_hex(b),
        "base64" => base64_lines(b),
        "escape" => escape(b),
        other => return Err(invalid(format!("unrecognized encoding: \"{other}\""))),
    })
}

fn decode(s: &str, format: &str) -> ExecResult<Vec<u8>> {
    match format.to_ascii_lowercase().as_str() {
        "hex" => bytea_input(&format!("\\x{s}")).map_err(|e| ExecError::InvalidArgument {
            code: "22023",
            message: e.to_string(),
        }),
        "base64" => {
            let compact: String = s.chars().filter(|c| !c.is_ascii_whitespace()).collect();
            base64::engine::general_purpose::STANDARD
                .decode(compact)
                .map_err(|_| invalid("invalid base64 end sequence"))
        }
        "escape" => bytea_input(s).map_err(|e| ExecError::InvalidArgument {
            code: "22P02",
            message: e.to_string(),
        }),
        other => Err(invalid(format!("unrecognized encoding: \"{other}\""))),
    }
}

fn text(v: &Value) -> Option<&str> {
    match v {
        Value::Text(t) => Some(t),
        _ => None,
    }
}

/// Applies `f` to argument vectors of `n` rows, giving `out`. `md5` of a
/// bytea argument hashes its bytes, of text its UTF-8.
pub fn call(f: BinaryFunc, args: &[Vector], out: DataType, n: usize) -> ExecResult<Vector> {
    let bytea_arg = args.first().is_some_and(|a| a.data_type == DataType::Bytea);
    let mut rng = rand::thread_rng();
    super::row_kernel::row_by_row(f.name(), out, n, |r| {
        let vals: Vec<Value> = args.iter().map(|a| a.get_value(r)).collect();
        let v = if f == BinaryFunc::RandomUuid {
            let mut b: [u8; 16] = rng.gen();
            b[6] = (b[6] & 0x0f) | 0x40;
            b[8] = (b[8] & 0x3f) | 0x80;
            Value::Text(uuid_from_bytes(&b))
        } else if vals.iter().any(Value::is_null) {
            Value::Null
        } else {
            let a = text(&vals[0]).unwrap_or_default();
            let b = vals.get(1).and_then(text).unwrap_or_default();
            match f {
                BinaryFunc::Encode => Value::Text(encode(&bytes_of(a)?, b)?),
                BinaryFunc::Decode => Value::Text(bytea_from_bytes(&decode(a, b)?)),
                BinaryFunc::Md5 => {
                    let digest = if bytea_arg {
                        md5::compute(bytes_of(a)?)
                    } else {
                        md5::compute(a.as_bytes())
                    };
                    Value::Text(to_hex(&digest.0))
                }
                // A bytea's bytes are half its hex digits; text's are its UTF-8.
                BinaryFunc::Length if bytea_arg => {
                    Value::Integer((a.len().saturating_sub(2) / 2) as i32)
                }
                BinaryFunc::Length => Value::Integer(a.len() as i32),
                BinaryFunc::Concat => {
                    let mut joined = bytes_of(a)?;
                    joined.extend(bytes_of(b)?);
                    super::budget::check_value("||", joined.len() * 2, 0)?;
                    Value::Text(bytea_from_bytes(&joined))
                }
                BinaryFunc::RandomUuid => Value::Null,
            }
        };
        Ok(v)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_follow_postgresql() {
        assert_eq!(
            encode(b"a\\\x00\x01\xff", "escape").unwrap(),
            "a\\\\\\000\x01\\377"
        );
        assert_eq!(encode(b"hello", "base64").unwrap(), "aGVsbG8=");
        assert_eq!(encode(&[0u8; 60], "base64").unwrap().lines().count(), 2);
        assert_eq!(encode(b"\x01\xab", "HEX").unwrap(), "01ab");
        assert_eq!(decode("aGVs\nbG8=", "base64").unwrap(), b"hello");
        assert_eq!(decode("01AB", "hex").unwrap(), vec![1, 0xab]);
        assert!(decode("0g", "hex").is_err());
        assert!(encode(b"x", "rot13").is_err());
    }
}
