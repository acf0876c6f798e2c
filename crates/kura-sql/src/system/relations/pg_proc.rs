//! pg_proc and pg_language: the functions kura accepts, from the function registry.

use super::*;

/// `pg_catalog.pg_proc`.
pub(super) const PG_PROC: SystemRelation = rel(
    PG,
    "pg_proc",
    1255,
    "r",
    "oid:o proname:t pronamespace:o proowner:o prolang:o procost:f prorows:f \
         provariadic:o prosupport:t prokind:t prosecdef:b proleakproof:b \
         proisstrict:b proretset:b provolatile:t proparallel:t pronargs:i \
         pronargdefaults:i prorettype:o proargtypes:w proallargtypes:a \
         proargmodes:a proargnames:a proargdefaults:t protrftypes:a prosrc:t \
         probin:t prosqlbody:t proconfig:a proacl:a",
    pg_proc_rows,
);

fn pg_proc_rows(_snap: &Snapshot) -> Vec<Vec<Value>> {
    {
        use kura_exec::expr::registry::{proc_oid, Kind, Volatility, FUNCTIONS};
        let type_oid = |t: &str| kura_exec::expr::pg_types::type_oid(t).unwrap_or(0);
        FUNCTIONS
            .iter()
            .flat_map(|f| f.signatures.iter().map(move |sig| (f, sig)))
            .map(|(f, sig)| {
                let kind = match f.kind {
                    Kind::Aggregate => "a",
                    Kind::Window => "w",
                    Kind::Scalar | Kind::SetReturning => "f",
                };
                let volatile = match f.volatility {
                    Volatility::Immutable => "i",
                    Volatility::Stable => "s",
                    Volatility::Volatile => "v",
                };
                let args: Vec<String> = sig.args.iter().map(|a| type_oid(a).to_string()).collect();
                vec![
                    o(proc_oid(f.name, sig)),
                    s(f.name),
                    o(PG_CATALOG_OID),
                    o(OWNER_OID),
                    o(12),
                    Value::Double(1.0),
                    Value::Double(if f.kind == Kind::SetReturning {
                        1000.0
                    } else {
                        0.0
                    }),
                    o(0),
                    s("-"),
                    s(kind),
                    b(false),
                    b(false),
                    b(f.kind == Kind::Scalar),
                    b(f.kind == Kind::SetReturning),
                    s(volatile),
                    s("s"),
                    Value::Integer(sig.args.len() as i32),
                    Value::Integer(0),
                    o(type_oid(sig.result)),
                    s(&args.join(" ")),
                    N,
                    N,
                    N,
                    N,
                    N,
                    s(f.name),
                    N,
                    N,
                    N,
                    N,
                ]
            })
            .collect()
    }
}

/// `pg_catalog.pg_language`.
pub(super) const PG_LANGUAGE: SystemRelation = rel(
    PG,
    "pg_language",
    2612,
    "r",
    "oid:o lanname:t lanowner:o lanispl:b lanpltrusted:b lanplcallfoid:o \
         laninline:o lanvalidator:o lanacl:a",
    pg_language_rows,
);

// Every function of kura's is built in (`prolang` 12, internal).
fn pg_language_rows(_snap: &Snapshot) -> Vec<Vec<Value>> {
    [(12, "internal"), (13, "c"), (14, "sql")]
        .into_iter()
        .map(|(oid, name)| {
            vec![
                o(oid),
                s(name),
                o(OWNER_OID),
                b(false),
                b(oid == 14),
                o(0),
                o(0),
                o(0),
                N,
            ]
        })
        .collect()
}

/// Whether `name` is a function a `regproc` may name: one `pg_proc` lists,
/// or a type's input/output function `pg_type` names (`int4_in`, `array_out`).
pub fn is_function_name(name: &str) -> bool {
    if kura_exec::expr::registry::find(name).is_some() {
        return true;
    }
    pg_types().iter().any(|t| {
        let io = if t.elem != 0 {
            "array"
        } else {
            t.name.as_str()
        };
        ["_in", "_out", "_recv", "_send"]
            .iter()
            .any(|suffix| name.strip_suffix(suffix) == Some(io))
    })
}
