"""Where DuckDB refuses a query that PostgreSQL — whose semantics kura follows —
accepts, kura's answer is not a failure. Each entry says why."""

import re

# (pattern of DuckDB's error, pattern the SQL must contain, why PostgreSQL differs)
KNOWN = [
    (
        r"Out of Range Error: Overflow in (multiplication|addition|subtraction)",
        r"\) AND \(",
        "DuckDB evaluates a conjunct on rows another conjunct removes (a join filter on "
        "rows a pushed-down scan filter dropped); PostgreSQL, like kura, evaluates the "
        "pushed-down filter first and raises nothing",
    ),
    (
        r"Out of Range Error: Overflow in multiplication of DECIMAL\(18\)",
        r"\*",
        "DuckDB keeps the product of two decimals of up to 18 digits in 18 digits and "
        "fails past them; PostgreSQL's numeric, like kura's 38-digit decimal, holds it",
    ),
]

# (pattern of kura's error, pattern the SQL must contain, why): SQL DuckDB answers
# and PostgreSQL — whose semantics kura follows — refuses, as kura does.
KNOWN_REFUSALS = [
    (
        r"operator does not exist: DATE = INTEGER",
        r"= 19950101\b",
        "DuckDB compares a date with an integer; PostgreSQL has no date = integer "
        "operator (ERROR: operator does not exist: date = integer)",
    ),
]

# DuckDB's own failures on valid SQL (its internal errors): the query has no
# reference answer and is skipped.
DUCKDB_BUGS = [
    r"^INTERNAL Error",
    # DuckDB 2.0, a CASE with a typed NULL branch compared to a constant:
    # CASE WHEN c <> 'AIR' THEN CAST(NULL AS VARCHAR) ELSE 'abc' END = 'F'.
    r"BindBuiltinScalarFunction did not return a BoundFunctionExpression",
]


def duckdb_bug(duckdb_error):
    return any(re.search(p, duckdb_error) for p in DUCKDB_BUGS)


def known_refusal(sql, kura_error):
    return any(re.search(e, kura_error) and re.search(s, sql) for e, s, _ in KNOWN_REFUSALS)


def known_difference(sql, duckdb_error):
    return any(re.search(e, duckdb_error) and re.search(s, sql) for e, s, _ in KNOWN)


def duckdb_over_limit(q, duck):
    """DuckDB answered more rows than the query's LIMIT allows: DuckDB 2.0 returns
    every row of some ORDER BY ... LIMIT queries over a RIGHT JOIN whose ON never
    holds (SELECT l.x FROM lineitem l RIGHT JOIN part p ON l.l_discount < 0
    ORDER BY 1 DESC NULLS FIRST LIMIT 1 gives 2,000 rows)."""
    return duck[0] == "rows" and q.limit is not None and len(duck[2]) > q.limit
