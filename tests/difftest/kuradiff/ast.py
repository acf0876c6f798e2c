"""The generated queries as trees: each node renders itself as SQL and lists simpler
versions of itself, which is all the shrinker needs."""

from dataclasses import dataclass, field, fields, replace

from .schema import BOOL, DATE, DBL, DEC, INT, NUMERIC, STR


class Node:
    """Base of every tree node. Dataclass fields that hold nodes (or lists of nodes,
    or tuples holding nodes) are its children."""

    def sql(self):
        raise NotImplementedError

    def simpler(self):
        """Replacements for this node alone, simplest first (same kind of value)."""
        return []


def _child_slots(node):
    for f in fields(node):
        yield f.name, getattr(node, f.name)


def variants(node):
    """Every tree that differs from `node` by one simplification somewhere."""
    yield from node.simpler()
    for name, value in _child_slots(node):
        if isinstance(value, Node):
            for v in variants(value):
                yield replace(node, **{name: v})
        elif isinstance(value, list):
            for i, item in enumerate(value):
                for v in _item_variants(item):
                    yield replace(node, **{name: value[:i] + [v] + value[i + 1 :]})


def _item_variants(item):
    if isinstance(item, Node):
        yield from variants(item)
    elif isinstance(item, tuple):
        for j, part in enumerate(item):
            if isinstance(part, Node):
                for v in variants(part):
                    yield item[:j] + (v,) + item[j + 1 :]


def size(node):
    """Nodes in the tree: the shrinker keeps a variant only if it is smaller."""
    n = 1
    for _, value in _child_slots(node):
        if isinstance(value, Node):
            n += size(value)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, Node):
                    n += size(item)
                elif isinstance(item, tuple):
                    n += sum(size(p) for p in item if isinstance(p, Node))
    return n


# ---- expressions -------------------------------------------------------------------


def literal_for(kind):
    """A plain literal of `kind`, what a shrunk expression falls back to."""
    return {
        INT: Lit("1", INT),
        DEC: Lit("1.50", DEC),
        DBL: Lit("CAST(1.5 AS DOUBLE)", DBL),
        DATE: Lit("DATE '1995-06-17'", DATE),
        BOOL: Lit("TRUE", BOOL),
    }.get(kind, Lit("'a'", STR))


@dataclass
class Expr(Node):
    kind: str

    def simpler(self):
        lit = literal_for(self.kind)
        return [] if isinstance(self, Lit) else [lit]


@dataclass
class Lit(Expr):
    text: str = ""

    def __init__(self, text, kind):
        self.text = text
        self.kind = kind

    def sql(self):
        return self.text


@dataclass
class Col(Expr):
    qual: str = ""
    name: str = ""

    def sql(self):
        return f"{self.qual}.{self.name}" if self.qual else self.name

    def simpler(self):
        return []


@dataclass
class Bin(Expr):
    op: str = ""
    left: Expr = None
    right: Expr = None

    def sql(self):
        return f"({self.left.sql()} {self.op} {self.right.sql()})"

    def simpler(self):
        out = []
        if self.op in ("AND", "OR"):
            out += [self.left, self.right]
        elif self.left.kind == self.kind:
            out.append(self.left)
            if self.right.kind == self.kind and self.op not in ("/", "%"):
                out.append(self.right)
        return out + super().simpler()


@dataclass
class Not(Expr):
    arg: Expr = None

    def sql(self):
        return f"(NOT {self.arg.sql()})"

    def simpler(self):
        return [self.arg] + super().simpler()


@dataclass
class IsTruth(Expr):
    """`arg IS [NOT] TRUE|FALSE`: never NULL."""

    arg: Expr = None
    test: str = "TRUE"  # TRUE, NOT TRUE, FALSE, NOT FALSE

    def sql(self):
        return f"({self.arg.sql()} IS {self.test})"

    def simpler(self):
        return [self.arg] + super().simpler()


@dataclass
class Neg(Expr):
    arg: Expr = None

    def sql(self):
        return f"(- {self.arg.sql()})"

    def simpler(self):
        return [self.arg]


@dataclass
class Func(Expr):
    name: str = ""
    args: list = field(default_factory=list)

    def sql(self):
        if self.name == "extract":
            return f"extract({self.args[0].text} FROM {self.args[1].sql()})"
        return f"{self.name}({', '.join(a.sql() for a in self.args)})"

    def simpler(self):
        same = [a for a in self.args if isinstance(a, Expr) and a.kind == self.kind]
        return same + super().simpler()


@dataclass
class Cast(Expr):
    arg: Expr = None
    to: str = ""

    def sql(self):
        return f"CAST({self.arg.sql()} AS {self.to})"

    def simpler(self):
        return ([self.arg] if self.arg.kind == self.kind else []) + super().simpler()


