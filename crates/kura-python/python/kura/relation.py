"""Relations, as DuckDB's Python relational API has them: `con.sql(query)` and
`con.table(name)` give a query that has not run, `filter`, `project`, `order`, `limit`,
`aggregate`, `distinct`, `join`, ... give new ones composed as SQL (`sql_query()` shows it),
and the query runs only when its rows are read (`fetchall`, `arrow`, `df`, `pl`, `show`,
`len`, iteration). Every read runs it again and sees the tables as they are then.
Names and columns are checked when a relation is made (a describe, not a run), as DuckDB
binds a relation when it is made.
"""

import secrets

from . import _kura
from ._arrow import arrow_module, to_pandas, to_polars
from ._compose import BARE, JOINS, Select, list_text, quote, table_name, text_of, unnamed
from ._kura import ProgrammingError

# Rows `repr` and `show` read: the first ones are drawn, the count says whether there are more.
_SHOW_LIMIT = 10000


class Relation:
    """A query not yet run (see the module's docstring). `fetchone`/`fetchmany` read a result
    the relation keeps between calls (DuckDB 1.x's relations did; 2.x dropped them): the
    first call runs the query, later ones continue it, and once it is read to its end (or
    `fetchall`, `arrow`, ... took the rest) the next call runs the query again."""

    __slots__ = ("_con", "_text", "_select", "_params", "_alias", "_held", "_pending", "_pos")

    def __init__(self, con, *, text=None, select=None, params=None, alias=None, held=None,
                 check=True):
        self._con = con
        self._text = text
        self._select = select
        self._params = list(params) if params else None
        self._alias = alias or (select.alias if select is not None else None) or unnamed()
        self._held = held
        self._pending = None
        self._pos = 0
        if check and held is None:
            self._describe()  # unknown names and wrong types raise now, as in DuckDB

    # -- what it is -------------------------------------------------------------------

    def sql_query(self):
        """The SQL this relation runs (parameters as `$n`)."""
        if self._select is not None:
            return self._select.render()
        return self._text

    def _native(self):
        return self._con._native_open()

    def _describe(self):
        if self._held is not None:
            return self._held.columns
        return self._native().describe(self.sql_query())

    @property
    def alias(self):
        return self._alias

    @property
    def columns(self):
        """The column names, found without running the query."""
        return [name for name, _ in self._describe()]

    @property
    def types(self):
        """The column types (`integer`, `decimal(15,2)`, `varchar`, ...), without running."""
        return [type_name for _, type_name in self._describe()]

    dtypes = types

    @property
    def description(self):
        return [(name, t, None, None, None, None, None) for name, t in self._describe()]

    @property
    def shape(self):
        return (len(self), len(self._describe()))

    def __len__(self):
        """The number of rows (a `count(*)` over the relation, as DuckDB runs it)."""
        if self._held is not None:
            return self._held.num_rows
        item, _ = self._from_item()
        result = self._native().execute(f"SELECT count(*) FROM {item}", self._params)
        return result.rows(0, 1)[0][0]

    # -- composing ----------------------------------------------------------------------

    def _from_item(self, shift=0):
        """This relation as an item of a FROM, with its parameters renumbered after `shift`
        others, and the names its items go by."""
        if self._select is not None and self._select.bare():
            text, aliases = self._select.from_text(), list(self._select.aliases)
        else:
            text, aliases = f"(\n{self._plain_sql()}\n) AS {quote(self._alias)}", [self._alias]
        if shift and self._params:
            text = _kura.shift_placeholders(text, shift)
        return text, aliases

    def _plain_sql(self):
        self._need_query()
        sql = self.sql_query().rstrip()
        while sql.endswith(";"):
            sql = sql[:-1].rstrip()
        return sql

    def _need_query(self):
        if self._held is not None:
            raise _kura.NotSupportedError(
                "this relation holds the rows of a statement that ran at once (not a query); "
                "composing it with other steps is not supported: register its .arrow() first")

    def _wrap(self):
        """A new SELECT reading this relation: its own when it is a bare source, else one
        over it as a subquery under its alias."""
        if self._bare_single():
            return self._select.copy()
        return Select(f"(\n{self._plain_sql()}\n)", self._alias)

    def _bare_single(self):
        return self._select is not None and self._select.bare() and self._select.alias is not None

    def _step(self, kind, apply, check=True):
        self._need_query()
        if self._select is not None and self._select.admits(kind):
            sel = self._select.copy()
        else:
            sel = Select(f"(\n{self._plain_sql()}\n)", self._alias)
        apply(sel)
        return Relation(self._con, select=sel, params=self._params, alias=self._alias,
                        check=check)

    def filter(self, filter_expr):
        """The rows for which the SQL condition `filter_expr` holds."""
        cond = text_of(filter_expr, "a filter condition")
        return self._step("filter", lambda s: s.where.append(cond))

    def project(self, *args, groups=""):
        """The SQL expressions `args` (columns, `a + 1 AS b`, ...) of each row; with
        `groups`, aggregates grouped by them."""
        if not args:
            raise TypeError("project() needs at least one expression or column name")
        items = ", ".join(list_text(a, "a projection") for a in args)
        if groups:
            return self.aggregate(items, groups)

        def apply(s):
            s.items = items
        return self._step("project", apply)

    select = project

    def aggregate(self, aggr_expr, group_expr=""):
        """The aggregates `aggr_expr` (SQL text or a list of it) grouped by `group_expr`; with
        no groups, over all rows (DuckDB groups by the expressions that are not aggregates
        there: kura needs them named in `group_expr`)."""
        items = list_text(aggr_expr, "an aggregate")
        groups = list_text(group_expr, "a group expression") if group_expr else None

        def apply(s):
            s.items, s.groups, s.aggregated = items, groups, True
        return self._step("aggregate", apply)

    def order(self, order_expr):
        """The rows ordered by the SQL `order_expr` (`a DESC, b`)."""
        order = text_of(order_expr, "an order")

        def apply(s):
            s.order = order
        return self._step("order", apply)

    def sort(self, *args):
        """The rows ordered by each of `args` in turn."""
        if not args:
            raise ProgrammingError("sort() needs at least one expression")
        return self.order(", ".join(text_of(a, "an order") for a in args))

    def limit(self, n, offset=0):
        """At most `n` rows, after skipping `offset`."""
        n, offset = int(n), int(offset)
        if n < 0 or offset < 0:
            raise ProgrammingError("limit and offset must not be negative")

        def apply(s):
            s.limit = (n, offset)
        return self._step("limit", apply)

    def distinct(self):
        """The distinct rows."""
        def apply(s):
            s.distinct = True
        return self._step("distinct", apply)

    def set_alias(self, alias):
        """This relation under the name `alias` (to qualify its columns in a filter or join)."""
        self._need_query()
        if self._bare_single():
            sel = self._select.copy()
            sel.alias, sel.aliases = alias, [alias]
        else:
            sel = Select(f"(\n{self._plain_sql()}\n)", alias)
        return Relation(self._con, select=sel, params=self._params, alias=alias)

    def _other(self, other):
        if not isinstance(other, Relation):
            raise TypeError(f"expected a kura Relation, not {type(other).__name__}")
        if other._con is not self._con:
            raise ProgrammingError("cannot combine relations of different connections")
        other._need_query()
        self._need_query()
        return other

    def join(self, other_rel, condition=None, how="inner"):
        """This relation joined with `other_rel` on `condition`: SQL text (`a.x = b.y`), or a
        column name or list of them both sides have (a USING join). `how`: inner, left,
        right, outer (full), semi, anti, or cross (no condition)."""
        other = self._other(other_rel)
        kind = str(how).strip().lower()
        if kind not in JOINS:
            raise ProgrammingError(
                f"unsupported join type {how!r}, try one of: {', '.join(JOINS)}")
        left, left_aliases = self._from_item()
        right, right_aliases = other._from_item(len(self._params or ()))
        folded = [a.lower() for a in left_aliases + right_aliases]
        if len(set(folded)) != len(folded):
            raise ProgrammingError(
                "Both relations have the same alias, please change the alias of one or both "
                "relations using 'rel = rel.set_alias(<new alias>)'")
        using = None
        if isinstance(condition, (list, tuple)):
            using = [text_of(c, "a join column") for c in condition]
        elif isinstance(condition, str) and BARE.match(condition.strip()):
            using = [condition.strip()]
        elif condition is not None:
            condition = text_of(condition, "a join condition")
        if kind == "cross":
            if condition is not None:
                raise ProgrammingError("a cross join takes no condition")
        elif condition is None:
            raise ProgrammingError(f"join type '{kind}' needs a condition")
        params = (self._params or []) + (other._params or [])
        if kind in ("semi", "anti"):
            return self._exists(other, right, right_aliases, condition, using, kind, params)
        on = ""
        if using:
            on = " USING (" + ", ".join(using) + ")"
        elif condition is not None:
            on = f" ON {condition}"
        sel = Select(f"{left} {JOINS[kind]} {right}{on}", None, left_aliases + right_aliases)
        return Relation(self._con, select=sel, params=params, alias=f"{kind}_{secrets.token_hex(8)}")

    def _exists(self, other, right, right_aliases, condition, using, kind, params):
        if using:
            if len(right_aliases) != 1:
                raise ProgrammingError("a semi or anti join on column names needs a right "
                                       "side of one relation")
            sel = self._wrap()
            left_alias = sel.alias
            condition = " AND ".join(
                f"{quote(left_alias)}.{c} = {quote(right_aliases[0])}.{c}" for c in using)
        else:
            sel = self._select.copy() if self._select is not None and self._select.admits(
                "filter") else Select(f"(\n{self._plain_sql()}\n)", self._alias)
        sel.where.append(f"{JOINS[kind]} (SELECT 1 FROM {right} WHERE {condition})")
        return Relation(self._con, select=sel, params=params, alias=self._alias)

    def cross(self, other_rel):
        """Every row of this relation with every row of `other_rel`."""
        return self.join(other_rel, how="cross")

    def _set_op(self, other_rel, keyword):
        other = self._other(other_rel)
        right = other._plain_sql()
        if self._params and other._params:
            right = _kura.shift_placeholders(right, len(self._params))
        text = f"(\n{self._plain_sql()}\n) {keyword} (\n{right}\n)"
        params = (self._params or []) + (other._params or [])
        return Relation(self._con, text=text, params=params)

    def union(self, union_rel):
        """The rows of both relations (UNION ALL, as DuckDB's)."""
        return self._set_op(union_rel, "UNION ALL")

    def except_(self, other_rel):
        """This relation's rows less those of `other_rel` (EXCEPT ALL)."""
        return self._set_op(other_rel, "EXCEPT ALL")

    def intersect(self, other_rel):
        """The rows both relations have (INTERSECT ALL)."""
        return self._set_op(other_rel, "INTERSECT ALL")

    # -- writing ------------------------------------------------------------------------

    def create(self, table_name_):
        """Creates the table `table_name_` from this relation's rows."""
        self._need_query()
        self._native().execute(
            f"CREATE TABLE {table_name(table_name_)} AS {self._plain_sql()}", self._params)

    def insert_into(self, table_name_):
        """Appends this relation's rows to the table `table_name_`."""
        self._need_query()
        self._native().execute(
            f"INSERT INTO {table_name(table_name_)} {self._plain_sql()}", self._params)

    def create_view(self, view_name, replace=True):
        """Creates (or replaces) the view `view_name` over this relation's query."""
        self._need_query()
        if self._params:
            raise _kura.NotSupportedError("a view over a query with parameters")
        head = "CREATE OR REPLACE VIEW" if replace else "CREATE VIEW"
        self._native().execute(f"{head} {table_name(view_name)} AS {self._plain_sql()}")
        return self._con.view(view_name)

    to_table = create
    to_view = create_view

    # -- reading ------------------------------------------------------------------------

    def _run(self):
        """Runs the query now and keeps all its rows (a native result)."""
        if self._held is not None:
            return self._held
        return self._native().execute(self.sql_query(), self._params)

    def _take_pending(self):
        pending, pos = self._pending, self._pos
        self._pending, self._pos = None, 0
        return pending, pos

    def fetchone(self):
        rows = self.fetchmany(1)
        return rows[0] if rows else None

    def fetchmany(self, size=1):
        if self._pending is None:
            self._pending, self._pos = self._run(), 0
        rows = self._pending.rows(self._pos, size)
        self._pos += len(rows)
        if not rows:
            self._take_pending()
        return rows

    def fetchall(self):
        """Every row (the rest, after fetchone/fetchmany) as a list of tuples."""
        pending, pos = self._take_pending()
        r = pending if pending is not None else self._run()
        return r.rows(pos, max(r.num_rows - pos, 0))

    def arrow(self, batch_size=None):
        """Every row as a pyarrow Table, converted while the query runs. (DuckDB 1.4 and
        later return a RecordBatchReader here: that is `to_arrow_reader`.)"""
        arrow_module()
        pending, pos = self._take_pending()
        if pending is not None:
            return pending.arrow(pos, pending is self._held)
        if self._held is not None:
            return self._held.arrow(0, True)
        return self._native().arrow_table(self.sql_query(), self._params, *_chunk(batch_size))

    to_arrow_table = fetch_arrow_table = arrow

    def to_arrow_reader(self, batch_size=None):
        """A pyarrow RecordBatchReader reading the rows while the query runs. Until it is read
        to its end (or let go of) the query holds the connection: another statement on the
        connection ends it (the reader's next read then raises)."""
        pa = arrow_module()
        if self._held is not None or self._pending is not None:
            table = self.arrow()
            size = _chunk(batch_size)
            return pa.RecordBatchReader.from_batches(
                table.schema, table.to_batches(*size))
        return self._native().arrow_reader(self.sql_query(), self._params, *_chunk(batch_size))

    def fetch_arrow_reader(self, batch_size=None):
        return self.to_arrow_reader(batch_size)

    def fetch_record_batch(self, rows_per_batch=None):
        return self.to_arrow_reader(rows_per_batch)

    record_batch = fetch_record_batch

    def __arrow_c_stream__(self, requested_schema=None):
        return self.to_arrow_reader().__arrow_c_stream__(requested_schema)

    def df(self):
        """Every row as a pandas DataFrame (DECIMAL as float64, DATE as datetime64, as
        DuckDB's); `.arrow().to_pandas()` keeps `Decimal` and `date` objects."""
        return to_pandas(self.arrow())

    fetchdf = to_df = df

    def pl(self):
        """Every row as a polars DataFrame (needs polars)."""
        return to_polars(self.arrow())

    def __iter__(self):
        """The rows of one run of the query."""
        r = self._run()
        pos = 0
        while pos < r.num_rows:
            rows = r.rows(pos, 1024)
            pos += len(rows)
            yield from rows

    def close(self):
        """Lets go of a result fetchone/fetchmany were reading."""
        self._take_pending()

    # -- showing ------------------------------------------------------------------------

    def show(self, max_rows=20):
        print(self._render(max_rows))

    def _render(self, max_rows=20):
        names_types = self._describe()
        if self._held is not None:
            r = self._held
        else:
            r = self._step("limit", lambda s: setattr(s, "limit", (_SHOW_LIMIT + 1, 0)),
                           check=False)._run()
        rows = r.rows(0, max_rows)
        header = [name for name, _ in names_types]
        kinds = [t for _, t in names_types]
        cells = [[("NULL" if v is None else str(v)) for v in row] for row in rows]
        widths = [max([len(h), len(k)] + [len(c[i]) for c in cells])
                  for i, (h, k) in enumerate(zip(header, kinds))]
        line = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
        out = [line,
               "| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |",
               "| " + " | ".join(k.ljust(w) for k, w in zip(kinds, widths)) + " |",
               line]
        out += ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |"
                for row in cells]
        out.append(line)
        if r.num_rows > _SHOW_LIMIT:
            out.append(f"(more than {_SHOW_LIMIT} rows, {len(rows)} shown)")
        elif r.num_rows > len(rows):
            out.append(f"({r.num_rows} rows, {len(rows)} shown)")
        return "\n".join(out)

    def __repr__(self):
        return self._render()

    __str__ = __repr__


