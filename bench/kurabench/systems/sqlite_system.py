"""SQLite (Python's sqlite3) as a peer: a database file, dates as ISO text, queries
translated where SQLite lacks the syntax (see queries.to_sqlite)."""

import os
import sqlite3
import time

from .. import compare, tbl
from ..queries import created_views, is_select, to_sqlite
from .base import LoadReport, QueryFailed, Result, System, Unsupported

BATCH_ROWS = 50_000


class SQLite(System):
    name = "sqlite"
    memory_scope = (
        "the suite's own Python process (SQLite runs in-process), so the peak includes the interpreter's "
        "and the suite's own memory: compare with the RSS before the query"
    )

    def __init__(self, work_dir, cache_mb=256):
        self.path = os.path.join(work_dir, "sqlite.db")
        self.cache_mb = cache_mb
        self.con = None

    def _connect(self):
        self.con = sqlite3.connect(self.path, isolation_level=None)
        self.con.execute(f"PRAGMA cache_size = -{self.cache_mb * 1024}")
        # TPC-H's LIKE is case sensitive; this also lets a B+tree serve a prefix LIKE.
        self.con.execute("PRAGMA case_sensitive_like = ON")

    def start(self):
        for stale in (self.path, self.path + "-journal", self.path + "-wal"):
            if os.path.exists(stale):
                os.remove(stale)
        self._connect()

    def database_files(self):
        return [self.path, self.path + "-journal", self.path + "-wal"]

    def stop(self):
        if self.con is not None:
            self.con.close()
            self.con = None

    def version(self):
        return f"SQLite {sqlite3.sqlite_version}"

    def settings(self):
        return {
            "cache_size": f"{self.cache_mb} MB",
            "case_sensitive_like": "on",
            "threads": "1 (SQLite runs a query on one thread)",
            "dates": "ISO text",
            "DECIMAL": "NUMERIC affinity (binary floating point)",
        }

    def load(self, tbl_dir, schema):
        report = LoadReport(0.0)
        start_all = time.perf_counter()
        self.con.execute("PRAGMA journal_mode = OFF")
        self.con.execute("PRAGMA synchronous = OFF")
        for table, columns in schema.items():
            start = time.perf_counter()
            self.con.execute(f"CREATE TABLE {table} ({', '.join(f'{c} {t}' for c, t in columns)})")
            insert = f"INSERT INTO {table} VALUES ({', '.join('?' * len(columns))})"
            self.con.execute("BEGIN")
            batch = []
            for row in tbl.rows(tbl.path(tbl_dir, table)):
                batch.append(row)
                if len(batch) == BATCH_ROWS:
                    self.con.executemany(insert, batch)
                    batch.clear()
            if batch:
                self.con.executemany(insert, batch)
            self.con.execute("COMMIT")
            report.tables[table] = time.perf_counter() - start
        self.con.execute("PRAGMA synchronous = FULL")
        report.seconds = time.perf_counter() - start_all
        return report

    def count_rows(self, table):
        return self.con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]

    def create_index(self, index):
        if index.include:
            raise Unsupported("no INCLUDE columns in SQLite indexes")
        self.con.execute(index.sql())

    def analyze(self):
        self.con.execute("ANALYZE")

    def translate(self, query):
        return to_sqlite(query)

    def execute(self, query, timeout):
        deadline = time.perf_counter() + timeout if timeout else None
        if deadline:
            # Called every N virtual-machine steps; a non-zero return aborts the query.
            self.con.set_progress_handler(lambda: int(time.perf_counter() > deadline), 100_000)
        start = time.perf_counter()
        result = None
        try:
            for stmt in query.statements:
                cursor = self.con.execute(stmt)
                if is_select(stmt):
                    result = ([d[0] for d in cursor.description], cursor.fetchall())
        except sqlite3.OperationalError as e:
            if deadline and time.perf_counter() > deadline:
                self._cleanup(query)
                raise QueryFailed(f"time limit of {timeout:g} s reached", timed_out=True) from e
            self._cleanup(query)
            raise QueryFailed(str(e)) from e
        except sqlite3.Error as e:
            self._cleanup(query)
            raise QueryFailed(str(e)) from e
        finally:
            self.con.set_progress_handler(None, 0)
        seconds = time.perf_counter() - start
        if result is None:
            raise QueryFailed("the query text holds no SELECT")
        return Result(result[0], compare.normalize_rows(result[1]), seconds, "client")

    def query_pid(self):
        return os.getpid()

    def _cleanup(self, query):
        # A query broken off after CREATE VIEW (Q15) must not leave the view behind.
        for view in created_views(query):
            self.con.execute(f"DROP VIEW IF EXISTS {view}")

    def prepare_cold(self, drop_os_cache):
        # Reopening empties SQLite's page cache.
        self.stop()
        drop_os_cache()
        self._connect()
