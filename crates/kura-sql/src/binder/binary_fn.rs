//! Binding of the functions of `uuid` and `bytea` values
//! (`kura_exec::expr::binary`): `encode`, `decode`, `md5`, `octet_length`,
//! `length` and `||` of binary data, `gen_random_uuid()`.

use kura_common::{DataType, Value};
use kura_exec::expr::binary::BinaryFunc;
use kura_exec::expr::{PhysExpr, ScalarFunc};

use super::types::{coerce, fold, is_null_literal, is_untyped_literal};
use super::vocab::no_such;
use super::Binder;
use crate::error::{Pos, SqlResult};

/// `e` as an argument of type `t`: an untyped literal reads as one, a value
/// of `t` is taken, anything else is no match.
fn argument(e: &PhysExpr, t: DataType, p: Pos) -> SqlResult<Option<PhysExpr>> {
    if is_untyped_literal(e) {
        return coerce(e.clone(), t, p).map(Some);
    }
    let fits = e.data_type() == t || (t.is_text() && e.data_type().is_text());
    Ok(fits.then(|| e.clone()))
}

/// A call of `f`, NULL when an argument is the NULL literal.
pub(super) fn binary_call(f: BinaryFunc, args: Vec<PhysExpr>, data_type: DataType) -> PhysExpr {
    if args.iter().any(is_null_literal) {
        return PhysExpr::literal(Value::Null, data_type);
    }
    let call = PhysExpr::Func {
        func: ScalarFunc::Binary(f),
        args,
        data_type,
    };
    if f == BinaryFunc::RandomUuid {
        call
    } else {
        fold(call)
    }
}

impl Binder<'_> {
    /// `name(args)` for one of [`NAMES`].
    pub(super) fn bind_binary_fn(
        &mut self,
        name: &str,
        args: Vec<PhysExpr>,
        p: Pos,
    ) -> SqlResult<PhysExpr> {
        const TEXT: DataType = DataType::Varchar(None);
        let args: Vec<PhysExpr> = args
            .into_iter()
            .enumerate()
            .map(|(i, a)| {
                let t = match (name, i) {
                    ("encode", 0) => DataType::Bytea,
                    _ => TEXT,
                };
                self.type_param(a, t)
            })
            .collect();
        // Each signature: argument types, result type.
        let signatures: &[(&[DataType], BinaryFunc, DataType)] = match name {
            "encode" => &[(&[DataType::Bytea, TEXT], BinaryFunc::Encode, TEXT)],
            "decode" => &[(&[TEXT, TEXT], BinaryFunc::Decode, DataType::Bytea)],
            "md5" => &[
                (&[TEXT], BinaryFunc::Md5, TEXT),
                (&[DataType::Bytea], BinaryFunc::Md5, TEXT),
            ],
            "octet_length" => &[
                (&[TEXT], BinaryFunc::Length, DataType::Integer),
                (&[DataType::Bytea], BinaryFunc::Length, DataType::Integer),
            ],
            _ => &[(&[], BinaryFunc::RandomUuid, DataType::Uuid)],
        };
        for (types, f, out) in signatures {
            if types.len() != args.len() {
                continue;
            }
            let mut matched = Vec::new();
            for (a, t) in args.iter().zip(types.iter()) {
                match argument(a, *t, p)? {
                    Some(x) => matched.push(x),
                    None => break,
                }
            }
            if matched.len() == args.len() {
                return Ok(binary_call(*f, matched, *out));
            }
        }
        Err(no_such(name, &args, p))
    }
}
