//! SQL types on the wire: kura's `DataType` as PostgreSQL type OIDs and type
//! modifiers (numeric 1700, int2 21, int4 23, int8 20, float8 701, date 1082, timestamp 1114, varchar 1043,
//! bpchar 1042, bool 16), and arrays of each (int4[] 1007, text[] 1009, ...).

use kura_common::{DataType, ElemType};
use pgwire::api::Type;

/// The PostgreSQL type a column of `dt` is announced as.
pub fn pg_type(dt: &DataType) -> Type {
    match dt {
        DataType::Boolean => Type::BOOL,
        DataType::SmallInt => Type::INT2,
        DataType::Integer => Type::INT4,
        DataType::BigInt => Type::INT8,
        DataType::Double => Type::FLOAT8,
        DataType::Decimal { .. } => Type::NUMERIC,
        DataType::Date => Type::DATE,
        DataType::Timestamp => Type::TIMESTAMP,
        DataType::Varchar(_) => Type::VARCHAR,
        DataType::Char(_) => Type::BPCHAR,
        DataType::Array(e) => match e {
            ElemType::Boolean => Type::BOOL_ARRAY,
            ElemType::SmallInt => Type::INT2_ARRAY,
            ElemType::Integer => Type::INT4_ARRAY,
            ElemType::BigInt => Type::INT8_ARRAY,
            ElemType::Double => Type::FLOAT8_ARRAY,
            ElemType::Decimal { .. } => Type::NUMERIC_ARRAY,
            ElemType::Date => Type::DATE_ARRAY,
            ElemType::Timestamp => Type::TIMESTAMP_ARRAY,
            // Unbounded text is PostgreSQL's text[] (what ARRAY['a'] and
            // string_to_array give); a declared length is varchar[].
            ElemType::Varchar(None) => Type::TEXT_ARRAY,
            ElemType::Varchar(Some(_)) => Type::VARCHAR_ARRAY,
            ElemType::Char(_) => Type::BPCHAR_ARRAY,
        },
        DataType::Vector(ElemType::SmallInt) => Type::INT2_VECTOR,
        DataType::Vector(_) => Type::OID_VECTOR,
        DataType::Uuid => Type::UUID,
        DataType::Bytea => Type::BYTEA,
        DataType::Interval => Type::INTERVAL,
        DataType::Json => Type::JSON,
        DataType::Jsonb => Type::JSONB,
    }
}

/// The type modifier PostgreSQL sends in a RowDescription (`-1` when none):
/// numeric packs precision and scale, character types their length, each + 4.
pub fn type_modifier(dt: &DataType) -> i32 {
    match dt {
        DataType::Decimal { precision, scale } => {
            ((i32::from(*precision) << 16) | i32::from(*scale)) + 4
        }
        DataType::Varchar(Some(n)) | DataType::Char(n) if *n <= i32::MAX as u32 - 4 => {
            *n as i32 + 4
        }
        _ => -1,
    }
}

/// The byte width PostgreSQL announces (`-1` for variable length).
pub fn type_size(dt: &DataType) -> i16 {
    match dt {
        DataType::Boolean => 1,
        DataType::SmallInt => 2,
        DataType::Integer | DataType::Date => 4,
        DataType::BigInt | DataType::Double | DataType::Timestamp => 8,
        DataType::Uuid | DataType::Interval => 16,
        _ => -1,
    }
}