@dataclass
class Case(Expr):
    whens: list = field(default_factory=list)  # [(cond, value)]
    otherwise: Expr = None

    def sql(self):
        parts = " ".join(f"WHEN {c.sql()} THEN {v.sql()}" for c, v in self.whens)
        tail = f" ELSE {self.otherwise.sql()}" if self.otherwise is not None else ""
        return f"(CASE {parts}{tail} END)"

    def simpler(self):
        out = [v for _, v in self.whens]
        if self.otherwise is not None:
            out.append(self.otherwise)
            out.append(replace(self, otherwise=None))
        if len(self.whens) > 1:
            out += [replace(self, whens=self.whens[:i] + self.whens[i + 1 :]) for i in range(len(self.whens))]
        return out + super().simpler()


@dataclass
class IsNull(Expr):
    arg: Expr = None
    negated: bool = False

    def sql(self):
        return f"({self.arg.sql()} IS {'NOT ' if self.negated else ''}NULL)"


@dataclass
class Between(Expr):
    arg: Expr = None
    low: Expr = None
    high: Expr = None
    negated: bool = False

    def sql(self):
        n = "NOT " if self.negated else ""
        return f"({self.arg.sql()} {n}BETWEEN {self.low.sql()} AND {self.high.sql()})"


@dataclass
class InList(Expr):
    arg: Expr = None
    items: list = field(default_factory=list)
    negated: bool = False

    def sql(self):
        n = "NOT " if self.negated else ""
        return f"({self.arg.sql()} {n}IN ({', '.join(i.sql() for i in self.items)}))"

    def simpler(self):
        out = []
        if len(self.items) > 1:
            out += [replace(self, items=self.items[:i] + self.items[i + 1 :]) for i in range(len(self.items))]
        return out + super().simpler()


@dataclass
class Like(Expr):
    arg: Expr = None
    pattern: str = ""
    negated: bool = False

    def sql(self):
        n = "NOT " if self.negated else ""
        return f"({self.arg.sql()} {n}LIKE '{self.pattern}')"


@dataclass
class Agg(Expr):
    func: str = ""
    arg: Expr = None  # None: count(*)
    distinct: bool = False
    extra: list = field(default_factory=list)  # arguments after `arg` (string_agg's separator)
    order: Expr = None  # ORDER BY inside the call: string_agg(x, ',' ORDER BY x)
    within: tuple = None  # ordered-set aggregates: f(arg) WITHIN GROUP (ORDER BY e dir)
    filter: Expr = None  # FILTER (WHERE ...)

    def sql(self):
        if self.within is not None:
            e, direction = self.within
            s = f"{self.func}({self.arg.sql()}) WITHIN GROUP (ORDER BY {e.sql()} {direction})"
        elif self.arg is None:
            s = f"{self.func}(*)"
        else:
            d = "DISTINCT " if self.distinct else ""
            args = ", ".join(a.sql() for a in [self.arg] + self.extra)
            order = f" ORDER BY {self.order.sql()}" if self.order is not None else ""
            s = f"{self.func}({d}{args}{order})"
        if self.filter is not None:
            s += f" FILTER (WHERE {self.filter.sql()})"
        return s

    def simpler(self):
        out = []
        if self.filter is not None:
            out.append(replace(self, filter=None))
        if self.distinct:
            out.append(replace(self, distinct=False))
        if self.kind == INT and self.func == "count" and self.arg is not None:
            out.append(Agg(INT, "count", None, False))
        return out


@dataclass
class Window(Expr):
    """`func(args) OVER (PARTITION BY ... ORDER BY ... frame)`; `order_by` holds
    (expression, "ASC"/"DESC", "NULLS FIRST"/"NULLS LAST") and the frame is its text."""

    func: str = ""
    args: list = field(default_factory=list)
    partition_by: list = field(default_factory=list)
    order_by: list = field(default_factory=list)
    frame: str = None

    def sql(self):
        parts = []
        if self.partition_by:
            parts.append("PARTITION BY " + ", ".join(e.sql() for e in self.partition_by))
        if self.order_by:
            parts.append("ORDER BY " + ", ".join(f"{e.sql()} {d} {n}" for e, d, n in self.order_by))
        if self.frame:
            parts.append(self.frame)
        args = ", ".join(a.sql() for a in self.args)
        return f"{self.func}({args}) OVER ({' '.join(parts)})"

    def simpler(self):
        out = []
        if self.partition_by:
            out.append(replace(self, partition_by=[]))
        if self.frame:
            # Without the frame the default (RANGE ... CURRENT ROW) applies: peer-based,
            # so still one answer.
            out.append(replace(self, frame=None))
        return out + super().simpler()


@dataclass
class Exists(Expr):
    query: "Select" = None
    negated: bool = False

    def sql(self):
        return f"({'NOT ' if self.negated else ''}EXISTS ({self.query.sql()}))"


@dataclass
class InQuery(Expr):
    arg: Expr = None
    query: "Select" = None
    negated: bool = False

    def sql(self):
        return f"({self.arg.sql()} {'NOT ' if self.negated else ''}IN ({self.query.sql()}))"


