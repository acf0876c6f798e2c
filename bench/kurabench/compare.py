"""Cross-checking query results: between systems and against the reference answers.

Values are compared the way the TPC-H reference answers ask: numbers as numbers
(absolute tolerance 0.01 or relative tolerance), text after trimming blanks (CHAR
padding), NULL only equal to NULL; column names are not compared (systems name
unnamed aggregates differently). Row order counts, because every query with several
rows has an ORDER BY; a result holding the right rows in another order is reported
as an order difference.
"""

import datetime
import decimal
import math

ABS_TOLERANCE = 0.01
# The reference answers' relative tolerance; SQLite's binary floating-point sums of
# DECIMAL columns stay far inside it at the scale factors run here.
REL_TOLERANCE = 1e-9
NULL = "NULL"


def normalize(value):
    """A value as comparable text: NULL, numbers in plain notation, dates ISO, text trimmed."""
    if value is None:
        return NULL
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    return str(value).strip()


def normalize_rows(rows):
    return [tuple(normalize(v) for v in row) for row in rows]


def _number(text):
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def same_value(a, b):
    if a.strip() == b.strip():
        return True
    if a == NULL or b == NULL:
        return False
    x, y = _number(a), _number(b)
    if x is None or y is None:
        return False
    return abs(x - y) <= ABS_TOLERANCE or math.isclose(x, y, rel_tol=REL_TOLERANCE)


def _sort_key(row):
    return tuple((0, n, "") if (n := _number(v)) is not None else (1, 0.0, v) for v in row)


def differences(expected, actual, limit=3):
    """Why `actual` rows differ from `expected` rows (both normalised); [] when they agree.

    Returns short descriptions; an 'order only' difference is described as such.
    """
    if len(expected) != len(actual):
        return [f"{len(expected)} rows expected, {len(actual)} returned"]
    if expected and len(expected[0]) != len(actual[0]):
        return [f"{len(expected[0])} columns expected, {len(actual[0])} returned"]
    problems = []
    for i, (e_row, a_row) in enumerate(zip(expected, actual)):
        for j, (e, a) in enumerate(zip(e_row, a_row)):
            if not same_value(e, a):
                problems.append(f"row {i + 1} column {j + 1}: {e!r} vs {a!r}")
    if not problems:
        return []
    if not differences_unordered(expected, actual):
        return ["same rows in another order"]
    more = len(problems) - limit
    return problems[:limit] + ([f"... and {more} more"] if more > 0 else [])


def differences_unordered(expected, actual):
    e_sorted, a_sorted = sorted(expected, key=_sort_key), sorted(actual, key=_sort_key)
    return [
        (i, j)
        for i, (e_row, a_row) in enumerate(zip(e_sorted, a_sorted))
        for j, (e, a) in enumerate(zip(e_row, a_row))
        if not same_value(e, a)
    ]


def is_order_only(problems):
    return problems == ["same rows in another order"]


def read_answer(path):
    """A reference answer file: header line, then '|'-separated rows (NULL as NULL)."""
    with open(path, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f if line.strip()]
    if not lines:
        return [], []
    return lines[0].split("|"), [tuple(v.strip() for v in line.split("|")) for line in lines[1:]]