/// The kura type a client-declared parameter type stands for, if kura has one.
pub fn from_pg_type(t: &Type) -> Option<DataType> {
    Some(match *t {
        Type::BOOL => DataType::Boolean,
        Type::INT2 => DataType::SmallInt,
        Type::INT4 => DataType::Integer,
        Type::INT8 => DataType::BigInt,
        Type::FLOAT4 | Type::FLOAT8 => DataType::Double,
        Type::NUMERIC => DataType::Decimal {
            precision: 38,
            scale: 0,
        },
        Type::DATE => DataType::Date,
        // A client's timestamptz is taken as a timestamp in UTC (kura has no zones).
        Type::TIMESTAMP | Type::TIMESTAMPTZ => DataType::Timestamp,
        Type::VARCHAR | Type::TEXT | Type::NAME => DataType::Varchar(None),
        Type::BPCHAR => DataType::Char(1),
        Type::UUID => DataType::Uuid,
        Type::BYTEA => DataType::Bytea,
        Type::INTERVAL => DataType::Interval,
        Type::JSON => DataType::Json,
        Type::JSONB => DataType::Jsonb,
        Type::BOOL_ARRAY => DataType::Array(ElemType::Boolean),
        Type::INT2_ARRAY => DataType::Array(ElemType::SmallInt),
        Type::INT4_ARRAY => DataType::Array(ElemType::Integer),
        Type::INT8_ARRAY => DataType::Array(ElemType::BigInt),
        Type::FLOAT4_ARRAY | Type::FLOAT8_ARRAY => DataType::Array(ElemType::Double),
        // The scale each element was written with is kept (see codec): the
        // statement's context gives the array its element type.
        Type::NUMERIC_ARRAY => DataType::Array(ElemType::Decimal {
            precision: 38,
            scale: 0,
        }),
        Type::DATE_ARRAY => DataType::Array(ElemType::Date),
        Type::TIMESTAMP_ARRAY | Type::TIMESTAMPTZ_ARRAY => DataType::Array(ElemType::Timestamp),
        Type::TEXT_ARRAY | Type::VARCHAR_ARRAY | Type::NAME_ARRAY | Type::BPCHAR_ARRAY => {
            DataType::Array(ElemType::Varchar(None))
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oids_are_postgresqls() {
        assert_eq!(
            pg_type(&DataType::Decimal {
                precision: 15,
                scale: 2
            })
            .oid(),
            1700
        );
        assert_eq!(pg_type(&DataType::SmallInt).oid(), 21);
        assert_eq!(pg_type(&DataType::Integer).oid(), 23);
        assert_eq!(pg_type(&DataType::BigInt).oid(), 20);
        assert_eq!(pg_type(&DataType::Double).oid(), 701);
        assert_eq!(pg_type(&DataType::Date).oid(), 1082);
        assert_eq!(pg_type(&DataType::Varchar(Some(25))).oid(), 1043);
        assert_eq!(pg_type(&DataType::Char(1)).oid(), 1042);
        assert_eq!(pg_type(&DataType::Boolean).oid(), 16);
        let arr = |t: DataType| pg_type(&t.array_of().unwrap()).oid();
        assert_eq!(arr(DataType::SmallInt), 1005);
        assert_eq!(arr(DataType::Integer), 1007);
        assert_eq!(arr(DataType::BigInt), 1016);
        assert_eq!(arr(DataType::Varchar(None)), 1009);
        assert_eq!(arr(DataType::Varchar(Some(3))), 1015);
        assert_eq!(arr(DataType::Double), 1022);
        assert_eq!(
            arr(DataType::Decimal {
                precision: 10,
                scale: 2
            }),
            1231
        );
        assert_eq!(arr(DataType::Boolean), 1000);
        assert_eq!(arr(DataType::Date), 1182);
    }

    #[test]
    fn modifiers_follow_postgresql_packing() {
        // PostgreSQL: numeric(15,2) has atttypmod 983046, varchar(25) 29, char(1) 5.
        assert_eq!(
            type_modifier(&DataType::Decimal {
                precision: 15,
                scale: 2
            }),
            983046
        );
        assert_eq!(type_modifier(&DataType::Varchar(Some(25))), 29);
        assert_eq!(type_modifier(&DataType::Char(1)), 5);
        assert_eq!(type_modifier(&DataType::Varchar(None)), -1);
        assert_eq!(type_modifier(&DataType::Integer), -1);
    }
}
