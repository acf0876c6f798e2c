"""Command line of the benchmark suite (`bench/run` prepares the environment and calls this)."""

import argparse
import datetime
import os
import re
import shlex
import signal
import sys
import tempfile
import time

from . import paths, queries

SYSTEMS = ["kura", "kura-scan", "kura-cluster", "duckdb", "postgres", "sqlite"]
# kura-scan: kura with these session settings, on kura's database when kura runs too.
KURA_SCAN_SETTINGS = {"enable_index": "off"}


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="bench/run",
        description="kura against DuckDB, PostgreSQL and SQLite on TPC-H: load, index, run warm and cold, "
        "cross-check, report with charts.",
    )
    p.add_argument("--sf", type=float, default=1.0, help="TPC-H scale factor (default 1)")
    p.add_argument(
        "--systems",
        default="kura,duckdb,postgres,sqlite",
        help="comma-separated, from: " + ", ".join(SYSTEMS) + " (kura-scan: kura's database, loaded once, "
        "queried with SET enable_index = off; kura-cluster: --cluster-shards local workers of kura shards run by "
        "datafusion-distributed, queried through its front door)",
    )
    p.add_argument("--queries", default="all", help="all | tpch | selective | variants | ids like 1,6,q13,a,vc (default all)")
    p.add_argument("--reps", type=int, default=3, help="measured runs per query and mode; the median is reported")
    p.add_argument("--modes", default="warm,cold", help="warm, cold or both (default warm,cold)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds one run may take (default 600)")
    # bench/run passes the binary it built in the environment, so the command line the
    # report records holds no path of this machine.
    p.add_argument(
        "--kura", default=os.environ.get("KURA_BENCH_KURA"), help="the kura binary (default: what bench/run builds)"
    )
    p.add_argument("--data", help="directory of the eight .tbl files (default: generated into the work directory)")
    p.add_argument("--work-dir", help="where data and databases go (default: <tmp>/kura-bench)")
    p.add_argument(
        "--out", default=os.path.join(paths.BENCH_DIR, "results"), help="report directory (default bench/results)"
    )
    p.add_argument("--no-indexes", action="store_true", help="build no secondary indexes")
    p.add_argument(
        "--remove-databases",
        action="store_true",
        help="delete each system's database once its queries have run and it has stopped, so only one "
        "system's database is on disk at a time (for large scale factors on a small disk); kura's is kept, "
        "as the steps after all systems ran (EXPLAIN ANALYZE) use it, and so are kura-cluster's shards. "
        "Each database's size on disk is reported either way",
    )
    p.add_argument(
        "--covering",
        action="store_true",
        help="also build kura's covering indexes for (A)-(D) and their variants (crates/kura/src/tpch/covering.sql, "
        "CREATE INDEX ... INCLUDE) in every system that has them (kura, PostgreSQL)",
    )
    p.add_argument(
        "--threads", type=int, default=os.cpu_count(), help="threads for DuckDB and PostgreSQL's parallel workers"
    )
    p.add_argument(
        "--memory-limit",
        help="memory limit of one query, e.g. 256MB, applied alike to kura (SET memory_limit) and DuckDB "
        "(memory_limit), both spilling to disk past it; kura's bytes spilled per query are reported "
        "(PostgreSQL keeps --pg-work-mem, SQLite its cache)",
    )
    p.add_argument(
        "--max-memory",
        help="memory all running queries together may hold, e.g. 2GB: kura's --max-memory, DuckDB's "
        "memory_limit (one process; it takes the place of --memory-limit there)",
    )
    p.add_argument(
        "--streams",
        type=int,
        default=0,
        help="after the per-query runs, TPC-H's throughput test: this many concurrent streams of the 22 "
        "queries in the specification's orders, one session each, on every system that has sessions "
        "(total and per-stream time, failures, answers checked); --queries none runs only this",
    )
    p.add_argument(
        "--cluster-shards", type=int, default=2, help="kura-cluster's shards, one local worker each (default 2)"
    )
    p.add_argument("--kura-buffer", help="kura's --buffer for warm runs (default: kura's own)")
    p.add_argument("--kura-cold-buffer", default="16MB", help="kura's --buffer for cold runs (default 16MB)")
    p.add_argument(
        "--kura-client",
        choices=["serve", "cli"],
        help="how queries reach kura: one `kura serve` process with psycopg (default when kura has serve), "
        "or one `kura -c` process per run",
    )
    p.add_argument(
        "--kura-warm-io",
        choices=["buffered", "direct"],
        help="kura's I/O for warm runs: direct (O_DIRECT, default with serve) or buffered (OS page cache, "
        "default with cli, where every run is a new process with an empty buffer)",
    )
    p.add_argument("--pg-shared-buffers", default="1GB", help="PostgreSQL shared_buffers, warm (default 1GB)")
    p.add_argument("--pg-cold-shared-buffers", default="16MB", help="PostgreSQL shared_buffers, cold (default 16MB)")
    p.add_argument("--pg-work-mem", default="256MB", help="PostgreSQL work_mem (default 256MB)")
    p.add_argument("--sqlite-cache", type=int, default=256, help="SQLite page cache in MB (default 256)")
    p.add_argument(
        "--drop-caches",
        choices=["auto", "no"],
        default="auto",
        help="drop the OS page cache before every cold run where permitted (auto, default) or never",
    )
    p.add_argument(
        "--must-pass",
        help="systems whose query errors and timeouts fail the run (default: every system run). Wrong answers, "
        "row-count differences and load failures fail the run for every system.",
    )
    args = p.parse_args(argv)
    args.system_list = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = [s for s in args.system_list if s not in SYSTEMS]
    if unknown or not args.system_list:
        p.error(f"unknown systems {unknown}; choose from {', '.join(SYSTEMS)}")
    args.mode_list = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not args.mode_list or any(m not in ("warm", "cold") for m in args.mode_list):
        p.error("--modes takes warm, cold or warm,cold")
    try:
        args.query_ids = queries.resolve(args.queries)
    except ValueError as e:
        p.error(str(e))
    if args.reps < 1:
        p.error("--reps must be at least 1")
    for option, value in (("--memory-limit", args.memory_limit), ("--max-memory", args.max_memory)):
        if value is not None and not re.fullmatch(r"\s*\d+(\.\d+)?\s*[kKmMgGtT]i?[bB]\s*", value):
            p.error(f"{option} takes a size such as 256MB or 4GB, not {value!r}")
    from .throughput import MAX_STREAMS

    if not 0 <= args.streams <= MAX_STREAMS:
        p.error(f"--streams takes 1 to {MAX_STREAMS} (the specification's orders kept here)")
    if not args.query_ids and not args.streams:
        p.error("--queries none leaves nothing to run without --streams")
    args.must_pass_list = (
        args.system_list if args.must_pass is None else [s.strip() for s in args.must_pass.split(",") if s.strip()]
    )
    if "kura-cluster" in args.system_list:
        if args.cluster_shards < 1:
            p.error("--cluster-shards: a kura cluster has 1 or more shards")
        if args.memory_limit is not None:
            p.error("--memory-limit does not apply to kura-cluster (its shards and DataFusion have no common limit)")
    if {"kura", "kura-scan", "kura-cluster"} & set(args.system_list) and not args.kura:
        p.error("kura needs --kura BINARY (bench/run builds and passes it)")
    # kura loads the database kura-scan then queries, so it must come first.
    if "kura" in args.system_list and "kura-scan" in args.system_list:
        args.system_list.remove("kura")
        args.system_list.insert(args.system_list.index("kura-scan"), "kura")
    return args