def _chunk(batch_size):
    """The native chunk size argument: none for kura's default."""
    if batch_size is None:
        return ()
    if int(batch_size) <= 0:
        raise ProgrammingError("the batch size must be above zero")
    return (int(batch_size),)


def query(con, text, params=None, alias=None):
    """`Connection.sql`: a relation for a query, the statement's rows held for another
    statement that returns rows, None for a command. Statements before the last run now."""
    native = con._native_open()
    if isinstance(params, (str, bytes)):
        raise ProgrammingError("parameters must be a sequence (a list or tuple) of values")
    numbered = text
    if params is not None:
        # `?` does not parse as SQL: numbered `$n` does.
        numbered, wanted = _kura.number_placeholders(text)
    count, is_query = native.classify(numbered)
    if is_query and count > 1 and params is None:
        text = native.run_leading(text)
        count = 1
    if is_query and count == 1:
        if params is not None:
            params = list(params)
            text = numbered
            if wanted != len(params):
                raise ProgrammingError(f"the statement has {wanted} parameter(s), "
                                       f"{len(params)} value(s) were given")
        return Relation(con, text=text, params=params, alias=alias)
    result = native.execute(text, params)
    if not result.has_rows:
        return None
    return Relation(con, text=text, alias=alias, held=result)


def table(con, name):
    """`Connection.table`: the table or view `name` as a relation."""
    plain = name.split(".")[-1].strip('"')
    return Relation(con, select=Select(table_name(name), plain))
