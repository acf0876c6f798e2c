"""The SQL a relation's steps compose: quoting names, and one SELECT filled a clause at a
time."""

import re
import secrets

from ._kura import ProgrammingError

BARE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Join kinds, as DuckDB names them, and their SQL; semi and anti joins are EXISTS tests.
JOINS = {
    "inner": "INNER JOIN", "left": "LEFT JOIN", "right": "RIGHT JOIN",
    "outer": "FULL OUTER JOIN", "full": "FULL OUTER JOIN", "cross": "CROSS JOIN",
    "semi": "EXISTS", "anti": "NOT EXISTS",
}


def quote(name):
    return '"' + str(name).replace('"', '""') + '"'


def table_name(name):
    """A table's name as SQL: each dotted part of a plain name folded to lower case as an
    unquoted name is, anything else quoted as written."""
    if '"' in name:
        return name
    return ".".join(quote(p.lower()) if BARE.match(p) else quote(p) for p in name.split("."))


def unnamed():
    return f"unnamed_relation_{secrets.token_hex(8)}"


def text_of(value, what):
    if isinstance(value, str):
        return value
    raise ProgrammingError(f"{what} must be SQL text (a str), not {type(value).__name__}")


def list_text(value, what):
    if isinstance(value, (list, tuple)):
        return ", ".join(text_of(v, what) for v in value)
    return text_of(value, what)


class Select:
    """One SELECT being built: its FROM, and the clauses the steps so far have filled. A step
    goes into the same SELECT when SQL's order of clauses gives it the meaning it has after
    the earlier steps; otherwise the SELECT becomes a subquery of a new one."""

    __slots__ = ("base", "alias", "aliases", "where", "items", "groups", "aggregated",
                 "distinct", "order", "limit")

    def __init__(self, base, alias, aliases=None):
        self.base = base            # the FROM text without an alias
        self.alias = alias          # the single source's alias (None for a join)
        self.aliases = aliases if aliases is not None else [alias]
        self.where = []
        self.items = "*"
        self.groups = None
        self.aggregated = False
        self.distinct = False
        self.order = None
        self.limit = None           # (n, offset)

    def copy(self):
        c = Select(self.base, self.alias, list(self.aliases))
        for k in ("where", "items", "groups", "aggregated", "distinct", "order", "limit"):
            setattr(c, k, getattr(self, k))
        c.where = list(self.where)
        return c

    def bare(self):
        return (not self.where and self.items == "*" and not self.aggregated
                and not self.distinct and self.order is None and self.limit is None)

    def admits(self, step):
        plain = self.items == "*" and not self.aggregated
        if step == "filter":
            return plain and self.limit is None
        if step in ("project", "aggregate"):
            # ORDER BY reads output names first, so a projection after it would change it.
            return plain and not self.distinct and self.order is None and self.limit is None
        if step == "distinct":
            return not self.distinct and self.order is None and self.limit is None
        if step == "order":
            return not self.distinct and self.order is None and self.limit is None
        if step == "limit":
            return self.limit is None
        return False

    def from_text(self):
        if self.alias is None or self.base == quote(self.alias):
            return self.base
        return f"{self.base} AS {quote(self.alias)}"

    def render(self):
        out = "SELECT " + ("DISTINCT " if self.distinct else "") + self.items
        out += " FROM " + self.from_text()
        if self.where:
            out += " WHERE " + " AND ".join(f"({w})" for w in self.where)
        if self.groups:
            out += " GROUP BY " + self.groups
        if self.order is not None:
            out += " ORDER BY " + self.order
        if self.limit is not None:
            n, offset = self.limit
            out += f" LIMIT {n}" + (f" OFFSET {offset}" if offset else "")
        return out
