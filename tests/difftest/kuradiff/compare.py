"""Results compared as the tester states it: numbers equal within a relative tolerance
of 1e-9 or an absolute one of 1e-6 (DuckDB computes some DECIMAL results in DOUBLE),
text equal after trailing blanks are dropped (CHAR padding), NULL equal only to NULL;
row order compared only where the query's ORDER BY fixes it — and there, rows whose
sort keys are equal within the tolerance may come in either order (DuckDB averages
DECIMALs in DOUBLE: 0.09 / 3 sorts below 0.03 there, equal to it in kura and
PostgreSQL, and the next key decides)."""

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


def differences(expected, actual, ordered, order_by=None):
    """Why `actual` differs from `expected` (raw rows, or `expected` already prepared);
    None when they agree. `order_by` ([(position, "ASC"/"DESC", "NULLS FIRST"/
    "NULLS LAST")]) lets an ordered result differ from `expected` in the order of
    rows whose keys tie within the tolerance."""
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
                if ordered and order_by and _same_rows(e, a) and _sorted_by(a, order_by):
                    return None
                if not ordered and _same_rows(e, a):
                    return None
                return f"row {i + 1} column {j + 1}: expected {show(ev)}, got {show(av)}"
    return None


def _same_rows(e, a):
    """The same rows in any order (values compared with the tolerance): sorted
    by numbers cut to 9 significant digits, so that rows whose first number
    differs only in the last bits (0.47140452079103146 and 0.4714045207910317)
    pair up by their next values — and, as two such numbers may still round
    apart (1.00000000049999 and 1.00000000050001), sorted led by each column in
    turn: a column whose values tell the rows apart pairs them."""
    width = len(e[0]) if e else 0
    for lead in range(max(width, 1)):
        def key(row):
            k = _tolerant_key(row)
            return k[lead:] + k[:lead]
        es, as_ = sorted(e, key=key), sorted(a, key=key)
        if all(same(x, y) for er, ar in zip(es, as_) for x, y in zip(er, ar)):
            return True
    return False


def _tolerant_key(row):
    return [(k[0], float(f"{k[1]:.9g}"), k[2]) if k[0] == 1 else k for k in _sort_key(row)]


def _sorted_by(rows, order_by):
    """Whether each row comes no later than the next under ORDER BY, keys equal
    within the tolerance counting as ties."""
    for r, s in zip(rows, rows[1:]):
        for position, direction, nulls in order_by:
            c = _compare(r[position - 1], s[position - 1], direction, nulls)
            if c < 0:
                break
            if c > 0:
                return False
    return True


def _compare(v, w, direction, nulls):
    if v[0] == "null" or w[0] == "null":
        if v[0] == w[0]:
            return 0
        first = -1 if nulls == "NULLS FIRST" else 1
        return first if v[0] == "null" else -first
    if same(v, w):
        return 0
    c = (v[1] > w[1]) - (v[1] < w[1])
    return -c if direction == "DESC" else c


def show(v):
    if v[0] == "null":
        return "NULL"
    if v[0] == "num":
        return str(v[2])
    if v[0] == "bool":
        return "t" if v[1] else "f"
    return repr(v[1])
