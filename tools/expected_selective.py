#!/usr/bin/env python3
"""Expected results of the selective queries (A)-(D) of paper 003, computed by DuckDB.

kura checks its answers to (A)-(D) against files computed by an independent engine on
the same data. This script loads TPC-H .tbl files (dbgen format: `|`-separated with a
trailing `|`) into an in-memory DuckDB database with the TPC-H column types, runs the
SQL text kura itself embeds (crates/kura/src/tpch/queries/{a,b,c,d}.sql), and writes
one answer file per query in the format of the TPC-H reference answers: a header line,
`|`-separated fields, no quoting, dates as YYYY-MM-DD, decimals at full precision,
NULL as `NULL`. The variants `va`, `vc`, `vd` (the paper's selectivity at the data's
scale factor, told by the supplier count) are written beside them.

To prove the pipeline (data, types, loading, output format) is right, `--verify DIR`
also runs kura's 22 TPC-H query texts on the same data and compares them with the
reference answers in DIR under the comparison rules of those answers (numbers as
numbers with absolute tolerance 0.01 or relative 1e-9, text after trimming blanks,
row order counts).

Usage (from the repository root; DuckDB from PyPI: `python3 -m venv VENV &&
VENV/bin/pip install duckdb`):

    kura tpch gen --sf 0.1 --out TBL_DIR                  # or any dbgen-identical generator
    VENV/bin/python tools/expected_selective.py TBL_DIR \
        --out tests/data/selective/sf0.1 \
        --verify ../shared/tpch/answers/sf0.1

Exit status is non-zero when a verified query does not match its reference answer.
"""

import argparse
import datetime
import decimal
import math
import os
import sys
import time

import duckdb

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUERY_DIR = os.path.join(REPO, "crates", "kura", "src", "tpch", "queries")

# The TPC-H schema with the types of the specification (clause 1.4), in .tbl column order.
SCHEMA = {
    "region": [("r_regionkey", "INTEGER"), ("r_name", "CHAR(25)"), ("r_comment", "VARCHAR(152)")],
    "nation": [
        ("n_nationkey", "INTEGER"),
        ("n_name", "CHAR(25)"),
        ("n_regionkey", "INTEGER"),
        ("n_comment", "VARCHAR(152)"),
    ],
    "part": [
        ("p_partkey", "INTEGER"),
        ("p_name", "VARCHAR(55)"),
        ("p_mfgr", "CHAR(25)"),
        ("p_brand", "CHAR(10)"),
        ("p_type", "VARCHAR(25)"),
        ("p_size", "INTEGER"),
        ("p_container", "CHAR(10)"),
        ("p_retailprice", "DECIMAL(15,2)"),
        ("p_comment", "VARCHAR(23)"),
    ],
    "supplier": [
        ("s_suppkey", "INTEGER"),
        ("s_name", "CHAR(25)"),
        ("s_address", "VARCHAR(40)"),
        ("s_nationkey", "INTEGER"),
        ("s_phone", "CHAR(15)"),
        ("s_acctbal", "DECIMAL(15,2)"),
        ("s_comment", "VARCHAR(101)"),
    ],
    "partsupp": [
        ("ps_partkey", "INTEGER"),
        ("ps_suppkey", "INTEGER"),
        ("ps_availqty", "INTEGER"),
        ("ps_supplycost", "DECIMAL(15,2)"),
        ("ps_comment", "VARCHAR(199)"),
    ],
    "customer": [
        ("c_custkey", "INTEGER"),
        ("c_name", "VARCHAR(25)"),
        ("c_address", "VARCHAR(40)"),
        ("c_nationkey", "INTEGER"),
        ("c_phone", "CHAR(15)"),
        ("c_acctbal", "DECIMAL(15,2)"),
        ("c_mktsegment", "CHAR(10)"),
        ("c_comment", "VARCHAR(117)"),
    ],
    "orders": [
        ("o_orderkey", "BIGINT"),
        ("o_custkey", "INTEGER"),
        ("o_orderstatus", "CHAR(1)"),
        ("o_totalprice", "DECIMAL(15,2)"),
        ("o_orderdate", "DATE"),
        ("o_orderpriority", "CHAR(15)"),
        ("o_clerk", "CHAR(15)"),
        ("o_shippriority", "INTEGER"),
        ("o_comment", "VARCHAR(79)"),
    ],
    "lineitem": [
        ("l_orderkey", "BIGINT"),
        ("l_partkey", "INTEGER"),
        ("l_suppkey", "INTEGER"),
        ("l_linenumber", "INTEGER"),
        ("l_quantity", "DECIMAL(15,2)"),
        ("l_extendedprice", "DECIMAL(15,2)"),
        ("l_discount", "DECIMAL(15,2)"),
        ("l_tax", "DECIMAL(15,2)"),
        ("l_returnflag", "CHAR(1)"),
        ("l_linestatus", "CHAR(1)"),
        ("l_shipdate", "DATE"),
        ("l_commitdate", "DATE"),
        ("l_receiptdate", "DATE"),
        ("l_shipinstruct", "CHAR(25)"),
        ("l_shipmode", "CHAR(10)"),
        ("l_comment", "VARCHAR(44)"),
    ],
}

SELECTIVE = ["a", "b", "c", "d"]
# Variants of (A), (C), (D) at the paper's selectivity; their parameter follows the
# scale factor (the same rule as kura's `tpch::run::variant_parameter`).
VARIANTS = ["va", "vc", "vd"]


