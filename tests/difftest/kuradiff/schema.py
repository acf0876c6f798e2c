"""The tables the generated queries read: TPC-H (from kura's own schema file) plus
derived tables full of NULLs, made by the same SQL in every system, and the key
labels that say which columns may be joined."""

import os
import re
from dataclasses import dataclass

REPO_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SCHEMA_FILE = os.path.join(REPO_DIR, "crates", "kura", "src", "tpch", "schema.sql")
INDEX_FILE = os.path.join(REPO_DIR, "crates", "kura", "src", "tpch", "indexes.sql")

# Value kinds of the generator. CHAR is kept apart from VARCHAR: string functions
# and concatenation see CHAR's padding differently in PostgreSQL and DuckDB.
INT, DEC, DBL, STR, CHAR, DATE, BOOL = "int", "dec", "dbl", "str", "char", "date", "bool"
NUMERIC = (INT, DEC, DBL)
TEXT = (STR, CHAR)

# Which columns hold which key: columns with the same label may be joined.
KEY_LABELS = {
    "r_regionkey": "regionkey", "n_regionkey": "regionkey",
    "n_nationkey": "nationkey", "s_nationkey": "nationkey", "c_nationkey": "nationkey",
    "s_suppkey": "suppkey", "ps_suppkey": "suppkey", "l_suppkey": "suppkey",
    "p_partkey": "partkey", "ps_partkey": "partkey", "l_partkey": "partkey",
    "c_custkey": "custkey", "o_custkey": "custkey",
    "o_orderkey": "orderkey", "l_orderkey": "orderkey",
}
# Primary keys: a join needs one on at least one side, so joins never multiply rows
# beyond the larger input.
UNIQUE = {"r_regionkey", "n_nationkey", "s_suppkey", "p_partkey", "c_custkey", "o_orderkey"}
# Keys of more than one column: with them a window's ORDER BY can fix the order of
# every row of these tables too.
UNIQUE_SETS = {"lineitem": ("l_orderkey", "l_linenumber"), "partsupp": ("ps_partkey", "ps_suppkey")}

# Tables with NULLs in many columns (TPC-H has none), derived by the same SQL in
# kura and in DuckDB. Their key columns keep their labels.
NULL_TABLES = {
    "orders_n": (
        "CREATE TABLE orders_n AS SELECT o_orderkey, "
        "CASE WHEN o_orderkey % 7 = 0 THEN NULL ELSE o_custkey END AS o_custkey, "
        "CASE WHEN o_orderkey % 11 = 0 THEN NULL ELSE o_orderstatus END AS o_orderstatus, "
        "CASE WHEN o_orderkey % 5 = 0 THEN NULL ELSE o_totalprice END AS o_totalprice, "
        "CASE WHEN o_orderkey % 13 = 0 THEN NULL ELSE o_orderdate END AS o_orderdate, "
        "CASE WHEN o_orderkey % 3 = 0 THEN NULL ELSE o_comment END AS o_comment, "
        "CASE WHEN o_orderkey % 4 = 1 THEN NULL ELSE o_shippriority + o_orderkey % 10 END AS o_shippriority "
        "FROM orders"
    ),
    "customer_n": (
        "CREATE TABLE customer_n AS SELECT c_custkey, c_name, "
        "CASE WHEN c_custkey % 4 = 0 THEN NULL ELSE c_nationkey END AS c_nationkey, "
        "CASE WHEN c_custkey % 6 = 0 THEN NULL ELSE c_acctbal END AS c_acctbal, "
        "CASE WHEN c_custkey % 9 = 0 THEN NULL ELSE c_mktsegment END AS c_mktsegment, "
        "CASE WHEN c_custkey % 5 = 2 THEN NULL ELSE CAST(c_acctbal AS DOUBLE) END AS c_ratio "
        "FROM customer"
    ),
}
NULL_TABLE_TYPES = {
    "orders_n": [
        ("o_orderkey", INT), ("o_custkey", INT), ("o_orderstatus", CHAR), ("o_totalprice", DEC),
        ("o_orderdate", DATE), ("o_comment", STR), ("o_shippriority", INT),
    ],
    "customer_n": [
        ("c_custkey", INT), ("c_name", STR), ("c_nationkey", INT), ("c_acctbal", DEC),
        ("c_mktsegment", CHAR), ("c_ratio", DBL),
    ],
}
# The keys of a derived table are unique only where the base table's are.
NULL_UNIQUE = {("orders_n", "o_orderkey"), ("customer_n", "c_custkey")}


@dataclass(frozen=True)
class Column:
    name: str
    kind: str
    key: str = None  # key label, for joins
    unique: bool = False


def kind_of(sql_type):
    t = sql_type.upper()
    if t.startswith(("INTEGER", "INT", "BIGINT")):
        return INT
    if t.startswith(("DECIMAL", "NUMERIC")):
        return DEC
    if t.startswith(("DOUBLE", "FLOAT", "REAL")):
        return DBL
    if t.startswith("CHAR"):
        return CHAR
    if t.startswith("VARCHAR"):
        return STR
    if t.startswith("DATE"):
        return DATE
    if t.startswith("BOOL"):
        return BOOL
    raise ValueError(f"no kind for type {sql_type}")


def tpch_tables():
    """{table: [(column, SQL type)]} from kura's schema.sql."""
    with open(SCHEMA_FILE, encoding="utf-8") as f:
        text = "\n".join(line.split("--", 1)[0] for line in f)
    tables = {}
    for m in re.finditer(r"CREATE\s+TABLE\s+(\w+)\s*\((.*?)\)\s*;", text, re.I | re.S):
        cols, depth, field = [], 0, ""
        for ch in m.group(2) + ",":
            if ch == "," and depth == 0:
                words = field.split()
                if words:
                    cols.append((words[0].lower(), " ".join(w for w in words[1:] if w.upper() not in ("NOT", "NULL"))))
                field = ""
                continue
            depth += ch == "("
            depth -= ch == ")"
            field += ch
        tables[m.group(1).lower()] = cols
    return tables


def catalog():
    """{table: [Column]} of every table a query may read."""
    out = {}
    for table, cols in tpch_tables().items():
        out[table] = [
            Column(c, kind_of(t), KEY_LABELS.get(c), c in UNIQUE) for c, t in cols
        ]
    for table, cols in NULL_TABLE_TYPES.items():
        out[table] = [Column(c, k, KEY_LABELS.get(c), (table, c) in NULL_UNIQUE) for c, k in cols]
    return out


def index_statements():
    with open(INDEX_FILE, encoding="utf-8") as f:
        text = "\n".join(line.split("--", 1)[0] for line in f)
    return [s.strip() for s in text.split(";") if s.strip()]
