//! The one list of the SQL functions kura evaluates: each function's name, kind,
//! volatility, signatures (argument and result types by PostgreSQL's type names)
//! and the binder module that binds it. The binder dispatches by it, `pg_proc`
//! (so psql's `\df`) and `pg_get_function_arguments`/`_result` are made from
//! it, and the README's function table is rendered from it (a test keeps the
//! README's copy equal and checks that every signature binds).

/// What kind of function (PostgreSQL's `prokind`, and `proretset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Scalar,
    Aggregate,
    Window,
    /// A set-returning function (a FROM item or SELECT-list item).
    SetReturning,
}

/// PostgreSQL's `provolatile`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Volatility {
    /// The same arguments give the same result, always.
    Immutable,
    /// The same within a statement (it reads the clock or the catalog).
    Stable,
    /// May differ at every call (`random()`, `nextval`).
    Volatile,
}

/// Which part of the binder binds a function (kura-sql's `binder` modules).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// `count`, `sum`, `avg`, `min`, `max` and the core scalars (`binder::expr`).
    Core,
    /// The other aggregates (`binder::functions`).
    Aggregate,
    /// The other scalars (`binder::functions`).
    Scalar,
    Math,
    /// uuid and bytea (`binder::binary_fn`).
    Binary,
    Interval,
    Array,
    Sequence,
    /// `generate_series`, `unnest`, `generate_subscripts` (`binder::table_fn`, `select_srf`).
    Series,
    Window,
    /// Catalog inspection (`binder::system`).
    Catalog,
    /// The session's state and clock (`binder::session_fn`).
    Session,
    /// json and jsonb (`binder::json_fn`; the set-returning ones `binder::table_fn`).
    Json,
    /// The everyday string functions (`binder::text_fn`).
    Text,
    /// Files read as tables (`binder::file_fn`).
    Files,
}

/// One signature: argument types and result type, by `pg_type.typname`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signature {
    pub args: &'static [&'static str],
    pub result: &'static str,
}

/// One function and its signatures.
#[derive(Debug, Clone, Copy)]
pub struct Function {
    pub name: &'static str,
    pub kind: Kind,
    pub volatility: Volatility,
    pub family: Family,
    pub signatures: &'static [Signature],
}

const fn sig(args: &'static [&'static str], result: &'static str) -> Signature {
    Signature { args, result }
}

const fn f(
    name: &'static str,
    kind: Kind,
    volatility: Volatility,
    family: Family,
    signatures: &'static [Signature],
) -> Function {
    Function {
        name,
        kind,
        volatility,
        family,
        signatures,
    }
}

use Family as F;
use Kind::{Aggregate as A, Scalar as S, SetReturning as SRF, Window as W};
use Volatility::{Immutable as I, Stable as ST, Volatile as V};

const NUM: &[Signature] = &[sig(&["numeric"], "numeric"), sig(&["float8"], "float8")];
const DOUBLE1: &[Signature] = &[sig(&["float8"], "float8")];
const DOUBLE2: &[Signature] = &[sig(&["float8", "float8"], "float8")];
const TEXT_INT: &[Signature] = &[sig(&["text", "int4"], "text")];
const PAD: &[Signature] = &[
    sig(&["text", "int4"], "text"),
    sig(&["text", "int4", "text"], "text"),
];
const TRIM: &[Signature] = &[sig(&["text"], "text"), sig(&["text", "text"], "text")];
const MOMENT: &[Signature] = &[sig(&["float8"], "float8")];
const OID_TEXT: &[Signature] = &[sig(&["oid"], "text")];
const OID_BOOL: &[Signature] = &[sig(&["oid"], "bool")];
const REL_SIZE: &[Signature] = &[sig(&["regclass"], "int8")];
const INTEGER_PAIRS: &[Signature] = &[
    sig(&["int4", "int4"], "int4"),
    sig(&["int8", "int8"], "int8"),
    sig(&["numeric", "numeric"], "numeric"),
];
const LAG: &[Signature] = &[
    sig(&["anyelement"], "anyelement"),
    sig(&["anyelement", "int4"], "anyelement"),
    sig(&["anyelement", "int4", "anyelement"], "anyelement"),
];
const NOW: &[Signature] = &[sig(&[], "timestamp")];
const JUSTIFY: &[Signature] = &[sig(&["interval"], "interval")];
const ARRAY_BOUND: &[Signature] = &[sig(&["anyarray", "int4"], "int4")];