@dataclass
class ScalarQuery(Expr):
    query: "Select" = None

    def sql(self):
        return f"({self.query.sql()})"


# ---- queries ------------------------------------------------------------------------


@dataclass
class Table(Node):
    name: str
    alias: str

    def sql(self):
        return f"{self.name} AS {self.alias}"


@dataclass
class Derived(Node):
    query: "Select"
    alias: str

    def sql(self):
        cols = ", ".join(a for _, a in self.query.items)
        return f"({self.query.sql()}) AS {self.alias} ({cols})"


@dataclass
class Join(Node):
    kind: str  # INNER, LEFT, RIGHT, FULL
    item: Node
    on: Expr

    def sql(self):
        return f"{self.kind} JOIN {self.item.sql()} ON {self.on.sql()}"

    def simpler(self):
        return [replace(self, kind="INNER")] if self.kind != "INNER" else []


@dataclass
class Select(Node):
    items: list  # [(Expr, alias)]
    source: Node  # Table or Derived
    joins: list = field(default_factory=list)
    where: list = field(default_factory=list)  # conjuncts
    group_by: list = field(default_factory=list)
    having: list = field(default_factory=list)
    order_by: list = field(default_factory=list)  # [(position, "ASC"/"DESC", "NULLS FIRST"/...)]
    limit: int = None
    offset: int = None
    distinct: bool = False
    ctes: list = field(default_factory=list)  # [(name, Select)]
    grouping: str = None  # None, "ROLLUP", "CUBE" or "GROUPING SETS" over group_by
    distinct_on: int = 0  # DISTINCT ON the first this many ORDER BY positions


    def sql(self):
        s = ""
        if self.ctes:
            s += "WITH " + ", ".join(
                f"{n} ({', '.join(a for _, a in q.items)}) AS ({q.sql()})" for n, q in self.ctes
            ) + " "
        s += "SELECT " + ("DISTINCT " if self.distinct else "")
        if self.distinct_on:
            s += "DISTINCT ON (" + ", ".join(str(p) for p, _, _ in self.order_by[: self.distinct_on]) + ") "
        s += ", ".join(f"{e.sql()} AS {a}" for e, a in self.items)
        s += " FROM " + self.source.sql()
        for j in self.joins:
            s += " " + j.sql()
        if self.where:
            s += " WHERE " + " AND ".join(w.sql() for w in self.where)
        if self.group_by:
            keys = [g.sql() for g in self.group_by]
            if self.grouping == "GROUPING SETS":
                # Each key alone, all of them, and the grand total.
                sets = [f"({k})" for k in keys] + [f"({', '.join(keys)})", "()"]
                s += f" GROUP BY GROUPING SETS ({', '.join(sets)})"
            elif self.grouping:
                s += f" GROUP BY {self.grouping} ({', '.join(keys)})"
            else:
                s += " GROUP BY " + ", ".join(keys)
        if self.having:
            s += " HAVING " + " AND ".join(h.sql() for h in self.having)
        if self.order_by:
            s += " ORDER BY " + ", ".join(f"{p} {d} {n}" for p, d, n in self.order_by)
        if self.limit is not None:
            s += f" LIMIT {self.limit}"
        if self.offset is not None:
            s += f" OFFSET {self.offset}"
        return s

    def total_order(self):
        """Whether ORDER BY fixes the order of the rows (it names every output column)."""
        return {p for p, _, _ in self.order_by} >= set(range(1, len(self.items) + 1))

    def simpler(self):
        out = []
        drop = lambda name, i: replace(self, **{name: getattr(self, name)[:i] + getattr(self, name)[i + 1 :]})  # noqa: E731
        if self.limit is not None or self.offset is not None:
            out.append(replace(self, limit=None, offset=None))
        if self.ctes:
            out.append(replace(self, ctes=[]))
        out += [drop("where", i) for i in range(len(self.where))]
        out += [drop("having", i) for i in range(len(self.having))]
        out += [drop("joins", i) for i in range(len(self.joins))]
        if self.distinct:
            out.append(replace(self, distinct=False))
        if self.distinct_on:
            out.append(replace(self, distinct_on=0))
        if self.grouping:
            out.append(replace(self, grouping=None))
        if len(self.items) > 1:
            for i in range(len(self.items)):
                # Positions after the dropped item move down by one.
                order = [
                    (p - (p > i + 1), d, n) for p, d, n in self.order_by if p != i + 1
                ]
                out.append(replace(self, items=self.items[:i] + self.items[i + 1 :], order_by=order, distinct_on=0))
        if self.group_by and not any(isinstance(e, Agg) for e, _ in self.items):
            out.append(replace(self, group_by=[], having=[]))
        if self.order_by and self.limit is None:
            out.append(replace(self, order_by=[], distinct_on=0))
        return out


def is_numeric(kind):
    return kind in NUMERIC


__all__ = [n for n in dir() if not n.startswith("_")] + ["DBL", "DEC"]