def customer_prefix(customers):
    """A `Customer#` prefix picking 10^r customers (r rounded from log10, at least one)."""
    free = min(max(round(math.log10(customers)), 0), 8)
    return "Customer#" + "0" * (8 - free) + "1"


def variant_parameter(name, sf):
    if name == "va":
        return str(max(round(8000 * sf / 100), 1))
    if name == "vc":
        return customer_prefix(10000 * sf / 100)
    if name == "vd":
        return customer_prefix(1000 * sf / 100)
    raise ValueError(name)
TPCH = ["q%02d" % n for n in range(1, 23)]


def load(con, tbl_dir):
    """Creates the eight tables with explicit types and loads them from DIR/<table>.tbl."""
    for table, cols in SCHEMA.items():
        path = os.path.join(tbl_dir, table + ".tbl")
        if not os.path.exists(path):
            sys.exit(f"missing {path}: expected the eight TPC-H .tbl files in {tbl_dir}")
        con.execute(
            f"CREATE TABLE {table} ({', '.join(f'{n} {t}' for n, t in cols)})"
        )
        # dbgen ends every line with a `|`, which reads as one extra, empty column.
        columns = {n: "VARCHAR" for n, _ in cols}
        columns["_trailing"] = "VARCHAR"
        names = ", ".join(f"CAST({n} AS {t})" for n, t in cols)
        con.execute(
            f"INSERT INTO {table} SELECT {names} FROM read_csv(?, delim='|', header=false, "
            f"quote='', escape='', columns={columns!r})",
            [path],
        )


def query_text(name):
    with open(os.path.join(QUERY_DIR, name + ".sql"), encoding="utf-8") as f:
        return f.read()


def run(con, sql):
    """Runs every statement of SQL; returns (column names, rows) of the last query (SELECT)."""
    result = (None, None)
    for stmt in [s for s in sql.split(";") if strip_comments(s).strip()]:
        cur = con.execute(stmt)
        if strip_comments(stmt).strip().lower().startswith(("select", "with")):
            rows = cur.fetchall()
            result = ([d[0] for d in cur.description], rows)
    return result


def strip_comments(stmt):
    return "\n".join(line for line in stmt.splitlines() if not line.strip().startswith("--"))


def format_value(v):
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, decimal.Decimal):
        return format(v, "f")
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (datetime.date, datetime.datetime)):
        return v.isoformat()
    return str(v)


def write_answer(path, columns, rows):
    with open(path, "w", encoding="utf-8") as f:
        f.write("|".join(columns) + "\n")
        for row in rows:
            f.write("|".join(format_value(v) for v in row) + "\n")


def read_answer(path):
    with open(path, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f if line.strip() != ""]
    return lines[0].split("|"), [line.split("|") for line in lines[1:]]


def same_field(expected, actual):
    """The comparison rules of the reference answers for one field (both given as text)."""
    if expected.strip() == actual.strip():
        return True
    try:
        e, a = float(expected), float(actual)
    except ValueError:
        return False
    return abs(e - a) <= 0.01 or math.isclose(e, a, rel_tol=1e-9, abs_tol=0.0)


def compare(expected_path, columns, rows):
    """Returns a list of mismatch descriptions (empty when the result matches)."""
    exp_cols, exp_rows = read_answer(expected_path)
    got = [[format_value(v) for v in row] for row in rows]
    problems = []
    if len(exp_cols) != len(columns):
        problems.append(f"{len(exp_cols)} columns expected, {len(columns)} returned")
        return problems
    if len(exp_rows) != len(got):
        problems.append(f"{len(exp_rows)} rows expected, {len(got)} returned")
    for i, (e_row, a_row) in enumerate(zip(exp_rows, got)):
        for name, e, a in zip(exp_cols, e_row, a_row):
            if not same_field(e, a):
                problems.append(f"row {i + 1}, column {name}: expected {e!r}, got {a!r}")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("tbl_dir", help="directory holding the eight TPC-H .tbl files")
    parser.add_argument("--out", help="directory to write a.csv .. d.csv into")
    parser.add_argument("--verify", metavar="ANSWERS_DIR",
                        help="also run the 22 TPC-H queries and compare with qNN.csv in this directory")
    args = parser.parse_args()

    con = duckdb.connect()
    started = time.time()
    load(con, args.tbl_dir)
    print(f"loaded {args.tbl_dir} in {time.time() - started:.1f} s")

    sf = con.execute("SELECT count(*) FROM supplier").fetchone()[0] / 10000
    failed = False
    if args.verify:
        for q in TPCH:
            columns, rows = run(con, query_text(q))
            problems = compare(os.path.join(args.verify, q + ".csv"), columns, rows)
            status = "ok" if not problems else "MISMATCH"
            print(f"{q}: {len(rows)} rows, {status}")
            for p in problems[:10]:
                print("    " + p)
            failed |= bool(problems)

    if args.out:
        os.makedirs(args.out, exist_ok=True)
        for q in SELECTIVE:
            columns, rows = run(con, query_text(q))
            write_answer(os.path.join(args.out, q + ".csv"), columns, rows)
            print(f"{q}: {len(rows)} rows -> {os.path.join(args.out, q + '.csv')}")
        for q in VARIANTS:
            sql = query_text(q).replace(":1", variant_parameter(q, sf))
            columns, rows = run(con, sql)
            write_answer(os.path.join(args.out, q + ".csv"), columns, rows)
            print(f"{q} (SF {sf:g}, parameter {variant_parameter(q, sf)}): {len(rows)} rows "
                  f"-> {os.path.join(args.out, q + '.csv')}")

    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
