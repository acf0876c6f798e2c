//! SQL data types and the physical form each is held in (DESIGN.md "Data").

use serde::{Deserialize, Serialize};
use std::fmt;

use crate::decimal::MAX_I64_PRECISION;

/// A column's SQL type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DataType {
    Boolean,
    /// 32-bit signed integer.
    Integer,
    /// 64-bit signed integer.
    BigInt,
    /// IEEE 754 double.
    Double,
    /// Exact decimal, held as an integer scaled by 10^scale: i64 up to precision 18,
    /// i128 above (aggregate results).
    Decimal {
        precision: u8,
        scale: u8,
    },
    /// Days since 1970-01-01.
    Date,
    /// Variable-length text with an optional maximum length in characters.
    Varchar(Option<u32>),
    /// Fixed-length text, blank-padded semantics (trailing blanks are insignificant).
    Char(u32),
    /// Date and time of day without time zone: microseconds since
    /// 1970-01-01 00:00:00, in the 64-bit integer column form. Last, because
    /// the catalog file stores a type by its position in this list.
    Timestamp,
    /// A one-dimensional array of `ElemType` values (see [`crate::array`]),
    /// held as its canonical PostgreSQL text form. After `Timestamp` for the
    /// catalog's positional encoding; tables do not store it (yet).
    Array(ElemType),
    /// 16-bit signed integer, held in the 32-bit integer column form (every
    /// result is range-checked to i16). Last, for the catalog's positional
    /// encoding: files written before it read as they did.
    SmallInt,
    /// PostgreSQL's `int2vector` (`ElemType::SmallInt`) or `oidvector`
    /// (`ElemType::Integer`): the catalogs' key and type lists
    /// (`pg_index.indkey`, `pg_proc.proargtypes`). Held as an array is, but
    /// subscripted from 0 and written `1 3`. Catalog columns only; after
    /// `SmallInt` for the catalog's positional encoding.
    Vector(ElemType),
    /// A UUID, held as its canonical text form (`a0eebc99-9c0b-4ef8-bb6d-
    /// 6bb9bd380a11`, lower case: ordered as its 16 bytes are). Last, for the
    /// catalog's positional encoding.
    Uuid,
    /// Binary data, held as PostgreSQL's hex text form (`\x01ff`, lower case:
    /// ordered as its bytes are). Last, for the catalog's positional encoding.
    Bytea,
    /// A span of months, days and microseconds, held as the 128-bit column
    /// form [`crate::interval::Interval::pack`] makes (ordered by span). Last,
    /// for the catalog's positional encoding.
    Interval,
    /// JSON text, held as written (checked to be JSON). It has no equality:
    /// PostgreSQL's `json` neither compares, groups nor orders. Last, for the
    /// catalog's positional encoding.
    Json,
    /// JSON held as PostgreSQL's `jsonb` output form (`kura_common::json`):
    /// keys sorted and unique, numbers as `numeric` prints them. Equal values
    /// may differ in text (`1.0`, `1`): compare by value, not by bytes. Last,
    /// for the catalog's positional encoding.
    Jsonb,
}

/// The element type of an array: any type but an array (kura's arrays have
/// one dimension, as most of PostgreSQL's do in practice).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ElemType {
    Boolean,
    Integer,
    BigInt,
    Double,
    Decimal {
        precision: u8,
        scale: u8,
    },
    Date,
    Varchar(Option<u32>),
    Char(u32),
    Timestamp,
    /// Last, as in [`DataType`]: the catalog stores this by position too.
    SmallInt,
}

impl ElemType {
    /// The elements' type.
    pub fn data_type(self) -> DataType {
        match self {
            ElemType::Boolean => DataType::Boolean,
            ElemType::Integer => DataType::Integer,
            ElemType::BigInt => DataType::BigInt,
            ElemType::Double => DataType::Double,
            ElemType::Decimal { precision, scale } => DataType::Decimal { precision, scale },
            ElemType::Date => DataType::Date,
            ElemType::Varchar(n) => DataType::Varchar(n),
            ElemType::Char(n) => DataType::Char(n),
            ElemType::Timestamp => DataType::Timestamp,
            ElemType::SmallInt => DataType::SmallInt,
        }
    }
}

/// The in-memory representation of a type's values in a [`crate::Vector`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PhysicalType {
    Bool,
    I32,
    I64,
    I128,
    F64,
    Str,
}

impl DataType {
    /// Decimal scale of the type: digits after the point (0 for every non-decimal type).
    pub fn decimal_scale(self) -> u8 {
        match self {
            DataType::Decimal { scale, .. } => scale,
            _ => 0,
        }
    }

    pub fn physical(&self) -> PhysicalType {
        match self {
            DataType::Boolean => PhysicalType::Bool,
            DataType::SmallInt | DataType::Integer | DataType::Date => PhysicalType::I32,
            DataType::BigInt | DataType::Timestamp => PhysicalType::I64,
            DataType::Double => PhysicalType::F64,
            DataType::Decimal { precision, .. } if *precision <= MAX_I64_PRECISION => {
                PhysicalType::I64
            }
            DataType::Decimal { .. } | DataType::Interval => PhysicalType::I128,
            DataType::Varchar(_)
            | DataType::Char(_)
            | DataType::Array(_)
            | DataType::Vector(_)
            | DataType::Uuid
            | DataType::Bytea
            | DataType::Json
            | DataType::Jsonb => PhysicalType::Str,
        }
    }

