"""The benchmark's queries: the 22 TPC-H queries and the selective queries (A)-(D) of
paper 003, read from kura's own `.sql` files, split into statements, and translated
where a system lacks some syntax (SQLite: dates and intervals)."""

import calendar
import datetime
import decimal
import math
import os
import re
from dataclasses import dataclass

from . import paths

TPCH = [f"Q{n}" for n in range(1, 23)]
SELECTIVE = ["A", "B", "C", "D"]
# (A), (C), (D) with parameters that select, at the data's scale factor, the fraction of
# rows the paper's texts select at SF 100 (kura's `tpch::run::variant_parameter`).
VARIANTS = ["vA", "vC", "vD"]
ALL = TPCH + SELECTIVE


@dataclass(frozen=True)
class Query:
    id: str  # Q1 .. Q22, A .. D
    statements: tuple  # SQL statements, in order; the result is that of the last SELECT

    @property
    def is_selective(self):
        return self.id in SELECTIVE or self.id in VARIANTS

    def file_stem(self):
        """Name of the query's .sql file and of its answer file: q01, ..., a."""
        return f"q{int(self.id[1:]):02d}" if self.id.startswith("Q") else self.id.lower()


def customer_prefix(customers):
    """A `Customer#` name prefix picking 10^r customers (r rounded from log10, at least one)."""
    free = min(max(round(math.log10(customers)), 0), 8)
    return "Customer#" + "0" * (8 - free) + "1"


def variant_parameter(query_id, sf):
    """The substitution parameter of a variant at scale factor `sf`."""
    if query_id == "vA":
        return str(max(round(8000 * sf / 100), 1))
    if query_id == "vC":
        return customer_prefix(10000 * sf / 100)
    if query_id == "vD":
        return customer_prefix(1000 * sf / 100)
    raise ValueError(f"{query_id} is not a variant")


def resolve(spec):
    """Query ids from a user's list: 'all', 'tpch', 'selective', 'none', or ids like 1, q6, Q06, a."""
    ids = []
    for part in [p.strip() for p in spec.split(",") if p.strip()]:
        lower = part.lower()
        if lower == "none":
            continue
        if lower == "all":
            ids += ALL
        elif lower == "tpch":
            ids += TPCH
        elif lower == "selective":
            ids += SELECTIVE
        elif lower == "variants":
            ids += VARIANTS
        else:
            bare = lower[1:] if lower.startswith("q") else lower
            if bare.isdigit() and 1 <= int(bare) <= 22:
                ids.append(f"Q{int(bare)}")
            elif bare in ("a", "b", "c", "d"):
                ids.append(bare.upper())
            elif lower in ("va", "vc", "vd"):
                ids.append("v" + lower[1].upper())
            else:
                raise ValueError(
                    f"unknown query {part!r} (expected 1-22, a-d, va, vc, vd, tpch, selective, variants, all or none)"
                )
    return list(dict.fromkeys(ids))


def strip_comment_lines(sql):
    return "\n".join(line for line in sql.splitlines() if not line.strip().startswith("--"))


def split_statements(sql):
    """Statements of a script (the query texts hold no ';' inside literals)."""
    return tuple(s.strip() for s in strip_comment_lines(sql).split(";") if s.strip())


def load(query_id, query_dir=paths.QUERY_DIR, sf=None):
    """A query's statements; a variant's parameter is substituted for scale factor `sf`."""
    stem = Query(query_id, ()).file_stem()
    with open(os.path.join(query_dir, stem + ".sql"), encoding="utf-8") as f:
        text = f.read()
    if query_id in VARIANTS:
        if sf is None:
            raise ValueError(f"{query_id}: a variant needs the scale factor")
        text = text.replace(":1", variant_parameter(query_id, sf))
    return Query(query_id, split_statements(text))


def is_select(statement):
    return statement.lstrip().lower().startswith(("select", "with"))


class NotRunnable(Exception):
    """A system cannot run a query at all; the report lists it as not run, with the reason."""


def add_interval(day, amount, unit):
    """`day` plus a signed number of days, months or years (months clamp to the month's end)."""
    if unit == "day":
        return day + datetime.timedelta(days=amount)
    months = amount * 12 if unit == "year" else amount
    month_index = day.month - 1 + months
    year, month = day.year + month_index // 12, month_index % 12 + 1
    return datetime.date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


