"""Where DuckDB refuses a query that PostgreSQL — whose semantics kura follows —
accepts, kura's answer is not a failure. Each entry says why."""

import re

# (pattern of DuckDB's error, pattern the SQL must contain, why PostgreSQL differs)
KNOWN = [
]


def known_difference(sql, duckdb_error):
    return any(re.search(e, duckdb_error) and re.search(s, sql) for e, s, _ in KNOWN)
