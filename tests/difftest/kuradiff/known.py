"""Where DuckDB refuses a query that PostgreSQL — whose semantics kura follows —
accepts, kura's answer is not a failure. Each entry says why."""

import re

# (pattern of DuckDB's error, pattern the SQL must contain, why PostgreSQL differs)
KNOWN = [
    (
        r"BindBuiltinScalarFunction did not return a BoundFunctionExpression",
        r"CAST\(NULL AS",
        "a DuckDB 2.0 binder bug on a CASE with a typed NULL branch compared to a "
        "constant (CASE WHEN c <> 'AIR' THEN CAST(NULL AS VARCHAR) ELSE 'abc' END = 'F'); "
        "valid SQL that PostgreSQL answers",
    ),
]


def known_difference(sql, duckdb_error):
    return any(re.search(e, duckdb_error) and re.search(s, sql) for e, s, _ in KNOWN)
