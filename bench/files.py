#!/usr/bin/env python3
"""Files as tables, kura against DuckDB on the same files: a CSV scan (rows per second of
`read_csv` over lineitem.tbl), a CSV load (`CREATE TABLE AS SELECT * FROM read_csv`), and
TPC-H Q1 over a Parquet file of lineitem written by DuckDB and by kura.

    python3 bench/files.py --kura target/release/kura --tbl DIR [--reps 3] [--threads 2]

DuckDB runs in this process with the same thread count; so does kura when its Python package
is importable (`import kura`: the wheel of crates/kura-python), else as `kura -c SQL` on a
fresh database (process start included, ~0.02 s, and every page of its heap touched for the
first time). `--cli` forces the latter; the output says which way kura ran. Each figure is the median of --reps runs; the ratio
kura/DuckDB comes from the same run. DIR holds lineitem.tbl (`kura tpch gen --sf 1 --out DIR`).
"""

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time

import duckdb

try:
    import kura as kura_py
except ImportError:
    kura_py = None

Q1 = """select l_returnflag, l_linestatus, sum(l_quantity) as sum_qty,
 sum(l_extendedprice) as sum_base_price,
 sum(l_extendedprice * (1 - l_discount)) as sum_disc_price,
 sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge,
 avg(l_quantity) as avg_qty, avg(l_extendedprice) as avg_price, avg(l_discount) as avg_disc,
 count(*) as count_order
from {src} where l_shipdate <= date '1998-12-01' - interval '90' day
group by l_returnflag, l_linestatus order by l_returnflag, l_linestatus"""

NAMES = ["l_orderkey", "l_partkey", "l_suppkey", "l_linenumber", "l_quantity",
         "l_extendedprice", "l_discount", "l_tax", "l_returnflag", "l_linestatus",
         "l_shipdate", "l_commitdate", "l_receiptdate", "l_shipinstruct", "l_shipmode",
         "l_comment", "extra"]


def timed(f, reps):
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kura", required=True)
    ap.add_argument("--tbl", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cli", action="store_true",
                    help="run kura as a process per statement even when `import kura` works")
    args = ap.parse_args()
    in_process = kura_py is not None and not args.cli
    tbl = os.path.join(args.tbl, "lineitem.tbl")
    work = tempfile.mkdtemp(prefix="kura-files-bench-")
    rows = sum(1 for _ in open(tbl, "rb"))

    connections = {}

    def kura(sql, db="k.db", fresh=False):
        path = os.path.join(work, db)
        if fresh:
            old = connections.pop(path, None)
            if old is not None:
                old.close()
            if os.path.exists(path):
                os.remove(path)
        if in_process:
            if path not in connections:
                connections[path] = kura_py.connect(path)
            cur = connections[path].execute(sql)
            if cur.description is not None:
                cur.fetchall()
            return
        subprocess.run([args.kura, "--db", path, "-c", sql, "--format", "csv"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    duck = duckdb.connect()
    duck.execute(f"set threads = {args.threads}")
    names = ", ".join(repr(n) for n in NAMES)
    results = []

    # 1. Scan: decode every record, sum a number.
    scan_k = f"select count(*), sum(column04) from read_csv('{tbl}', delim => '|', header => false)"
    scan_d = f"select count(*), sum(column04) from read_csv('{tbl}', delim = '|', header = false)"
    tk = timed(lambda: kura(scan_k), args.reps)
    td = timed(lambda: duck.execute(scan_d).fetchall(), args.reps)
    results.append(("read_csv scan of lineitem.tbl (rows/s)", rows / tk, rows / td, tk / td))

    # 2. Load: the file into a table of the database.
    load_k = (f"create table l as select * from read_csv('{tbl}', delim => '|', "
              f"header => false, names => [{names}])")
    tk = timed(lambda: kura(load_k, "load.db", fresh=True), args.reps)

    def duck_load():
        path = os.path.join(work, "load.duckdb")
        if os.path.exists(path):
            os.remove(path)
        d = duckdb.connect(path)
        d.execute(f"set threads = {args.threads}")
        d.execute(f"create table l as select * from read_csv('{tbl}', delim = '|', "
                  f"header = false, names = [{names}])")
        d.close()
    td = timed(duck_load, args.reps)
    results.append(("CREATE TABLE AS read_csv (rows/s)", rows / tk, rows / td, tk / td))

    # 3. Q1 over Parquet written by each system (from kura's table, so types are kura's).
    kura_pq = os.path.join(work, "kura.parquet")
    duck_pq = os.path.join(work, "duck.parquet")
    kura(f"copy l to '{kura_pq}'", "load.db")
    duck.execute(f"copy (select * from '{kura_pq}') to '{duck_pq}' (format parquet)")
    for label, pq in (("DuckDB's", duck_pq), ("kura's", kura_pq)):
        src = f"read_parquet('{pq}')"
        tk = timed(lambda: kura(Q1.format(src=src)), args.reps)
        td = timed(lambda: duck.execute(Q1.format(src=src)).fetchall(), args.reps)
        results.append((f"Q1 over {label} Parquet (s)", tk, td, tk / td))

    for con in connections.values():
        con.close()
    how = "in this process (import kura)" if in_process else "as `kura -c` processes"
    print(f"lineitem: {rows} rows, {os.path.getsize(tbl) / 1e6:.0f} MB; "
          f"medians of {args.reps}; DuckDB {duckdb.__version__} with {args.threads} threads; "
          f"kura {how}")
    print(f"{'':44} {'kura':>12} {'DuckDB':>12} {'kura time/DuckDB':>17}")
    for what, k, d, ratio in results:
        print(f"{what:44} {k:12.3f} {d:12.3f} {ratio:17.2f}")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
