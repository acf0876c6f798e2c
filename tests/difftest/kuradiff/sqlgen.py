"""A seeded generator of random SQL over the TPC-H schema and its NULL-heavy derived
tables: joins along keys (inner and outer), filters of every type and operator, IN,
BETWEEN, LIKE, IS NULL, CASE, arithmetic, mathematical, bitwise, string and date
functions, aggregates with and without DISTINCT or FILTER over group keys, grouping
sets, ordered-set and statistical aggregates, window functions over ROWS, RANGE and
GROUPS frames, HAVING, ORDER BY / LIMIT, DISTINCT ON, scalar, IN and EXISTS subqueries (correlated or
not), derived tables and CTEs.

It writes only SQL whose answer PostgreSQL and DuckDB define alike, so a difference is
a bug: division only of DOUBLE values (DuckDB divides integers and DECIMALs in DOUBLE
where PostgreSQL divides integers in integers and DECIMALs exactly, so rounding and
comparisons differ at boundaries such as round(-982.05 / 3, 1)), and by nothing but a
non-zero constant, explicit NULLS FIRST/LAST, LIMIT only under a total order, no
string functions on CHAR (padding), no equality on DOUBLE, and window functions whose
answer depends on the order of rows (row_number, lag, ROWS frames, ...) only under a
window ORDER BY that ends in a unique key of the rows."""

import random

from .ast import (
    Agg, Between, Bin, Case, Cast, Col, Derived, Exists, Func, InList, InQuery, IsNull, IsTruth,
    Join, Like, Lit, Neg, Not, ScalarQuery, Select, Table, Window,
)
from .schema import BOOL, CHAR, DATE, DBL, DEC, INT, NUMERIC, STR, TEXT, UNIQUE_SETS, catalog

LIKE_PATTERNS = ["%a%", "A%", "%ly%", "_o%", "%s", "%the%", "Customer#0000001%", "%BRASS", "PROMO%", "%e_"]
TEXT_LITERALS = ["'A'", "'F'", "'N'", "'O'", "'R'", "'MAIL'", "'SHIP'", "'AIR'", "'BUILDING'",
                 "'1-URGENT'", "'5-LOW'", "'Brand#23'", "'furiously'", "'MED BOX'", "'ALGERIA'"]
COMPARE = ["=", "<>", "<", "<=", ">", ">="]
REGEX_PATTERNS = ["'[aeiou]'", "'a+'", "' +'", "'[0-9]'", "'^.'", "'e.$'"]
# Window functions whose answer depends only on peers (rows with equal ORDER BY keys
# get equal answers), and those that need the order of every row fixed.
PEER_WINDOW_FUNCS = ["rank", "dense_rank", "percent_rank", "cume_dist"]
ORDER_WINDOW_FUNCS = ["row_number", "ntile", "lag", "lead", "first_value", "last_value", "nth_value"]
WINDOW_AGGS = ["sum", "avg", "min", "max", "count", "count_star"]
STAT_AGGS = ["stddev_samp", "stddev_pop", "var_samp", "var_pop", "stddev", "variance"]


class Scope:
    """Columns visible to an expression: (qualifier, Column) pairs."""

    def __init__(self, cols):
        self.cols = list(cols)

    def of(self, kinds):
        return [(q, c) for q, c in self.cols if c.kind in kinds]


