#!/usr/bin/env python3
"""Loads the eight TPC-H .tbl files of a directory into an in-memory DuckDB with the
TPC-H types (as kura's schema) and prints per-table and total MB/s — the peer figure
for `kura bench load`. Usage: load_duckdb.py DIR [REPS]   (needs `pip install duckdb`)."""
import os
import statistics
import sys
import time

import duckdb

SCHEMA = {
    "region": "r_regionkey INTEGER, r_name CHAR(25), r_comment VARCHAR(152)",
    "nation": "n_nationkey INTEGER, n_name CHAR(25), n_regionkey INTEGER, n_comment VARCHAR(152)",
    "supplier": "s_suppkey INTEGER, s_name CHAR(25), s_address VARCHAR(40), s_nationkey INTEGER, "
    "s_phone CHAR(15), s_acctbal DECIMAL(15,2), s_comment VARCHAR(101)",
    "customer": "c_custkey INTEGER, c_name VARCHAR(25), c_address VARCHAR(40), c_nationkey INTEGER, "
    "c_phone CHAR(15), c_acctbal DECIMAL(15,2), c_mktsegment CHAR(10), c_comment VARCHAR(117)",
    "part": "p_partkey INTEGER, p_name VARCHAR(55), p_mfgr CHAR(25), p_brand CHAR(10), p_type VARCHAR(25), "
    "p_size INTEGER, p_container CHAR(10), p_retailprice DECIMAL(15,2), p_comment VARCHAR(23)",
    "partsupp": "ps_partkey INTEGER, ps_suppkey INTEGER, ps_availqty INTEGER, ps_supplycost DECIMAL(15,2), "
    "ps_comment VARCHAR(199)",
    "orders": "o_orderkey INTEGER, o_custkey INTEGER, o_orderstatus CHAR(1), o_totalprice DECIMAL(15,2), "
    "o_orderdate DATE, o_orderpriority CHAR(15), o_clerk CHAR(15), o_shippriority INTEGER, o_comment VARCHAR(79)",
    "lineitem": "l_orderkey INTEGER, l_partkey INTEGER, l_suppkey INTEGER, l_linenumber INTEGER, "
    "l_quantity DECIMAL(15,2), l_extendedprice DECIMAL(15,2), l_discount DECIMAL(15,2), l_tax DECIMAL(15,2), "
    "l_returnflag CHAR(1), l_linestatus CHAR(1), l_shipdate DATE, l_commitdate DATE, l_receiptdate DATE, "
    "l_shipinstruct CHAR(25), l_shipmode CHAR(10), l_comment VARCHAR(44)",
}


def load_once(directory):
    con = duckdb.connect(":memory:")
    total_bytes = 0
    start = time.perf_counter()
    for table, cols in SCHEMA.items():
        path = os.path.join(directory, f"{table}.tbl")
        total_bytes += os.path.getsize(path)
        con.execute(f"CREATE TABLE {table} ({cols})")
        # dbgen rows end with '|': DuckDB sees one extra, empty column; name and drop it.
        names = [c.split()[0] for c in cols.split(", ")]
        columns = ", ".join(f"'{n}': 'VARCHAR'" for n in names + ["trailing"])
        con.execute(
            f"INSERT INTO {table} SELECT {', '.join(names)} FROM read_csv('{path}', delim='|', header=false, "
            f"columns={{{columns}}})"
        )
    return time.perf_counter() - start, total_bytes


def main():
    directory = sys.argv[1]
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    runs = [load_once(directory) for _ in range(reps)]
    secs = statistics.median(r[0] for r in runs)
    mb = runs[0][1] / 1e6
    print(f"duckdb {duckdb.__version__} read_csv: {secs:.2f} s  {mb / secs:.1f} MB/s ({mb:.1f} MB, median of {reps})")


if __name__ == "__main__":
    main()
