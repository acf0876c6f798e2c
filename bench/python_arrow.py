#!/usr/bin/env python3
"""kura's Python results against DuckDB's on the same TPC-H data, in one process and one run:
`con.sql(Q).arrow()` and `.df()` (issue goal: within 1.5x of DuckDB), and `.fetchall()`.

    python3 bench/python_arrow.py --sf 1 --reps 5 --work DIR

Needs the kura wheel, duckdb, pyarrow and pandas in the running Python. Both databases are
loaded from the same generator (kura's tpchgen load, DuckDB's tpch extension is not needed:
DuckDB reads the lineitem table kura exports as Parquet). Prints medians and the ratio.
"""

import argparse
import os
import statistics
import time

import duckdb

import kura

QUERIES = {
    "lineitem": "select * from lineitem",
    "q1-like": "select l_returnflag, l_linestatus, l_quantity, l_extendedprice, l_discount, "
               "l_shipdate from lineitem where l_shipdate <= date '1998-09-02'",
    "orders": "select * from orders",
}


def timed(f, reps):
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sf", type=float, default=1.0)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--work", default="python-arrow-bench")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    kpath = os.path.join(args.work, f"kura-sf{args.sf:g}.db")
    dpath = os.path.join(args.work, f"duckdb-sf{args.sf:g}.duckdb")
    k = kura.connect(kpath)
    if k.sql("select count(*) from information_schema.tables where table_name = 'lineitem'").fetchone()[0] == 0:
        print(f"loading SF {args.sf:g} into kura ...", flush=True)
        kura.tpch.load(k, sf=args.sf, indexes=False)
    d = duckdb.connect(dpath)
    d.execute(f"set threads = {args.threads}")
    have = d.execute("select count(*) from information_schema.tables where table_name = 'lineitem'").fetchall()[0][0]
    if not have:
        print("copying the tables into DuckDB (through Parquet files kura writes) ...", flush=True)
        for t in ["lineitem", "orders"]:
            f = os.path.abspath(os.path.join(args.work, f"{t}.parquet"))
            k.execute(f"copy {t} to '{f}' (format parquet)")
            d.execute(f"create table {t} as select * from read_parquet('{f}')")
            os.remove(f)
    print(f"SF {args.sf:g}, medians of {args.reps}, DuckDB {duckdb.__version__} with {args.threads} threads")
    print(f"{'query':10} {'result':9} {'kura s':>8} {'duckdb s':>9} {'kura/duckdb':>12}")
    for name, q in QUERIES.items():
        for kind in ["arrow", "df"]:
            if kind == "arrow":
                # DuckDB's relation .arrow() is a lazy RecordBatchReader: ask for the Table.
                fk, fd = (lambda: k.sql(q).arrow()), (lambda: d.sql(q).to_arrow_table())
            else:
                fk, fd = (lambda: k.sql(q).df()), (lambda: d.sql(q).df())
            fk()  # warm both
            fd()
            tk, td = timed(fk, args.reps), timed(fd, args.reps)
            print(f"{name:10} {kind:9} {tk:8.3f} {td:9.3f} {tk / td:12.2f}", flush=True)
    k.close()
    d.close()


if __name__ == "__main__":
    main()
