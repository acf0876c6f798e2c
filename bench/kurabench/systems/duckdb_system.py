"""DuckDB (from PyPI) as a peer: a database file loaded with read_csv from the `.tbl` files."""

import os
import threading
import time

from .. import compare, tbl
from ..queries import created_views, is_select
from .base import LoadReport, QueryFailed, Result, System, Unsupported


class DuckDB(System):
    name = "duckdb"
    memory_scope = (
        "the suite's own Python process (DuckDB runs in-process), so the peak includes the interpreter's "
        "and the suite's own memory: compare with the RSS before the query"
    )

    def __init__(self, work_dir, threads=None, memory_limit=None):
        import duckdb

        self.duckdb = duckdb
        self.path = os.path.join(work_dir, "duckdb.db")
        self.threads = threads
        self.memory_limit = memory_limit
        self.con = None

    def _connect(self):
        config = {"threads": str(self.threads)} if self.threads else {}
        if self.memory_limit:
            config["memory_limit"] = self.memory_limit
        self.con = self.duckdb.connect(self.path, config=config)

    def start(self):
        for stale in (self.path, self.path + ".wal"):
            if os.path.exists(stale):
                os.remove(stale)
        self._connect()

    def database_files(self):
        return [self.path, self.path + ".wal"]

    def stop(self):
        if self.con is not None:
            self.con.close()
            self.con = None

    def version(self):
        return f"DuckDB {self.duckdb.__version__}"

    def settings(self):
        names = ("threads", "memory_limit")
        rows = self.con.execute(
            "select name, value from duckdb_settings() where name in ('threads', 'memory_limit')"
        ).fetchall()
        found = dict(rows)
        return {n: found.get(n, "?") for n in names} | {"storage": "database file"}

    def load(self, tbl_dir, schema):
        report = LoadReport(0.0)
        start_all = time.perf_counter()
        for table, columns in schema.items():
            start = time.perf_counter()
            self.con.execute(f"CREATE TABLE {table} ({', '.join(f'{c} {t}' for c, t in columns)})")
            # Every column read as text and cast to the table's type; the trailing '|'
            # of dbgen reads as one extra, empty column, named and dropped.
            spec = {c: "VARCHAR" for c, _ in columns} | {"_trailing": "VARCHAR"}
            casts = ", ".join(f"CAST({c} AS {t})" for c, t in columns)
            self.con.execute(
                f"INSERT INTO {table} SELECT {casts} FROM read_csv(?, delim='|', header=false, "
                f"quote='', escape='', columns={spec!r})",
                [tbl.path(tbl_dir, table)],
            )
            report.tables[table] = time.perf_counter() - start
        self.con.execute("CHECKPOINT")
        report.seconds = time.perf_counter() - start_all
        return report

    def count_rows(self, table):
        return self.con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]

    def create_index(self, index):
        # DuckDB's ART indexes serve point lookups and constraints, not the range and
        # prefix scans this index set is for; it relies on its zone maps instead.
        raise Unsupported("ART indexes serve no range scans (DuckDB prunes with zone maps)")

    def execute(self, query, timeout):
        return self._execute_on(self.con, query, timeout)

    def _execute_on(self, con, query, timeout):
        timer = threading.Timer(timeout, con.interrupt) if timeout else None
        if timer:
            timer.start()
        start = time.perf_counter()
        result = None
        try:
            for stmt in query.statements:
                cursor = con.execute(stmt)
                if is_select(stmt):
                    result = ([d[0] for d in cursor.description], cursor.fetchall())
        except self.duckdb.InterruptException as e:
            self._drop_views(con, query)
            raise QueryFailed(f"time limit of {timeout:g} s reached", timed_out=True) from e
        except self.duckdb.Error as e:
            self._drop_views(con, query)
            raise QueryFailed(str(e).splitlines()[0]) from e
        finally:
            if timer:
                timer.cancel()
        seconds = time.perf_counter() - start
        if result is None:
            raise QueryFailed("the query text holds no SELECT")
        return Result(result[0], compare.normalize_rows(result[1]), seconds, "client")

    def open_session(self):
        # A cursor is a connection of its own to the same database in this process:
        # its queries run in parallel with the others' (DuckDB releases the GIL).
        return _Session(self, self.con.cursor())

    def query_pid(self):
        return os.getpid()

    def _drop_views(self, con, query):
        # A query broken off after CREATE VIEW (Q15) must not leave the view behind.
        for view in created_views(query):
            con.execute(f"DROP VIEW IF EXISTS {view}")

    def prepare_cold(self, drop_os_cache):
        # Closing the database empties DuckDB's buffer pool.
        self.stop()
        drop_os_cache()
        self._connect()

    def prepare_warm(self):
        pass


class _Session:
    """One concurrent client of the throughput test: a connection of its own."""

    def __init__(self, system, con):
        self.system = system
        self.con = con

    def execute(self, query, timeout):
        return self.system._execute_on(self.con, query, timeout)

    def close(self):
        self.con.close()