/// Every function kura evaluates, by name.
pub static FUNCTIONS: &[Function] = &[
    // Core aggregates.
    f(
        "count",
        A,
        I,
        F::Core,
        &[sig(&[], "int8"), sig(&["any"], "int8")],
    ),
    f(
        "sum",
        A,
        I,
        F::Core,
        &[
            sig(&["int2"], "int8"),
            sig(&["int4"], "int8"),
            sig(&["int8"], "numeric"),
            sig(&["numeric"], "numeric"),
            sig(&["float8"], "float8"),
        ],
    ),
    f(
        "avg",
        A,
        I,
        F::Core,
        &[
            sig(&["int4"], "numeric"),
            sig(&["int8"], "numeric"),
            sig(&["numeric"], "numeric"),
            sig(&["float8"], "float8"),
        ],
    ),
    f("min", A, I, F::Core, &[sig(&["anyelement"], "anyelement")]),
    f("max", A, I, F::Core, &[sig(&["anyelement"], "anyelement")]),
    // Core scalars.
    f(
        "coalesce",
        S,
        I,
        F::Core,
        &[sig(&["anyelement", "anyelement"], "anyelement")],
    ),
    f(
        "nullif",
        S,
        I,
        F::Core,
        &[sig(&["anyelement", "anyelement"], "anyelement")],
    ),
    f(
        "abs",
        S,
        I,
        F::Core,
        &[
            sig(&["int4"], "int4"),
            sig(&["int8"], "int8"),
            sig(&["numeric"], "numeric"),
            sig(&["float8"], "float8"),
        ],
    ),
    f(
        "round",
        S,
        I,
        F::Core,
        &[
            sig(&["numeric"], "numeric"),
            sig(&["numeric", "int4"], "numeric"),
            sig(&["float8"], "float8"),
        ],
    ),
    f("upper", S, I, F::Core, &[sig(&["text"], "text")]),
    f("lower", S, I, F::Core, &[sig(&["text"], "text")]),
    f(
        "length",
        S,
        I,
        F::Core,
        &[sig(&["text"], "int4"), sig(&["bytea"], "int4")],
    ),
    f("char_length", S, I, F::Core, &[sig(&["text"], "int4")]),
    f(
        "substr",
        S,
        I,
        F::Core,
        &[
            sig(&["text", "int4"], "text"),
            sig(&["text", "int4", "int4"], "text"),
        ],
    ),
    f(
        "substring",
        S,
        I,
        F::Core,
        &[
            sig(&["text", "int4"], "text"),
            sig(&["text", "int4", "int4"], "text"),
        ],
    ),
    f("trim", S, I, F::Core, &[sig(&["text"], "text")]),
    f("repeat", S, I, F::Core, &[sig(&["text", "int4"], "text")]),
    f(
        "date_trunc",
        S,
        I,
        F::Core,
        &[sig(&["text", "timestamp"], "timestamp")],
    ),
    // Other aggregates.
    f("bool_and", A, I, F::Aggregate, &[sig(&["bool"], "bool")]),
    f("bool_or", A, I, F::Aggregate, &[sig(&["bool"], "bool")]),
    f("every", A, I, F::Aggregate, &[sig(&["bool"], "bool")]),
    f("stddev", A, I, F::Aggregate, MOMENT),
    f("stddev_samp", A, I, F::Aggregate, MOMENT),
    f("stddev_pop", A, I, F::Aggregate, MOMENT),
    f("variance", A, I, F::Aggregate, MOMENT),
    f("var_samp", A, I, F::Aggregate, MOMENT),
    f("var_pop", A, I, F::Aggregate, MOMENT),
    f("corr", A, I, F::Aggregate, DOUBLE2),
    f("covar_pop", A, I, F::Aggregate, DOUBLE2),
    f("covar_samp", A, I, F::Aggregate, DOUBLE2),
    f("regr_slope", A, I, F::Aggregate, DOUBLE2),
    f("regr_intercept", A, I, F::Aggregate, DOUBLE2),
    f(
        "regr_count",
        A,
        I,
        F::Aggregate,
        &[sig(&["float8", "float8"], "int8")],
    ),
    f("regr_r2", A, I, F::Aggregate, DOUBLE2),
    f("regr_avgx", A, I, F::Aggregate, DOUBLE2),
    f("regr_avgy", A, I, F::Aggregate, DOUBLE2),
    f("regr_sxx", A, I, F::Aggregate, DOUBLE2),
    f("regr_syy", A, I, F::Aggregate, DOUBLE2),
    f("regr_sxy", A, I, F::Aggregate, DOUBLE2),
    f(
        "string_agg",
        A,
        I,
        F::Aggregate,
        &[sig(&["text", "text"], "text")],
    ),
    f(
        "array_agg",
        A,
        I,
        F::Aggregate,
        &[sig(&["anyelement"], "anyarray")],
    ),
    f(
        "median",
        A,
        I,
        F::Aggregate,
        &[sig(&["anyelement"], "anyelement")],
    ),
    // Ordered-set aggregates: the fraction, then the WITHIN GROUP key.
    f(
        "percentile_cont",
        A,
        I,
        F::Aggregate,
        &[sig(&["float8", "float8"], "float8")],
    ),
    f(
        "percentile_disc",
        A,
        I,
        F::Aggregate,
        &[sig(&["float8", "anyelement"], "anyelement")],
    ),
    f(
        "mode",
        A,
        I,
        F::Aggregate,
        &[sig(&["anyelement"], "anyelement")],
    ),
    // Other scalars.
    f(
        "greatest",
        S,
        I,
        F::Scalar,
        &[sig(&["anyelement", "anyelement"], "anyelement")],
    ),
    f(
        "least",
        S,
        I,
        F::Scalar,
        &[sig(&["anyelement", "anyelement"], "anyelement")],
    ),
    f(
        "date_part",
        S,
        I,
        F::Scalar,
        &[
            sig(&["text", "date"], "float8"),
            sig(&["text", "timestamp"], "float8"),
            sig(&["text", "interval"], "float8"),
        ],
    ),
    f(
        "split_part",
        S,
        I,
        F::Scalar,
        &[sig(&["text", "text", "int4"], "text")],
    ),
    f(
        "regexp_replace",
        S,
        I,
        F::Scalar,
        &[
            sig(&["text", "text", "text"], "text"),
            sig(&["text", "text", "text", "text"], "text"),
        ],
    ),
    f(
        "regexp_match",
        S,
        I,
        F::Scalar,
        &[
            sig(&["text", "text"], "_text"),
            sig(&["text", "text", "text"], "_text"),
        ],
    ),
    f(
        "to_char",
        S,
        ST,
        F::Scalar,
        &[sig(&["timestamp", "text"], "text")],
    ),
    f(
        "to_date",
        S,
        ST,
        F::Scalar,
        &[sig(&["text", "text"], "date")],
    ),
    f(
        "to_timestamp",
        S,
        ST,
        F::Scalar,
        &[sig(&["text", "text"], "timestamp")],
    ),
    f("random", S, V, F::Scalar, &[sig(&[], "float8")]),
    // Everyday string functions.
    f("left", S, I, F::Text, TEXT_INT),
    f("right", S, I, F::Text, TEXT_INT),
    f("lpad", S, I, F::Text, PAD),
    f("rpad", S, I, F::Text, PAD),
    f("reverse", S, I, F::Text, &[sig(&["text"], "text")]),
    f("strpos", S, I, F::Text, &[sig(&["text", "text"], "int4")]),
    f("concat", S, ST, F::Text, &[sig(&["any"], "text")]),
    f(
        "concat_ws",
        S,
        ST,
        F::Text,
        &[sig(&["text", "any"], "text")],
    ),
    f("initcap", S, I, F::Text, &[sig(&["text"], "text")]),
    f(
        "starts_with",
        S,
        I,
        F::Text,
        &[sig(&["text", "text"], "bool")],
    ),
    f(
        "translate",
        S,
        I,
        F::Text,
        &[sig(&["text", "text", "text"], "text")],
    ),
    f("ascii", S, I, F::Text, &[sig(&["text"], "int4")]),
    f("chr", S, I, F::Text, &[sig(&["int4"], "text")]),
    f(
        "to_hex",
        S,
        I,
        F::Text,
        &[sig(&["int4"], "text"), sig(&["int8"], "text")],
    ),
    f("ltrim", S, I, F::Scalar, TRIM),
    f("rtrim", S, I, F::Scalar, TRIM),
    f("btrim", S, I, F::Scalar, TRIM),
    // Mathematics.
    f("floor", S, I, F::Math, NUM),
    f("ceil", S, I, F::Math, NUM),
    f("ceiling", S, I, F::Math, NUM),
    f(
        "trunc",
        S,
        I,
        F::Math,
        &[
            sig(&["numeric"], "numeric"),
            sig(&["numeric", "int4"], "numeric"),
            sig(&["float8"], "float8"),
        ],
    ),
    f("sign", S, I, F::Math, NUM),
    f("sqrt", S, I, F::Math, DOUBLE1),
    f("cbrt", S, I, F::Math, DOUBLE1),
    f("exp", S, I, F::Math, DOUBLE1),
    f("ln", S, I, F::Math, DOUBLE1),
    f(
        "log",
        S,
        I,
        F::Math,
        &[
            sig(&["float8"], "float8"),
            sig(&["float8", "float8"], "float8"),
        ],
    ),
    f("log10", S, I, F::Math, DOUBLE1),
    f("power", S, I, F::Math, DOUBLE2),
    f("pow", S, I, F::Math, DOUBLE2),
    f("sin", S, I, F::Math, DOUBLE1),
    f("cos", S, I, F::Math, DOUBLE1),
    f("tan", S, I, F::Math, DOUBLE1),
    f("cot", S, I, F::Math, DOUBLE1),
    f("asin", S, I, F::Math, DOUBLE1),
    f("acos", S, I, F::Math, DOUBLE1),
    f("atan", S, I, F::Math, DOUBLE1),
    f("atan2", S, I, F::Math, DOUBLE2),
    f("degrees", S, I, F::Math, DOUBLE1),
    f("radians", S, I, F::Math, DOUBLE1),
    f("pi", S, I, F::Math, &[sig(&[], "float8")]),
    f("gcd", S, I, F::Math, INTEGER_PAIRS),
    f("lcm", S, I, F::Math, INTEGER_PAIRS),
    f("mod", S, I, F::Math, INTEGER_PAIRS),
    f(
        "width_bucket",
        S,
        I,
        F::Math,
        &[sig(&["float8", "float8", "float8", "int4"], "int4")],
    ),
    // uuid and bytea.
    f(
        "encode",
        S,
        I,
        F::Binary,
        &[sig(&["bytea", "text"], "text")],
    ),
    f(
        "decode",
        S,
        I,
        F::Binary,
        &[sig(&["text", "text"], "bytea")],
    ),
    f(
        "md5",
        S,
        I,
        F::Binary,
        &[sig(&["text"], "text"), sig(&["bytea"], "text")],
    ),
    f(
        "octet_length",
        S,
        I,
        F::Binary,
        &[sig(&["text"], "int4"), sig(&["bytea"], "int4")],
    ),
    f("gen_random_uuid", S, V, F::Binary, &[sig(&[], "uuid")]),
    // Intervals.
    f(
        "age",
        S,
        ST,
        F::Interval,
        &[
            sig(&["timestamp"], "interval"),
            sig(&["timestamp", "timestamp"], "interval"),
        ],
    ),
    f("justify_days", S, I, F::Interval, JUSTIFY),
    f("justify_hours", S, I, F::Interval, JUSTIFY),
    f("justify_interval", S, I, F::Interval, JUSTIFY),
    // Arrays.
    f("array_length", S, I, F::Array, ARRAY_BOUND),
    f("array_upper", S, I, F::Array, ARRAY_BOUND),
    f("array_lower", S, I, F::Array, ARRAY_BOUND),
    f("cardinality", S, I, F::Array, &[sig(&["anyarray"], "int4")]),
    f(
        "array_to_string",
        S,
        I,
        F::Array,
        &[
            sig(&["anyarray", "text"], "text"),
            sig(&["anyarray", "text", "text"], "text"),
        ],
    ),
    f(
        "string_to_array",
        S,
        I,
        F::Array,
        &[sig(&["text", "text"], "_text")],
    ),
    f(
        "array_append",
        S,
        I,
        F::Array,
        &[sig(&["anyarray", "anyelement"], "anyarray")],
    ),
    f(
        "array_prepend",
        S,
        I,
        F::Array,
        &[sig(&["anyelement", "anyarray"], "anyarray")],
    ),
    f(
        "array_cat",
        S,
        I,
        F::Array,
        &[sig(&["anyarray", "anyarray"], "anyarray")],
    ),
    f(
        "array_position",
        S,
        I,
        F::Array,
        &[sig(&["anyarray", "anyelement"], "int4")],
    ),
    // Sequences.
    f("nextval", S, V, F::Sequence, &[sig(&["regclass"], "int8")]),
    f("currval", S, V, F::Sequence, &[sig(&["regclass"], "int8")]),
    f(
        "setval",
        S,
        V,
        F::Sequence,
        &[
            sig(&["regclass", "int8"], "int8"),
            sig(&["regclass", "int8", "bool"], "int8"),
        ],
    ),
    // Set-returning functions.
    f(
        "generate_series",
        SRF,
        I,
        F::Series,
        &[
            sig(&["int4", "int4"], "int4"),
            sig(&["int4", "int4", "int4"], "int4"),
            sig(&["int8", "int8"], "int8"),
            sig(&["int8", "int8", "int8"], "int8"),
            sig(&["timestamp", "timestamp", "interval"], "timestamp"),
        ],
    ),
    f(
        "unnest",
        SRF,
        I,
        F::Series,
        &[sig(&["anyarray"], "anyelement")],
    ),
    f(
        "generate_subscripts",
        SRF,
        I,
        F::Series,
        &[sig(&["anyarray", "int4"], "int4")],
    ),
    // Files as tables: a path or glob; read_csv's options are named (`header => true`,
    // `delim => ';'`, `quote => '"'`), which a positional signature cannot list.
    f(
        "read_parquet",
        SRF,
        V,
        F::Files,
        &[sig(&["text"], "record")],
    ),
    f(
        "parquet_scan",
        SRF,
        V,
        F::Files,
        &[sig(&["text"], "record")],
    ),
    f("read_csv", SRF, V, F::Files, &[sig(&["text"], "record")]),
    f(
        "read_csv_auto",
        SRF,
        V,
        F::Files,
        &[sig(&["text"], "record")],
    ),
    f("read_json", SRF, V, F::Files, &[sig(&["text"], "record")]),
    f(
        "read_json_auto",
        SRF,
        V,
        F::Files,
        &[sig(&["text"], "record")],
    ),
    f("read_ndjson", SRF, V, F::Files, &[sig(&["text"], "record")]),
    f(
        "read_ndjson_auto",
        SRF,
        V,
        F::Files,
        &[sig(&["text"], "record")],
    ),
    // Window functions.
    f("row_number", W, I, F::Window, &[sig(&[], "int8")]),
    f("rank", W, I, F::Window, &[sig(&[], "int8")]),
    f("dense_rank", W, I, F::Window, &[sig(&[], "int8")]),
    f("percent_rank", W, I, F::Window, &[sig(&[], "float8")]),
    f("cume_dist", W, I, F::Window, &[sig(&[], "float8")]),
    f("ntile", W, I, F::Window, &[sig(&["int4"], "int4")]),
    f("lag", W, I, F::Window, LAG),
    f("lead", W, I, F::Window, LAG),
    f(
        "first_value",
        W,
        I,
        F::Window,
        &[sig(&["anyelement"], "anyelement")],
    ),
    f(
        "last_value",
        W,
        I,
        F::Window,
        &[sig(&["anyelement"], "anyelement")],
    ),
    f(
        "nth_value",
        W,
        I,
        F::Window,
        &[sig(&["anyelement", "int4"], "anyelement")],
    ),
    // Catalog inspection.
    f("pg_table_is_visible", S, ST, F::Catalog, OID_BOOL),
    f("pg_type_is_visible", S, ST, F::Catalog, OID_BOOL),
    f("pg_function_is_visible", S, ST, F::Catalog, OID_BOOL),
    f("pg_collation_is_visible", S, ST, F::Catalog, OID_BOOL),
    f(
        "pg_relation_is_publishable",
        S,
        ST,
        F::Catalog,
        &[sig(&["regclass"], "bool")],
    ),
    f(
        "pg_partition_ancestors",
        SRF,
        ST,
        F::Catalog,
        &[sig(&["regclass"], "regclass")],
    ),
    f(
        "format_type",
        S,
        ST,
        F::Catalog,
        &[sig(&["oid", "int4"], "text")],
    ),
    f("pg_typeof", S, ST, F::Catalog, &[sig(&["any"], "text")]),
    f(
        "pg_get_userbyid",
        S,
        ST,
        F::Catalog,
        &[sig(&["oid"], "name")],
    ),
    f(
        "pg_get_indexdef",
        S,
        ST,
        F::Catalog,
        &[sig(&["oid"], "text"), sig(&["oid", "int4", "bool"], "text")],
    ),
    f(
        "pg_get_viewdef",
        S,
        ST,
        F::Catalog,
        &[sig(&["oid"], "text"), sig(&["oid", "bool"], "text")],
    ),
    f(
        "pg_get_expr",
        S,
        ST,
        F::Catalog,
        &[sig(&["text", "oid"], "text")],
    ),
    f(
        "pg_get_constraintdef",
        S,
        ST,
        F::Catalog,
        &[sig(&["oid"], "text"), sig(&["oid", "bool"], "text")],
    ),
    f("pg_get_partkeydef", S, ST, F::Catalog, OID_TEXT),
    f("pg_get_triggerdef", S, ST, F::Catalog, OID_TEXT),
    f(
        "pg_get_statisticsobjdef_columns",
        S,
        ST,
        F::Catalog,
        OID_TEXT,
    ),
    f("pg_get_function_sqlbody", S, ST, F::Catalog, OID_TEXT),
    f(
        "obj_description",
        S,
        ST,
        F::Catalog,
        &[sig(&["oid", "name"], "text")],
    ),
    f(
        "col_description",
        S,
        ST,
        F::Catalog,
        &[sig(&["oid", "int4"], "text")],
    ),
    f(
        "shobj_description",
        S,
        ST,
        F::Catalog,
        &[sig(&["oid", "name"], "text")],
    ),
    f(
        "pg_encoding_to_char",
        S,
        ST,
        F::Catalog,
        &[sig(&["int4"], "name")],
    ),
    f(
        "replace",
        S,
        I,
        F::Catalog,
        &[sig(&["text", "text", "text"], "text")],
    ),
    f("quote_ident", S, I, F::Catalog, &[sig(&["text"], "text")]),
    f(
        "to_regtype",
        S,
        ST,
        F::Catalog,
        &[sig(&["text"], "regtype")],
    ),
    f(
        "pg_size_pretty",
        S,
        I,
        F::Catalog,
        &[sig(&["int8"], "text")],
    ),
    f("pg_table_size", S, V, F::Catalog, REL_SIZE),
    f(
        "pg_relation_size",
        S,
        V,
        F::Catalog,
        &[
            sig(&["regclass"], "int8"),
            sig(&["regclass", "text"], "int8"),
        ],
    ),
    f("pg_total_relation_size", S, V, F::Catalog, REL_SIZE),
    f("pg_indexes_size", S, V, F::Catalog, REL_SIZE),
    f(
        "pg_database_size",
        S,
        V,
        F::Catalog,
        &[sig(&["name"], "int8")],
    ),
    f(
        "pg_stat_get_numscans",
        S,
        ST,
        F::Catalog,
        &[sig(&["oid"], "int8")],
    ),
    f("pg_get_function_result", S, ST, F::Catalog, OID_TEXT),
    f("pg_get_function_arguments", S, ST, F::Catalog, OID_TEXT),
    f(
        "pg_get_function_identity_arguments",
        S,
        ST,
        F::Catalog,
        OID_TEXT,
    ),
    f(
        "pg_get_serial_sequence",
        S,
        ST,
        F::Catalog,
        &[sig(&["text", "text"], "text")],
    ),
    f(
        "has_table_privilege",
        S,
        ST,
        F::Catalog,
        &[sig(&["text", "text"], "bool")],
    ),
    // json and jsonb.
    f("json_typeof", S, I, F::Json, &[sig(&["json"], "text")]),
    f("jsonb_typeof", S, I, F::Json, &[sig(&["jsonb"], "text")]),
    f(
        "json_array_length",
        S,
        I,
        F::Json,
        &[sig(&["json"], "int4")],
    ),
    f(
        "jsonb_array_length",
        S,
        I,
        F::Json,
        &[sig(&["jsonb"], "int4")],
    ),
    f(
        "json_build_object",
        S,
        ST,
        F::Json,
        &[sig(&["any", "any"], "json")],
    ),
    f(
        "jsonb_build_object",
        S,
        ST,
        F::Json,
        &[sig(&["any", "any"], "jsonb")],
    ),
    f("json_build_array", S, ST, F::Json, &[sig(&["any"], "json")]),
    f(
        "jsonb_build_array",
        S,
        ST,
        F::Json,
        &[sig(&["any"], "jsonb")],
    ),
    f("to_json", S, ST, F::Json, &[sig(&["anyelement"], "json")]),
    f("to_jsonb", S, ST, F::Json, &[sig(&["anyelement"], "jsonb")]),
    f("jsonb_pretty", S, I, F::Json, &[sig(&["jsonb"], "text")]),
    f("json_strip_nulls", S, I, F::Json, &[sig(&["json"], "json")]),
    f(
        "jsonb_strip_nulls",
        S,
        I,
        F::Json,
        &[sig(&["jsonb"], "jsonb")],
    ),
    f(
        "json_array_elements",
        SRF,
        I,
        F::Json,
        &[sig(&["json"], "json")],
    ),
    f(
        "jsonb_array_elements",
        SRF,
        I,
        F::Json,
        &[sig(&["jsonb"], "jsonb")],
    ),
    f(
        "json_array_elements_text",
        SRF,
        I,
        F::Json,
        &[sig(&["json"], "text")],
    ),
    f(
        "jsonb_array_elements_text",
        SRF,
        I,
        F::Json,
        &[sig(&["jsonb"], "text")],
    ),
    f("json_each", SRF, I, F::Json, &[sig(&["json"], "record")]),
    f("jsonb_each", SRF, I, F::Json, &[sig(&["jsonb"], "record")]),
    f(
        "json_each_text",
        SRF,
        I,
        F::Json,
        &[sig(&["json"], "record")],
    ),
    f(
        "jsonb_each_text",
        SRF,
        I,
        F::Json,
        &[sig(&["jsonb"], "record")],
    ),
    f(
        "json_object_keys",
        SRF,
        I,
        F::Json,
        &[sig(&["json"], "text")],
    ),
    f(
        "jsonb_object_keys",
        SRF,
        I,
        F::Json,
        &[sig(&["jsonb"], "text")],
    ),
    f(
        "json_agg",
        A,
        ST,
        F::Aggregate,
        &[sig(&["anyelement"], "json")],
    ),
    f(
        "jsonb_agg",
        A,
        ST,
        F::Aggregate,
        &[sig(&["anyelement"], "jsonb")],
    ),
    f(
        "json_object_agg",
        A,
        ST,
        F::Aggregate,
        &[sig(&["any", "any"], "json")],
    ),
    f(
        "jsonb_object_agg",
        A,
        ST,
        F::Aggregate,
        &[sig(&["any", "any"], "jsonb")],
    ),
    // The session and the clock.
    f("current_database", S, ST, F::Session, &[sig(&[], "name")]),
    f("current_schema", S, ST, F::Session, &[sig(&[], "name")]),
    f(
        "current_schemas",
        S,
        ST,
        F::Session,
        &[sig(&["bool"], "text")],
    ),
    f(
        "current_setting",
        S,
        ST,
        F::Session,
        &[sig(&["text"], "text"), sig(&["text", "bool"], "text")],
    ),
    f("version", S, ST, F::Session, &[sig(&[], "text")]),
    f("pg_backend_pid", S, ST, F::Session, &[sig(&[], "int4")]),
    f("now", S, ST, F::Session, NOW),
    f("transaction_timestamp", S, ST, F::Session, NOW),
    f("statement_timestamp", S, ST, F::Session, NOW),
    f("clock_timestamp", S, V, F::Session, NOW),
];

