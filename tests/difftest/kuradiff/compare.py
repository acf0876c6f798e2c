"""Results compared as the tester states it: numbers equal within a relative tolerance
of 1e-9 or an absolute one of 1e-6 (DuckDB computes some DECIMAL results in DOUBLE),
text equal after trailing blanks are dropped (CHAR padding), NULL equal only to NULL;
row order compared only where the query's ORDER BY fixes it."""

import datetime
import decimal
import math

REL_TOLERANCE = 1e-9
ABS_TOLERANCE = 1e-6


def normalize(v):
    """A value as ('null',) / ('num', float, exact text) / ('bool', b) / ('text', s)."""
    if v is None:
        return ("null",)
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, (int, decimal.Decimal, float)):
        return ("num", float(v), v)
    if isinstance(v, datetime.datetime):
        if v.time() == datetime.time(0):
            return ("text", v.date().isoformat())
        return ("text", v.isoformat(sep=" "))
    if isinstance(v, datetime.date):
        return ("text", v.isoformat())
    return ("text", str(v).rstrip(" "))


def same(a, b):
    if a[0] != b[0]:
        return False
    if a[0] == "num":
        x, y = a[1], b[1]
        if isinstance(a[2], int) and isinstance(b[2], int):
            return a[2] == b[2]
        if math.isnan(x) or math.isnan(y):
            return math.isnan(x) and math.isnan(y)
        return abs(x - y) <= ABS_TOLERANCE or math.isclose(x, y, rel_tol=REL_TOLERANCE)
    return a[1:] == b[1:]


def _sort_key(row):
    return [(0, 0.0, "") if v[0] == "null" else (1, v[1], "") if v[0] == "num" else (2, 0.0, str(v[1])) for v in row]


def prepare(rows, ordered):
    """Rows normalised (and, where order does not count, sorted) for comparing."""
    out = [tuple(normalize(v) for v in r) for r in rows]
    return out if ordered else sorted(out, key=_sort_key)


def differences(expected, actual, ordered):
    """Why `actual` differs from `expected` (raw rows, or `expected` already prepared);
    None when they agree."""
    e = expected if expected and isinstance(expected[0][0], tuple) else prepare(expected, ordered)
    a = prepare(actual, ordered)
    if len(e) != len(a):
        return f"{len(e)} rows expected, {len(a)} returned"
    if e == a:
        return None
    if e and len(e[0]) != len(a[0]):
        return f"{len(e[0])} columns expected, {len(a[0])} returned"
    for i, (er, ar) in enumerate(zip(e, a)):
        for j, (ev, av) in enumerate(zip(er, ar)):
            if not same(ev, av):
                return f"row {i + 1} column {j + 1}: expected {show(ev)}, got {show(av)}"
    return None


def show(v):
    if v[0] == "null":
        return "NULL"
    if v[0] == "num":
        return str(v[2])
    if v[0] == "bool":
        return "t" if v[1] else "f"
    return repr(v[1])
