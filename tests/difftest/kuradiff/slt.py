"""A shrunk failure written as a sqllogictest file for `tests/slt/tpch/`, whose files
run against TPC-H SF 0.01 with paper 003's indexes (see crates/kura/tests/slt.rs).
The expected rows are DuckDB's; the runner compares them with the tester's tolerance."""

import datetime
import decimal

from .schema import NULL_TABLES

INT_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UBIGINT", "UINTEGER")
REAL_TYPES = ("DOUBLE", "FLOAT", "REAL", "DECIMAL")


def type_letter(duckdb_type):
    t = duckdb_type.upper()
    if t.startswith(INT_TYPES):
        return "I"
    if t.startswith(REAL_TYPES):
        return "R"
    return "T"


def value_text(v):
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "t" if v else "f"
    if isinstance(v, decimal.Decimal):
        return format(v, "f")
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (datetime.date, datetime.datetime)):
        return v.isoformat()
    s = str(v).rstrip(" ")
    return s if s.strip() else "(empty)"


def render(sql, config, types, rows, ordered, header):
    """The text of one regression file."""
    out = [f"# {line}" for line in header]
    out.append("")
    for name, ctas in NULL_TABLES.items():
        if name in sql:
            out += ["statement ok", ctas, ""]
    for name, value in config.items():
        if name == "buffer":
            continue
        out += ["onlyif kura", "statement ok", f"SET {name} = '{value}'", ""]
    letters = "".join(type_letter(t) for t in types)
    out.append(f"query {letters}" + ("" if ordered else " rowsort"))
    out.append(sql)
    out.append("----")
    lines = [" ".join(value_text(v) for v in row) for row in rows]
    out += lines if ordered else sorted(lines)
    return "\n".join(out) + "\n"