class Generator:
    def __init__(self, seed, tables=None):
        self.rng = random.Random(seed)
        self.tables = tables or catalog()
        self.names = 0

    def alias(self, base):
        self.names += 1
        return f"{base}{self.names}"

    def chance(self, p):
        return self.rng.random() < p

    def pick(self, xs):
        return self.rng.choice(xs)

    # ---- literals ----------------------------------------------------------------------

    def literal(self, kind):
        r = self.rng
        if kind == INT:
            return Lit(str(r.choice([0, 1, 2, 3, 5, 7, 10, 25, 42, 100, 1000, 5000, 30000, -1])), INT)
        if kind == DEC:
            return Lit(r.choice(["0.05", "0.10", "1.00", "10.50", "24.00", "100.00", "1500.00",
                                 "5000.00", "35000.00", "-500.25", "0.00", "0.07"]), DEC)
        if kind == DBL:
            return Lit(f"CAST({r.choice(['0.5', '100.25', '-3.75', '2500.0', '9000.5'])} AS DOUBLE)", DBL)
        if kind == DATE:
            y, m, d = r.randint(1992, 1998), r.randint(1, 12), r.randint(1, 28)
            return Lit(f"DATE '{y}-{m:02d}-{d:02d}'", DATE)
        if kind == BOOL:
            return Lit(r.choice(["TRUE", "FALSE"]), BOOL)
        if kind == CHAR:
            return Lit(r.choice(TEXT_LITERALS), CHAR)
        return Lit(r.choice(TEXT_LITERALS + ["'abc'", "''"]), STR)

    def null_of(self, kind):
        sql_type = {INT: "INTEGER", DEC: "DECIMAL(15,2)", DBL: "DOUBLE", DATE: "DATE",
                    BOOL: "BOOLEAN"}.get(kind, "VARCHAR")
        return Lit(f"CAST(NULL AS {sql_type})", STR if kind == CHAR else kind)

    # ---- scalar expressions ------------------------------------------------------------

    def column(self, scope, kinds):
        found = scope.of(kinds)
        if not found:
            return None
        q, c = self.pick(found)
        return Col(c.kind, q, c.name)

    def value(self, scope, kind, depth=2):
        """An expression of `kind` over `scope`."""
        r = self.rng.random()
        col = self.column(scope, [kind])
        if depth <= 0 or r < 0.45:
            if col is not None and self.rng.random() < 0.8:
                return col
            return self.literal(kind) if self.rng.random() < 0.9 else self.null_of(kind)
        d = depth - 1
        if kind in NUMERIC:
            return self.numeric(scope, kind, d)
        if kind == STR:
            return self.string(scope, d)
        if kind == DATE:
            return self.date(scope, d)
        if kind == BOOL:
            return self.predicate(scope, d)
        if kind == CHAR:
            return col or self.literal(CHAR)
        return self.literal(kind)

    def numeric(self, scope, kind, d):
        r = self.rng.random()
        if r < 0.35:
            op = self.pick(["+", "-", "*"])
            a = self.value(scope, kind, d)
            b = self.value(scope, kind if self.chance(0.7) else INT, d)
            if op == "*" and kind != INT:
                b = self.literal(self.pick([INT, DEC]))  # keeps products within DECIMAL(38)
            return Bin(kind, op, a, b)
        if r < 0.45 and kind == DBL:
            divisor = Lit(self.pick(["3", "7", "2.5", "100"]), DEC)
            return Bin(kind, "/", self.value(scope, kind, d), divisor)
        if r < 0.52 and kind == INT:
            return Bin(INT, "%", self.value(scope, INT, d), Lit(self.pick(["2", "3", "7", "10"]), INT))
        if r < 0.6:
            return Case(kind, [(self.predicate(scope, d), self.value(scope, kind, d))],
                        self.value(scope, kind, d) if self.chance(0.7) else None)
        if r < 0.68:
            return Func(kind, "coalesce", [self.value(scope, kind, d), self.value(scope, kind, d)])
        if r < 0.73:
            return Func(kind, "abs", [self.value(scope, kind, d)])
        if r < 0.78:
            return Neg(kind, self.value(scope, kind, d))
        if r < 0.83 and kind == INT:
            field = self.pick(["year", "month", "day"])
            day = self.value(scope, DATE, d)
            if isinstance(day, Lit) and day.text.startswith("CAST(NULL"):
                # DuckDB types extract() of a NULL literal as DOUBLE (no & or |).
                day = self.literal(DATE)
            return Func(INT, "extract", [Lit(field, STR), day])
        if r < 0.88 and kind == INT:
            if self.chance(0.3):
                return Func(INT, "strpos", [self.value(scope, STR, d), Lit(self.pick(["'a'", "'e'", "' '", "'ly'"]), STR)])
            return Func(INT, "length", [self.value(scope, STR, d)])
        if r < 0.88 and kind == DBL and self.chance(0.5):
            # A double in PostgreSQL, an integer in DuckDB: compared as numbers.
            return Func(DBL, "date_part", [Lit(self.pick(["'year'", "'month'", "'day'", "'dow'"]), STR), self.value(scope, DATE, d)])
        if r < 0.92 and kind == DEC:
            return Cast(DEC, self.value(scope, INT, d), "DECIMAL(15,2)")
        if r < 0.95 and kind == DBL:
            return Cast(DBL, self.value(scope, self.pick([INT, DEC]), d), "DOUBLE")
        if r < 0.97 and kind == DEC:
            return Func(DEC, "round", [self.value(scope, DEC, d), Lit(self.pick(["0", "1"]), INT)])
        if r < 0.985:
            return self.math(scope, kind, d) if self.chance(0.7) else self.greatest_least(scope, kind, d)
        if kind == INT:
            return Bin(INT, "-", self.value(scope, DATE, d), self.value(scope, DATE, d))
        return Func(kind, "nullif", [self.value(scope, kind, d), self.literal(kind)])

    def math(self, scope, kind, d):
        """A mathematical function or bitwise operator both engines define alike: no
        power or exp (overflow is an error in PostgreSQL, infinity in DuckDB), square
        roots and logarithms only of positive arguments."""
        x = self.value(scope, kind, d)
        if kind == INT:
            small = Lit(self.pick(["1", "3", "6", "12", "255"]), INT)
            if self.chance(0.3):
                return Func(INT, "gcd", [x, small])
            return Bin(INT, self.pick(["&", "|"]), x, small)
        if kind == DEC:
            return Func(DEC, self.pick(["floor", "ceil", "trunc"]), [x])
        name = self.pick(["floor", "ceil", "sqrt", "ln", "sign"])
        if name in ("sqrt", "ln"):
            one = Lit("CAST(1 AS DOUBLE)", DBL)
            x = Bin(DBL, "+", Func(DBL, "abs", [x]), one)
        return Func(DBL, name, [x])

    def string(self, scope, d):
        if self.chance(0.25):
            return self.string_func(scope, d)
        r = self.rng.random()
        if r < 0.25:
            return Func(STR, self.pick(["upper", "lower"]), [self.value(scope, STR, d)])
        if r < 0.45:
            start, n = self.rng.randint(1, 5), self.rng.randint(1, 8)
            return Func(STR, "substring", [self.value(scope, STR, d), Lit(str(start), INT), Lit(str(n), INT)])
        if r < 0.65:
            return Bin(STR, "||", self.value(scope, STR, d), self.value(scope, STR, d))
        if r < 0.75:
            # Only INT and DATE: the text of a DECIMAL shows its scale, which PostgreSQL
            # and DuckDB derive differently for computed values.
            return Cast(STR, self.value(scope, self.pick([INT, DATE]), d), "VARCHAR")
        if r < 0.85:
            return Case(STR, [(self.predicate(scope, d), self.value(scope, STR, d))], self.value(scope, STR, d))
        if r < 0.92:
            return Func(STR, "trim", [self.value(scope, STR, d)])
        if r < 0.94:
            chars = Lit(self.pick(["'a'", "'AE'", "' '", "'#0'"]), STR)
            return Func(STR, self.pick(["ltrim", "rtrim"]), [self.value(scope, STR, d), chars])
        if r < 0.95:
            return Func(STR, "md5", [self.value(scope, STR, d)])
        return Func(STR, "coalesce", [self.value(scope, STR, d), self.literal(STR)])

    def string_func(self, scope, d):
        """The string functions analysts reach for, with arguments both engines read
        alike (simple regular expressions, non-negative pad lengths)."""
        x = self.value(scope, STR, d)
        n = lambda lo, hi: Lit(str(self.rng.randint(lo, hi)), INT)  # noqa: E731
        r = self.rng.random()
        if r < 0.12:
            return Func(STR, self.pick(["left", "right"]), [x, n(-2, 6)])
        if r < 0.24:
            return Func(STR, self.pick(["lpad", "rpad"]), [x, n(0, 12), Lit(self.pick(["'*'", "'ab'", "' '"]), STR)])
        if r < 0.34:
            return Func(STR, "replace", [x, Lit(self.pick(["'a'", "'e'", "' '", "'the'"]), STR), Lit(self.pick(["''", "'#'", "'XY'"]), STR)])
        if r < 0.42:
            return Func(STR, "reverse", [x])
        if r < 0.52:
            return Func(STR, "split_part", [x, Lit(self.pick(["' '", "'e'", "','"]), STR), n(1, 3)])
        if r < 0.62:
            return Func(STR, "concat", [x, self.value(scope, self.pick([STR, INT, DATE]), d)])
        if r < 0.7:
            return Func(STR, "concat_ws", [Lit(self.pick(["','", "' - '"]), STR), x, self.value(scope, STR, d)])
        if r < 0.85:
            args = [x, Lit(self.pick(REGEX_PATTERNS), STR), Lit(self.pick(["''", "'#'", "'X'"]), STR)]
            if self.chance(0.4):
                args.append(Lit("'g'", STR))
            return Func(STR, "regexp_replace", args)
        return self.greatest_least(scope, STR, d)

    def greatest_least(self, scope, kind, d):
        """greatest / least of two or three values (NULLs ignored in both engines)."""
        args = [self.value(scope, kind, d) for _ in range(self.rng.randint(2, 3))]
        return Func(kind, self.pick(["greatest", "least"]), args)

    def date(self, scope, d):
        r = self.rng.random()
        if r < 0.05:
            return self.greatest_least(scope, DATE, d)
        if r < 0.1:
            trunc = Func(DATE, "date_trunc", [Lit(self.pick(["'month'", "'year'", "'quarter'"]), STR), self.value(scope, DATE, d)])
            return Cast(DATE, trunc, "DATE")
        if r < 0.4:
            return Bin(DATE, self.pick(["+", "-"]), self.value(scope, DATE, d), Lit(str(self.rng.randint(0, 400)), INT))
        if r < 0.55:
            # Date ± interval is a timestamp in both engines: months clamp to the
            # month's end; cast back to a date.
            unit = self.pick(["day", "month", "year"])
            iv = Lit(f"INTERVAL '{self.rng.randint(0, 40)} {unit}'", STR)
            return Cast(DATE, Bin(DATE, self.pick(["+", "-"]), self.value(scope, DATE, d), iv), "DATE")
        if r < 0.775:
            return Case(DATE, [(self.predicate(scope, d), self.value(scope, DATE, d))], self.value(scope, DATE, d))
        return Func(DATE, "coalesce", [self.value(scope, DATE, d), self.literal(DATE)])

    def comparable_kind(self, scope):
        kinds = [c.kind for _, c in scope.cols] or [INT]
        return self.pick(kinds)

    def predicate(self, scope, depth=2, outer=None, allow_sub=True):
        """A BOOLEAN expression; with `outer`, subqueries may correlate with it."""
        r = self.rng.random()
        d = depth - 1
        if depth > 0 and r < 0.12:
            return Bin(BOOL, self.pick(["AND", "OR"]), self.predicate(scope, d, outer, allow_sub),
                       self.predicate(scope, d, outer, allow_sub))
        if depth > 0 and r < 0.145:
            return Not(BOOL, self.predicate(scope, d, outer, allow_sub))
        if depth > 0 and r < 0.16:
            test = self.pick(["TRUE", "NOT TRUE", "FALSE", "NOT FALSE"])
            return IsTruth(BOOL, self.predicate(scope, d, outer, allow_sub), test)
        if allow_sub and depth > 0 and r < 0.26:
            return self.subquery_predicate(scope, d)
        kind = self.comparable_kind(scope)
        a = self.value(scope, kind, d)
        r = self.rng.random()
        if r < 0.45:
            ops = ["<", "<=", ">", ">="] if kind == DBL else COMPARE
            other = self.literal(kind) if self.chance(0.6) else self.value(scope, kind, d)
            return Bin(BOOL, self.pick(ops), a, other)
        if r < 0.58:
            return IsNull(BOOL, a, self.chance(0.5))
        if r < 0.7 and kind != BOOL:
            lo, hi = sorted([self.literal(kind), self.literal(kind)], key=lambda x: x.text)
            return Between(BOOL, a, lo, hi, self.chance(0.3))
        if r < 0.82 and kind not in (DBL, BOOL):
            items = [self.literal(kind) for _ in range(self.rng.randint(1, 4))]
            if self.chance(0.2):
                items.append(self.null_of(kind))
            return InList(BOOL, a, items, self.chance(0.3))
        if r < 0.92 and kind in TEXT:
            return Like(BOOL, a, self.pick(LIKE_PATTERNS), self.chance(0.3))
        if kind == BOOL:
            return a
        return Bin(BOOL, self.pick(["<", ">="] if kind == DBL else COMPARE), a, self.literal(kind))

    # ---- subqueries --------------------------------------------------------------------

    def subquery_predicate(self, scope, depth):
        r = self.rng.random()
        if r < 0.35:
            q = self.simple_select(scope, want=None, depth=depth)
            return Exists(BOOL, q, self.chance(0.4))
        if r < 0.75:
            keyed = [(qq, c) for qq, c in scope.cols if c.key] or scope.cols
            qq, c = self.pick(keyed)
            arg = Col(c.kind, qq, c.name)
            q = self.simple_select(scope, want=c, depth=depth)
            if q is None:
                return IsNull(BOOL, arg, False)
            return InQuery(BOOL, arg, q, self.chance(0.4))
        kind = self.pick([INT, DEC])
        q = self.scalar_select(scope, kind, depth)
        if q is None:
            return self.predicate(scope, 0, allow_sub=False)
        return Bin(BOOL, self.pick(COMPARE), self.value(scope, kind, 1), ScalarQuery(kind, q))

    def simple_select(self, outer_scope, want, depth):
        """SELECT over one or two tables, maybe correlated with `outer_scope`; with `want`
        its one output column has `want`'s kind (its key, where it has one)."""
        table = self.pick(list(self.tables))
        a = self.alias("s")
        scope = Scope((a, c) for c in self.tables[table])
        if want is not None:
            same_key = [c for c in self.tables[table] if want.key and c.key == want.key]
            pool = same_key or [c for c in self.tables[table] if c.kind == want.kind]
            if not pool:
                return None
            c = self.pick(pool)
            item = Col(c.kind, a, c.name)
        else:
            item = Lit("1", INT)
        where = []
        if self.chance(0.6):
            corr = self.correlation(scope, outer_scope)
            if corr is not None:
                where.append(corr)
        if self.chance(0.6):
            where.append(self.predicate(scope, max(depth - 1, 0), allow_sub=depth > 1))
        q = Select([(item, "v")], Table(table, a), where=where)
        if want is not None and self.chance(0.2):
            q.group_by = [item]
        return q

    def correlation(self, inner, outer):
        """`inner.key = outer.key` (or another comparison, maybe with an expression of the
        outer column) linking a subquery to its row."""
        pairs = [
            (iq, ic, oq, oc) for iq, ic in inner.cols for oq, oc in outer.cols
            if ic.key and ic.key == oc.key
        ]
        if not pairs:
            pairs = [(iq, ic, oq, oc) for iq, ic in inner.cols for oq, oc in outer.cols
                     if ic.kind == oc.kind and ic.kind in (INT, DATE, DEC)]
        if not pairs:
            return None
        iq, ic, oq, oc = self.pick(pairs)
        op = "=" if self.chance(0.75) else self.pick(["<", ">=", "<>"])
        outer_val = Col(oc.kind, oq, oc.name)
        if oc.kind == INT and self.chance(0.2):
            # Correlation through an expression of the outer column, not the column itself.
            outer_val = Bin(INT, "+", outer_val, Lit(str(self.rng.randint(-3, 3)), INT))
        return Bin(BOOL, op, Col(ic.kind, iq, ic.name), outer_val)

    def scalar_select(self, outer_scope, kind, depth):
        table = self.pick(list(self.tables))
        a = self.alias("s")
        scope = Scope((a, c) for c in self.tables[table])
        func = self.pick(["count", "sum", "min", "max", "avg"] if kind == DEC else ["count", "min", "max"])
        arg_col = self.column(scope, [kind if func != "count" else self.pick([INT, DEC, STR])])
        if arg_col is None:
            return None
        agg_kind = INT if func == "count" else (DEC if func == "avg" else kind)
        if agg_kind != kind:
            return None
        item = Agg(agg_kind, func, arg_col, self.chance(0.15))
        where = []
        corr = self.correlation(scope, outer_scope) if self.chance(0.7) else None
        if corr is not None:
            where.append(corr)
        if self.chance(0.5):
            where.append(self.predicate(scope, max(depth - 1, 0), allow_sub=False))
        return Select([(item, "v")], Table(table, a), where=where)

    # ---- FROM --------------------------------------------------------------------------

    def from_item(self, depth):
        """A table, or a derived table (a grouped or filtered SELECT) with its columns."""
        if depth > 0 and self.chance(0.15):
            q = self.derived_select(depth - 1)
            a = self.alias("d")
            return Derived(q, a), [(a, c) for c in q.out_cols]
        table = self.pick(list(self.tables))
        a = self.alias("t")
        return Table(table, a), [(a, c) for c in self.tables[table]]

    def derived_select(self, depth):
        """A SELECT whose output keeps key columns (so it can be joined)."""
        from .schema import Column

        table = self.pick(list(self.tables))
        a = self.alias("i")
        scope = Scope((a, c) for c in self.tables[table])
        keys = [c for c in self.tables[table] if c.key]
        items, out_cols = [], []
        grouped = keys and self.chance(0.5)
        if grouped:
            k = self.pick(keys)
            items.append((Col(k.kind, a, k.name), "c0"))
            out_cols.append(Column("c0", k.kind, k.key, True))
            for i in range(self.rng.randint(1, 3)):
                agg = self.aggregate(scope)
                items.append((agg, f"c{i + 1}"))
                out_cols.append(Column(f"c{i + 1}", agg.kind))
            q = Select(items, Table(table, a), group_by=[items[0][0]])
            if self.chance(0.3):
                q.having = [Bin(BOOL, self.pick([">", "<="]), Agg(INT, "count", None), Lit(self.pick(["1", "2", "5"]), INT))]
        else:
            cols = self.rng.sample(self.tables[table], min(len(self.tables[table]), self.rng.randint(2, 4)))
            for i, c in enumerate(cols):
                items.append((Col(c.kind, a, c.name), f"c{i}"))
                out_cols.append(Column(f"c{i}", c.kind, c.key, c.unique))
            q = Select(items, Table(table, a))
        if self.chance(0.6):
            q.where = [self.predicate(scope, 1, allow_sub=depth > 0)]
        q.out_cols = out_cols
        return q

    def join_condition(self, left_cols, right_cols, first):
        """A key equality joining a new item: on a unique key of the new item (many rows
        to one), or on a unique key of the first item when it is the only one so far
        (one to many) — so no join yields more rows than its larger input."""
        pairs = [
            (lq, lc, rq, rc) for lq, lc in left_cols for rq, rc in right_cols
            if lc.key and lc.key == rc.key and (rc.unique or (first and lc.unique))
        ]
        if not pairs:
            return None
        lq, lc, rq, rc = self.pick(pairs)
        return Bin(BOOL, "=", Col(lc.kind, lq, lc.name), Col(rc.kind, rq, rc.name))

    # ---- aggregates and whole queries --------------------------------------------------

    def aggregate(self, scope):
        agg = self.plain_or_extended_aggregate(scope)
        if self.chance(0.12):
            agg.filter = self.predicate(scope, 1, allow_sub=False)
        return agg

    def plain_or_extended_aggregate(self, scope):
        if self.chance(0.2):
            return self.extended_aggregate(scope)
        func = self.pick(["count", "count", "sum", "avg", "min", "max", "count_star"])
        if func == "count_star":
            return Agg(INT, "count", None)
        if func in ("sum", "avg"):
            kind = self.pick([INT, DEC, DEC, DBL])
            arg = self.value(scope, kind, 1)
            out = DEC if func == "avg" and kind != DBL else (DEC if kind == INT and func == "sum" else kind)
            if func == "sum" and kind == INT:
                out = INT
            return Agg(out, func, arg, self.chance(0.25))
        if func == "count":
            kind = self.pick([INT, DEC, STR, DATE, CHAR, DBL])
            return Agg(INT, "count", self.value(scope, kind, 1), self.chance(0.4))
        kind = self.pick([INT, DEC, STR, DATE, CHAR])
        arg = self.value(scope, kind, 1)
        return Agg(arg.kind, func, arg, self.chance(0.2))

    def extended_aggregate(self, scope):
        """string_agg, bool_and / bool_or, the statistical aggregates and the
        ordered-set aggregates percentile_cont / percentile_disc."""
        r = self.rng.random()
        if r < 0.25:
            arg = self.ordered_arg(scope, [STR])
            sep = Lit(self.pick(["','", "' | '", "''"]), STR)
            # Ordered by the value itself: ties are equal strings, so one answer.
            return Agg(STR, "string_agg", arg, self.chance(0.2), extra=[sep], order=arg)
        if r < 0.4:
            return Agg(BOOL, self.pick(["bool_and", "bool_or"]), self.predicate(scope, 1, allow_sub=False))
        if r < 0.65:
            arg = self.value(scope, self.pick([INT, DEC, DBL]), 1)
            return Agg(DBL, self.pick(STAT_AGGS), arg)
        fraction = Lit(self.pick(["0", "0.25", "0.5", "0.9", "1"]), DBL)
        direction = self.pick(["ASC", "DESC"])
        if r < 0.82:
            # Not of DECIMALs: DuckDB cuts the interpolated value to the
            # argument's scale (PostgreSQL interpolates in double precision).
            arg = self.ordered_arg(scope, [INT, DBL])
            return Agg(DBL, "percentile_cont", fraction, within=(arg, direction))
        arg = self.ordered_arg(scope, [INT, DEC, DATE, STR])
        return Agg(arg.kind, "percentile_disc", fraction, within=(arg, direction))

    def ordered_arg(self, scope, kinds):
        """What an aggregate orders by: never a bare literal, which DuckDB refuses in
        an aggregate's ORDER BY (PostgreSQL orders by the constant)."""
        kind = self.pick(kinds)
        arg = self.value(scope, kind, 1)
        if not reads_a_column(arg):
            # DuckDB folds a constant expression (`- 10.50`) to a literal first.
            arg = self.column(scope, [kind]) or Func(kind, "coalesce", [arg, self.literal(kind)])
        return arg

    # ---- window functions ----------------------------------------------------------------

    def window(self, value, unique):
        """A window function call. `value(kind)` makes an argument or key valid in the
        query (a column, or in a grouped query a group key or aggregate); `unique` lists
        expressions that together tell every row apart (None when nothing does), which a
        window ORDER BY ends in when the function's answer depends on the order of rows."""
        partition = [value(self.pick([INT, CHAR, STR, DATE, BOOL])) for _ in range(self.rng.choices([0, 1, 2], [35, 50, 15])[0])]
        order = [(value(self.pick([INT, DEC, DATE, STR, CHAR])), self.pick(["ASC", "DESC"]),
                  self.pick(["NULLS FIRST", "NULLS LAST"])) for _ in range(self.rng.choices([0, 1, 2], [15, 60, 25])[0])]
        total = order + [(e, "ASC", "NULLS LAST") for e in (unique or [])]
        r = self.rng.random()
        if unique is not None and r < 0.35:
            func = self.pick(ORDER_WINDOW_FUNCS)
            if func == "row_number":
                return Window(INT, func, [], partition, total)
            if func == "ntile":
                return Window(INT, func, [Lit(str(self.rng.randint(1, 5)), INT)], partition, total)
            kind = self.pick([INT, DEC, DATE, STR])
            x = value(kind)
            if func in ("lag", "lead"):
                args = [x]
                if self.chance(0.5):
                    args.append(Lit(str(self.rng.randint(1, 3)), INT))
                    if self.chance(0.5):
                        args.append(self.literal(kind))
                return Window(kind, func, args, partition, total)
            args = [x] + ([Lit(str(self.rng.randint(1, 3)), INT)] if func == "nth_value" else [])
            return Window(kind, func, args, partition, total, self.frame(total, rows_ok=True))
        if r < 0.55:
            func = self.pick(PEER_WINDOW_FUNCS)
            return Window(DBL if func in ("percent_rank", "cume_dist") else INT, func, [], partition, order)
        func = self.pick(WINDOW_AGGS)
        if func == "count_star":
            func, kind, args = "count", INT, [Lit("*", INT)]
        elif func == "count":
            kind, args = INT, [value(self.pick([INT, DEC, STR, DATE]))]
        elif func in ("sum", "avg"):
            arg = value(self.pick([INT, DEC, DBL]))
            kind, args = (arg.kind if func == "sum" else (DBL if arg.kind == DBL else DEC)), [arg]
        else:
            arg = value(self.pick([INT, DEC, DATE, STR]))
            kind, args = arg.kind, [arg]
        if unique is not None and self.chance(0.4):
            return Window(kind, func, args, partition, total, self.frame(total, rows_ok=True))
        return Window(kind, func, args, partition, order, self.frame(order, rows_ok=False))

    def frame(self, order, rows_ok):
        """A frame clause for a window ordered by `order`, or None for the default: ROWS
        only where `rows_ok` (the order is total), GROUPS and RANGE (offsets only over a
        single numeric or date key) anywhere — they treat peers alike."""
        bound = lambda: self.pick(  # noqa: E731
            ["UNBOUNDED PRECEDING", "CURRENT ROW", "UNBOUNDED FOLLOWING"]
            + [f"{self.rng.randint(0, 3)} {self.pick(['PRECEDING', 'FOLLOWING'])}"] * 3)
        modes = ["GROUPS"] + (["ROWS", "ROWS"] if rows_ok else [])
        if not order or self.chance(0.35):
            return None
        mode = self.pick(modes + ["RANGE"])
        if mode == "RANGE":
            key = order[0][0]
            if len(order) == 1 and key.kind in (INT, DEC, DATE) and self.chance(0.7):
                offset = {INT: lambda: str(self.rng.randint(0, 50)),
                          DEC: lambda: self.pick(["0.5", "10.25", "1000"]),
                          DATE: lambda: f"INTERVAL '{self.rng.randint(0, 60)} day'"}[key.kind]
                return f"RANGE BETWEEN {offset()} PRECEDING AND {offset()} FOLLOWING"
            return self.pick(["RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING",
                              "RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING"])
        start, end = bound(), bound()
        rank = lambda b: (0 if b.startswith("UNBOUNDED P") else 4 if b.startswith("UNBOUNDED F")  # noqa: E731
                          else 2 if b == "CURRENT ROW" else 1 if b.endswith("PRECEDING") else 3)
        if rank(start) > rank(end):
            start, end = end, start
        if start.startswith("UNBOUNDED F") or end.startswith("UNBOUNDED P"):
            start, end = "UNBOUNDED PRECEDING", "CURRENT ROW"
        return f"{mode} BETWEEN {start} AND {end}"

    def unique_of(self, item, cols):
        """Expressions that tell apart the rows of a FROM item, or None."""
        if isinstance(item, Table) and item.name in UNIQUE_SETS:
            names = UNIQUE_SETS[item.name]
            return [Col(c.kind, q, c.name) for n in names for q, c in cols if c.name == n]
        for q, c in cols:
            if c.unique:
                return [Col(c.kind, q, c.name)]
        return None

    def query(self, depth=2):
        """One top-level query."""
        item, cols = self.from_item(depth)
        q = Select([], item)
        scope_cols = list(cols)
        unique = self.unique_of(item, cols)
        for _ in range(self.rng.choices([0, 1, 2, 3], [30, 35, 25, 10])[0]):
            right, rcols = self.from_item(depth)
            on = self.join_condition(scope_cols, rcols, not q.joins)
            if on is None:
                continue
            kind = self.rng.choices(["INNER", "LEFT", "RIGHT", "FULL"], [55, 30, 10, 5])[0]
            # Joining many rows to one (INNER or LEFT) keeps the rows told apart by
            # `unique`; any other join may repeat or add rows.
            many_to_one = kind in ("INNER", "LEFT") and any(
                q_ == on.right.qual and c.name == on.right.name and c.unique for q_, c in rcols)
            if not many_to_one:
                unique = None
            if self.chance(0.2):
                extra = self.predicate(Scope(scope_cols + rcols), 0, allow_sub=False)
                on = Bin(BOOL, "AND", on, extra)
            q.joins.append(Join(kind, right, on))
            scope_cols += rcols
        scope = Scope(scope_cols)
        for _ in range(self.rng.choices([0, 1, 2, 3], [20, 40, 30, 10])[0]):
            q.where.append(self.predicate(scope, 2))
        if self.chance(0.45):
            self.make_grouped(q, scope)
            if not q.grouping and self.chance(0.15):
                keys = list(q.group_by)
                # Grouped rows are told apart by their keys (one row without keys).
                value = lambda kind: self.grouped_value(scope, keys, kind)  # noqa: E731
                q.items.append((self.window(value, keys), f"w{len(q.items)}"))
        else:
            for i in range(self.rng.randint(1, 4)):
                kind = self.comparable_kind(scope) if self.chance(0.8) else self.pick([INT, DEC, STR, DATE, BOOL])
                q.items.append((self.value(scope, kind, 2), f"x{i}"))
            if self.chance(0.1):
                q.items.append((self.scalar_or_mark(scope), f"x{len(q.items)}"))
            if self.chance(0.25):
                value = lambda kind: self.value(scope, kind, 1)  # noqa: E731
                for _ in range(self.rng.randint(1, 2)):
                    q.items.append((self.window(value, unique), f"w{len(q.items)}"))
            q.distinct = self.chance(0.15)
        self.order_and_limit(q)
        if self.chance(0.1):
            self.wrap_in_cte(q)
        if self.chance(0.06):
            self.break_query(q, scope)
        return q

    def break_query(self, q, scope):
        """Makes `q` invalid in one of the ways PostgreSQL and DuckDB both refuse, so the
        tester sees that kura refuses it too instead of answering."""
        col = self.column(scope, [INT, DEC, STR, DATE, CHAR])
        if col is None or q.ctes:
            return
        way = self.rng.randrange(8)
        if way == 0:  # a column neither grouped nor aggregated
            if not q.group_by:
                q.items.append((Agg(INT, "count", None), "bad"))
            q.items.append((col, "bad2"))
        elif way == 1:  # an aggregate in WHERE
            q.where.append(Bin(BOOL, ">", Agg(INT, "count", None), Lit("1", INT)))
        elif way == 2:  # nested aggregates
            q.items.append((Agg(INT, "sum", Agg(INT, "count", None)), "bad"))
        elif way == 3:  # DATE compared with INTEGER
            date = self.column(scope, [DATE]) or Lit("DATE '1995-01-01'", DATE)
            q.where.append(Bin(BOOL, "=", date, Lit("19950101", INT)))
        elif way == 4:  # IN over a subquery of two columns
            sub = self.simple_select(scope, None, 0)
            sub.items.append((Lit("2", INT), "w"))
            q.where.append(InQuery(BOOL, col, sub, False))
        elif way == 5:  # an unknown column
            q.where.append(IsNull(BOOL, Col(INT, col.qual, "no_such_column"), False))
        elif way == 6:  # ORDER BY a position past the select list
            q.order_by = [(len(q.items) + 5, "ASC", "NULLS LAST")]
            q.limit = q.offset = None
        else:  # text arithmetic
            text = self.column(scope, [STR]) or Lit("'abc'", STR)
            q.items.append((Bin(INT, "+", text, Lit("1", INT)), "bad"))
        if q.order_by and way != 6:
            # Items added above join the ORDER BY, so it still names every column.
            named = {p for p, _, _ in q.order_by}
            q.order_by += [(p, "ASC", "NULLS LAST") for p in range(1, len(q.items) + 1) if p not in named]

    def scalar_or_mark(self, scope):
        if self.chance(0.5):
            return self.subquery_predicate(scope, 1)
        q = self.scalar_select(scope, INT, 1)
        return ScalarQuery(INT, q) if q is not None else Lit("0", INT)

    def grouped_value(self, scope, keys, kind):
        """A value of `kind` in a grouped query: a group key or an aggregate."""
        same = [k for k in keys if k.kind == kind]
        if same and self.chance(0.6):
            return self.pick(same)
        if kind == INT:
            return Agg(INT, "count", None if self.chance(0.5) else self.value(scope, INT, 1))
        if kind in (DEC, DBL):
            return Agg(kind, self.pick(["sum", "min", "max"]), self.value(scope, kind, 1))
        if kind == BOOL:
            return Agg(BOOL, "bool_or", self.predicate(scope, 1, allow_sub=False))
        return Agg(kind, self.pick(["min", "max"]), self.value(scope, kind, 1))

    def make_grouped(self, q, scope):
        n_keys = self.rng.choices([0, 1, 2, 3], [25, 40, 25, 10])[0]
        for i in range(n_keys):
            kind = self.pick([INT, CHAR, STR, DATE, DEC, BOOL])
            key = self.value(scope, kind, 1)
            if isinstance(key, Lit):
                # An integer constant in GROUP BY is a position in PostgreSQL; keys are
                # columns or expressions here.
                key = self.column(scope, [kind]) or self.column(scope, [INT])
                if key is None:
                    continue
            q.group_by.append(key)
            q.items.append((key, f"k{i}"))
        if q.group_by and self.chance(0.15):
            q.grouping = self.pick(["ROLLUP", "CUBE", "GROUPING SETS"])
            if self.chance(0.5):
                q.items.append((Func(INT, "grouping", list(q.group_by)), "g"))
        for i in range(self.rng.randint(1, 3)):
            q.items.append((self.aggregate(scope), f"a{i}"))
        if self.chance(0.3):
            agg = self.aggregate(scope)
            if agg.kind in NUMERIC:
                q.having.append(Bin(BOOL, self.pick([">", "<", ">=", "<>"]), agg, self.literal(agg.kind if agg.kind != DBL else DEC)))

    def order_and_limit(self, q):
        if not self.chance(0.5):
            return
        positions = list(range(1, len(q.items) + 1))
        self.rng.shuffle(positions)
        q.order_by = [(p, self.pick(["ASC", "DESC"]), self.pick(["NULLS FIRST", "NULLS LAST"])) for p in positions]
        # Doubles equal within the tolerance but not exactly (an average over
        # window frames of different sizes) order differently in each engine, and
        # a LIMIT would then keep different rows.
        exact = not any(e.kind == DBL for e, _ in q.items)
        if exact and not q.distinct and self.chance(0.12):
            # The first row of each group of the leading keys; the order names
            # every column, so which row is first is fixed.
            q.distinct_on = self.rng.randint(1, min(2, len(positions)))
        if self.chance(0.6) and exact:
            q.limit = self.pick([1, 3, 10, 100])
            if self.chance(0.3):
                q.offset = self.pick([1, 5])

    def wrap_in_cte(self, q):
        """Moves the query into a CTE read by an outer SELECT of its columns."""
        inner = Select(list(q.items), q.source, q.joins, q.where, q.group_by, q.having, distinct=q.distinct)
        name = self.alias("w")
        items = [(Col(e.kind, name, a), a) for e, a in q.items]
        q.ctes = [(name, inner)]
        q.items, q.source, q.joins, q.where, q.group_by, q.having, q.distinct = (
            items, Table(name, name), [], [], [], [], False,
        )
        # `Table` renders `name AS alias`; a CTE read as itself needs no other name.
        q.source = Table(name, name)


def reads_a_column(node):
    """Whether an expression tree reads a column (else it is a constant)."""
    from dataclasses import fields

    if isinstance(node, Col):
        return True
    for f in fields(node):
        v = getattr(node, f.name)
        items = v if isinstance(v, list) else [v]
        for item in items:
            parts = item if isinstance(item, tuple) else (item,)
            if any(hasattr(p, "sql") and reads_a_column(p) for p in parts):
                return True
    return False