_DATE_ARITH = re.compile(r"date\s+'(\d{4}-\d{2}-\d{2})'\s*([+-])\s*interval\s+'(\d+)'\s+(day|month|year)s?", re.I)
_DATE_LITERAL = re.compile(r"date\s+'(\d{4}-\d{2}-\d{2})'", re.I)
_EXTRACT_YEAR = re.compile(r"extract\s*\(\s*year\s+from\s+([\w.]+)\s*\)", re.I)
_SUBSTRING = re.compile(r"substring\s*\(\s*([\w.]+)\s+from\s+(\d+)\s+for\s+(\d+)\s*\)", re.I)
_DECIMAL_ARITH = re.compile(r"(?<![\w.])(\d+\.\d+)\s*([+-])\s*(\d+\.\d+)(?![\w.])")
_DERIVED_COLUMNS = re.compile(r"\)\s*as\s+(\w+)\s*\(([\w\s,]+)\)", re.I)


def to_sqlite(query):
    """The query in SQLite's dialect, and what was rewritten (empty when nothing was).

    SQLite has no DATE type or intervals: dates are stored as ISO text (which sorts as
    dates do), so a date literal becomes a string and `date + interval` is computed
    here; `extract(year ...)` becomes strftime, `substring(... from ... for ...)`
    becomes substr, and a derived table's column list (Q13) moves into its select list.
    SQLite computes DECIMAL in binary floating point, where 0.06 + 0.01 < 0.07: sums and
    differences of decimal constants (Q6) are folded here, exactly.
    """
    notes = []
    statements = []
    for stmt in query.statements:

        def arith(m):
            day = datetime.date.fromisoformat(m.group(1))
            amount = int(m.group(3)) * (1 if m.group(2) == "+" else -1)
            return f"'{add_interval(day, amount, m.group(4).lower()).isoformat()}'"

        new, n = _DATE_ARITH.subn(arith, stmt)
        if n:
            notes.append("date ± interval computed as a literal")
        new, n = _DATE_LITERAL.subn(lambda m: f"'{m.group(1)}'", new)
        if n:
            notes.append("date literals as ISO text")
        new, n = _EXTRACT_YEAR.subn(lambda m: f"cast(strftime('%Y', {m.group(1)}) as integer)", new)
        if n:
            notes.append("extract(year) as strftime")
        new, n = _SUBSTRING.subn(lambda m: f"substr({m.group(1)}, {m.group(2)}, {m.group(3)})", new)
        if n:
            notes.append("substring(from for) as substr")
        new, n = _DECIMAL_ARITH.subn(_fold_decimal, new)
        if n:
            notes.append("decimal constant arithmetic folded (exact, as DECIMAL)")
        new = _move_derived_columns(new, notes)
        statements.append(new)
    return Query(query.id, tuple(statements)), list(dict.fromkeys(notes))


def _fold_decimal(m):
    a, b = decimal.Decimal(m.group(1)), decimal.Decimal(m.group(3))
    return str(a + b if m.group(2) == "+" else a - b)


def _move_derived_columns(stmt, notes):
    """`(select a, count(x) from ...) as t (a, c)` -> `(select a as a, count(x) as c from ...) as t`.

    Only for a derived table whose select list has exactly as many top-level items as
    the alias list names; otherwise the statement is left as it is (SQLite then
    reports the syntax error, which the run records).
    """
    match = _DERIVED_COLUMNS.search(stmt)
    if not match:
        return stmt
    names = [n.strip() for n in match.group(2).split(",")]
    close = match.start()  # the ')' ending the derived table
    depth, open_at = 0, None
    for i in range(close, -1, -1):
        depth += stmt[i] == ")"
        depth -= stmt[i] == "("
        if depth == 0:
            open_at = i
            break
    if open_at is None:
        return stmt
    inner = stmt[open_at + 1 : close]
    select = re.match(r"\s*select\s", inner, re.I)
    from_at = _top_level_keyword(inner, "from")
    if not select or from_at is None:
        return stmt
    items = _split_top_level(inner[select.end() : from_at])
    if len(items) != len(names):
        return stmt
    renamed = ", ".join(f"{item.strip()} as {name}" for item, name in zip(items, names))
    new_inner = inner[: select.end()] + renamed + " " + inner[from_at:]
    notes.append("derived-table column list moved into its select list")
    return stmt[: open_at + 1] + new_inner + ") as " + match.group(1) + stmt[match.end() :]


def _split_top_level(text):
    items, depth, current = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            items.append(current)
            current = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        current += ch
    items.append(current)
    return items


def _top_level_keyword(text, keyword):
    depth = 0
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and re.match(rf"\b{keyword}\b", text[i:], re.I) and (i == 0 or not text[i - 1].isalnum()):
            return i
    return None


def created_views(query):
    """Names of the views a query's statements create (Q15), to drop after a failure."""
    names = []
    for stmt in query.statements:
        match = re.match(r"\s*create\s+view\s+(\w+)", stmt, re.I)
        if match:
            names.append(match.group(1))
    return names