/// The function named `name` (lower case), if kura has it.
pub fn find(name: &str) -> Option<&'static Function> {
    FUNCTIONS.iter().find(|f| f.name == name)
}

/// Whether `name` is one of `family`'s functions.
pub fn in_family(name: &str, family: Family) -> bool {
    find(name).is_some_and(|f| f.family == family)
}

/// The names of `family`'s functions.
pub fn names(family: Family) -> impl Iterator<Item = &'static str> {
    FUNCTIONS
        .iter()
        .filter(move |f| f.family == family)
        .map(|f| f.name)
}

/// The OID `pg_proc` gives a function's signature: a stable hash of its name
/// and argument types, above PostgreSQL's range of built-in OIDs.
pub fn proc_oid(name: &str, s: &Signature) -> i32 {
    const FIRST: u64 = 16_384;
    let text = format!("proc:{name}({})", s.args.join(","));
    // FNV-1a: stable across builds and platforms.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (FIRST + h % (i32::MAX as u64 - FIRST)) as i32
}

/// The function and signature `pg_proc` lists under `oid`.
pub fn by_oid(oid: i64) -> Option<(&'static Function, &'static Signature)> {
    FUNCTIONS.iter().find_map(|f| {
        f.signatures
            .iter()
            .find(|s| proc_oid(f.name, s) as i64 == oid)
            .map(|s| (f, s))
    })
}