def make_systems(args, work_dir):
    made = []
    for name in args.system_list:
        if name in ("kura", "kura-scan"):
            from .systems.kura import Kura

            owner = next((s for s in made if s.name == "kura"), None) if name == "kura-scan" else None
            settings = dict(KURA_SCAN_SETTINGS) if name == "kura-scan" else {}
            if args.memory_limit:
                settings["memory_limit"] = f"'{args.memory_limit}'"
            made.append(
                Kura(
                    args.kura,
                    work_dir,
                    args.kura_buffer,
                    args.kura_cold_buffer,
                    args.kura_warm_io,
                    args.kura_client,
                    name=name,
                    session_settings=settings,
                    database_of=owner,
                    max_memory=args.max_memory,
                )
            )
        elif name == "kura-cluster":
            from .systems.kura_cluster import KuraCluster, has_cluster

            if not has_cluster(args.kura):
                raise SystemExit("kura-cluster: this kura binary has no `kura cluster` (build it with --features cluster)")
            made.append(KuraCluster(args.kura, work_dir, args.sf, args.cluster_shards, args.kura_buffer))
        elif name == "duckdb":
            from .systems.duckdb_system import DuckDB

            made.append(DuckDB(work_dir, args.threads, args.max_memory or args.memory_limit))
        elif name == "postgres":
            from .systems.postgres import PostgreSQL

            made.append(
                PostgreSQL(
                    work_dir, args.pg_shared_buffers, args.pg_work_mem, args.pg_cold_shared_buffers, args.threads
                )
            )
        elif name == "sqlite":
            from .systems.sqlite_system import SQLite

            made.append(SQLite(work_dir, args.sqlite_cache))
    return made


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # A termination signal unwinds like an exception, so every started server is stopped.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, frame: sys.exit(128 + signum))

    from . import charts, machine, report, suite

    work_dir = os.path.abspath(args.work_dir or os.path.join(tempfile.gettempdir(), "kura-bench"))
    os.makedirs(work_dir, exist_ok=True)
    os.chmod(work_dir, 0o755)  # the PostgreSQL server runs as another user when we are root
    tbl_dir = os.path.abspath(args.data) if args.data else os.path.join(work_dir, f"tbl-{paths.sf_name(args.sf)}")
    tbl_dir = suite.ensure_data(args.kura, args.sf, tbl_dir, log) if not args.data else tbl_dir
    missing = suite.missing_tables(tbl_dir)
    if missing:
        # Before any system starts: a wrong --data must not cost a load first.
        print(f"bench: no {', '.join(missing)} in {tbl_dir} (--data wants the eight .tbl files)", file=sys.stderr)
        return 2

    run = suite.Run(args.sf, args.query_ids, args.mode_list, args.reps, args.timeout)
    run.memory_limit = args.memory_limit
    run.max_memory = args.max_memory
    run.streams = args.streams
    run.remove_databases = args.remove_databases
    dropper = machine.CacheDropper(args.drop_caches == "auto" and "cold" in args.mode_list)
    systems = make_systems(args, work_dir)
    suite.execute(systems, run, tbl_dir, dropper, log, with_indexes=not args.no_indexes, covering=args.covering)

    failures_found = suite.failures(run, args.must_pass_list)
    stem = f"{datetime.date.fromtimestamp(run.started).isoformat()}-{paths.sf_name(args.sf)}"
    os.makedirs(args.out, exist_ok=True)
    charts_by_mode = {}
    for mode in run.modes:
        for label, subset, figure in (
            ("TPC-H", queries.TPCH, "figure 5"),
            ("selective (A)-(D)", queries.SELECTIVE, "figure 4"),
            ("variants at the paper's selectivity", queries.VARIANTS, "figure 4"),
        ):
            ids = [q for q in run.query_ids if q in subset]
            if not ids:
                continue
            kind = {id(queries.TPCH): "tpch", id(queries.SELECTIVE): "selective"}.get(id(subset), "variants")
            file_name = f"{stem}-{kind}-{mode}.png"
            # Normalised to kura as in the paper; to the first system of a run without kura.
            base = "kura" if "kura" in run.systems else next(iter(run.systems))
            title = f"{label}, SF {args.sf:g}, {mode}, {base} = 1 (as paper 003 {figure})"
            charts.plot(run, mode, ids, title, os.path.join(args.out, file_name), base)
            charts_by_mode.setdefault(mode, []).append((title, file_name))
    command = "bench/run " + " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    path = report.write(
        run, args.out, stem, machine.describe(work_dir), dropper.describe(), command, failures_found, charts_by_mode
    )
    log(f"report: {path}")
    if failures_found:
        log(f"FAIL: {len(failures_found)} problems")
        for f in failures_found[:20]:
            print("  " + f)
        return 1
    log("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