    /// The array type whose elements are of this type (`None` for an array:
    /// kura has no multidimensional arrays).
    pub fn array_of(self) -> Option<DataType> {
        Some(DataType::Array(match self {
            DataType::Boolean => ElemType::Boolean,
            DataType::Integer => ElemType::Integer,
            DataType::BigInt => ElemType::BigInt,
            DataType::Double => ElemType::Double,
            DataType::Decimal { precision, scale } => ElemType::Decimal { precision, scale },
            DataType::Date => ElemType::Date,
            DataType::Varchar(n) => ElemType::Varchar(n),
            DataType::Char(n) => ElemType::Char(n),
            DataType::Timestamp => ElemType::Timestamp,
            DataType::SmallInt => ElemType::SmallInt,
            DataType::Array(_)
            | DataType::Vector(_)
            | DataType::Uuid
            | DataType::Bytea
            | DataType::Interval => return None,
            DataType::Json | DataType::Jsonb => return None,
        }))
    }

    /// The element type of an array type.
    pub fn element(self) -> Option<DataType> {
        match self {
            DataType::Array(e) | DataType::Vector(e) => Some(e.data_type()),
            _ => None,
        }
    }

    /// An array or a catalog vector (which every array function takes).
    pub fn is_array(&self) -> bool {
        matches!(self, DataType::Array(_) | DataType::Vector(_))
    }

    /// The first subscript of this array type's values: 0 for the catalog
    /// vectors, 1 for arrays.
    pub fn lower_bound(&self) -> i32 {
        match self {
            DataType::Vector(_) => 0,
            _ => 1,
        }
    }

    /// PostgreSQL's `int2vector`.
    pub const INT2VECTOR: DataType = DataType::Vector(ElemType::SmallInt);
    /// PostgreSQL's `oidvector` (kura's OIDs are integers).
    pub const OIDVECTOR: DataType = DataType::Vector(ElemType::Integer);

    /// Width in bytes of one value in storage, `None` for variable-length text.
    pub fn fixed_width(&self) -> Option<usize> {
        match self.physical() {
            PhysicalType::Bool => Some(1),
            PhysicalType::I32 => Some(4),
            PhysicalType::I64 | PhysicalType::F64 => Some(8),
            PhysicalType::I128 => Some(16),
            PhysicalType::Str => None,
        }
    }

    pub fn is_numeric(&self) -> bool {
        matches!(
            self,
            DataType::SmallInt
                | DataType::Integer
                | DataType::BigInt
                | DataType::Double
                | DataType::Decimal { .. }
        )
    }

    /// SMALLINT, INTEGER or BIGINT.
    pub fn is_integer(&self) -> bool {
        matches!(
            self,
            DataType::SmallInt | DataType::Integer | DataType::BigInt
        )
    }

    /// The range of an integer type's values (`None` for other types).
    pub fn integer_range(&self) -> Option<(i64, i64)> {
        match self {
            DataType::SmallInt => Some((i16::MIN as i64, i16::MAX as i64)),
            DataType::Integer => Some((i32::MIN as i64, i32::MAX as i64)),
            DataType::BigInt => Some((i64::MIN, i64::MAX)),
            _ => None,
        }
    }

    pub fn is_text(&self) -> bool {
        matches!(self, DataType::Varchar(_) | DataType::Char(_))
    }

    /// Maximum length in characters for text types with one.
    pub fn max_len(&self) -> Option<u32> {
        match self {
            DataType::Varchar(n) => *n,
            DataType::Char(n) => Some(*n),
            _ => None,
        }
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataType::Boolean => write!(f, "BOOLEAN"),
            DataType::SmallInt => write!(f, "SMALLINT"),
            DataType::Integer => write!(f, "INTEGER"),
            DataType::BigInt => write!(f, "BIGINT"),
            DataType::Double => write!(f, "DOUBLE"),
            DataType::Decimal { precision, scale } => write!(f, "DECIMAL({precision},{scale})"),
            DataType::Date => write!(f, "DATE"),
            DataType::Timestamp => write!(f, "TIMESTAMP"),
            DataType::Varchar(None) => write!(f, "VARCHAR"),
            DataType::Varchar(Some(n)) => write!(f, "VARCHAR({n})"),
            DataType::Char(n) => write!(f, "CHAR({n})"),
            DataType::Array(e) => write!(f, "{}[]", e.data_type()),
            DataType::Vector(ElemType::SmallInt) => write!(f, "INT2VECTOR"),
            DataType::Vector(_) => write!(f, "OIDVECTOR"),
            DataType::Uuid => write!(f, "UUID"),
            DataType::Bytea => write!(f, "BYTEA"),
            DataType::Interval => write!(f, "INTERVAL"),
            DataType::Json => write!(f, "JSON"),
            DataType::Jsonb => write!(f, "JSONB"),
        }
    }
}