/// A type name as `format_type` spells it (`float8` → `double precision`).
pub fn type_display(typname: &str) -> String {
    super::pg_types::type_display(typname).unwrap_or_else(|| typname.to_string())
}

/// `pg_get_function_arguments`: the argument types, comma-separated.
pub fn arguments_text(s: &Signature) -> String {
    s.args
        .iter()
        .map(|a| type_display(a))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `pg_get_function_result`: the result type (`SETOF t` for a set).
pub fn result_text(f: &Function, s: &Signature) -> String {
    let t = type_display(s.result);
    if f.kind == Kind::SetReturning {
        format!("SETOF {t}")
    } else {
        t
    }
}

/// The README's table of functions (Markdown), made from this list.
pub fn markdown_table() -> String {
    let mut out = String::from("| Function | Kind | Arguments → result |\n|---|---|---|\n");
    for f in FUNCTIONS {
        let kind = match f.kind {
            Kind::Scalar => "scalar",
            Kind::Aggregate => "aggregate",
            Kind::Window => "window",
            Kind::SetReturning => "set-returning",
        };
        let sigs: Vec<String> = f
            .signatures
            .iter()
            .map(|s| format!("({}) → {}", arguments_text(s), result_text(f, s)))
            .collect();
        out.push_str(&format!(
            "| `{}` | {kind} | {} |\n",
            f.name,
            sigs.join("; ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_signatures_distinct() {
        let mut seen = std::collections::HashSet::new();
        for f in FUNCTIONS {
            assert!(seen.insert(f.name), "{} listed twice", f.name);
            assert!(!f.signatures.is_empty(), "{} has no signature", f.name);
        }
        let mut oids = std::collections::HashSet::new();
        for f in FUNCTIONS {
            for s in f.signatures {
                assert!(oids.insert(proc_oid(f.name, s)), "{} oid clash", f.name);
                assert_eq!(
                    by_oid(proc_oid(f.name, s) as i64).map(|x| x.0.name),
                    Some(f.name)
                );
            }
        }
    }

    #[test]
    fn every_type_name_is_known() {
        for f in FUNCTIONS {
            for s in f.signatures {
                for t in s.args.iter().chain(std::iter::once(&s.result)) {
                    assert!(
                        super::super::pg_types::type_oid(t).is_some(),
                        "{}: no type {t}",
                        f.name
                    );
                }
            }
        }
    }
}
