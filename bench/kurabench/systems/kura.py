"""kura under test: loaded with `kura tpch load --from DIR`, indexed with `kura -c`, and
queried either through `kura serve` (one server process, psycopg as the client, timed
like PostgreSQL) or with one `kura -c SQL --format csv` process per run, timed as the
wall time of that process (kura's one-shot mode prints no timings of its own).

`kura-scan` is a second Kura on the same database file with `SET enable_index = off`:
the same data and indexes, loaded once, queried with full scans and hash joins only."""

import csv
import io
import os
import re
import shutil
import socket
import statistics
import subprocess
import threading
import time

from .. import compare
from ..memory import NotMeasurable
from ..queries import is_select
from .base import LoadReport, QueryFailed, Result, System, Unsupported

SERVER_START_SECONDS = 60
# After a cancel request is ignored this long past the time limit, the server is killed.
KILL_GRACE_SECONDS = 10

# A row of `kura tpch load`'s table (comfy-table borders): │ table ┆ rows ┆ MB ┆ seconds ┆ ...
_SEP = r"\s*[│┆|]\s*"
_LOAD_ROW = re.compile(rf"^{_SEP}(\w+){_SEP}(\d+){_SEP}[\d.]+{_SEP}([\d.]+){_SEP}")


class Kura(System):
    def __init__(
        self,
        binary,
        work_dir,
        buffer=None,
        cold_buffer="16MB",
        warm_io=None,
        client=None,
        name="kura",
        session_settings=None,
        database_of=None,
        max_memory=None,
    ):
        self.name = name
        self.binary = binary
        # Settings SET at the start of every server connection or `kura -c` process, so warm
        # runs and cold runs (a restarted server, a new process) all have them.
        self.session_settings = dict(session_settings or {})
        # Querying another Kura's database: the suite neither loads nor indexes it again.
        self.shares_database_of = database_of.name if database_of else None
        self.path = database_of.path if database_of else os.path.join(work_dir, "kura.db")
        self.log_path = os.path.join(work_dir, f"{name}-serve.log")
        self.buffer = buffer
        # --max-memory: what all running queries together may hold (default: kura's own).
        self.max_memory = max_memory
        self.port = None
        self.cold_buffer = cold_buffer
        self.client = client or ("serve" if has_serve(binary) else "cli")
        # A `kura -c` process starts with an empty buffer, so only the OS page cache can
        # stay warm between its runs; a server keeps its own buffer warm.
        self.warm_io = warm_io or ("direct" if self.client == "serve" else "buffered")
        self.cold = False
        self.startup_seconds = None
        self.server = None
        self.con = None
        if self.client == "serve":
            self.timing_note = "wall time of the client call (psycopg to `kura serve`), results fetched"
            self.memory_scope = "the `kura serve` process"
        else:
            self.timing_note = "wall time of one `kura -c` process per run (start-up, open, query, output)"
            self.memory_scope = "none (one `kura -c` process per run)"

    def _options(self):
        options = ["--db", self.path]
        if self.max_memory:
            options += ["--max-memory", self.max_memory]
        if self.cold:
            options += ["--buffer", self.cold_buffer]
        else:
            if self.buffer:
                options += ["--buffer", self.buffer]
            if self.warm_io == "buffered":
                options.append("--buffered-io")
        return options

    def _kura(self, args, timeout=None):
        cmd = [self.binary] + self._options() + args
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            raise QueryFailed(f"time limit of {timeout:g} s reached", timed_out=True) from e

    def _sql(self, sql, timeout=None):
        done = self._kura(["--format", "csv", "-c", sql], timeout)
        if done.returncode != 0:
            raise QueryFailed(_error_text(done))
        return done.stdout

    def _set_statements(self):
        return [f"SET {name} = {value}" for name, value in self.session_settings.items()]

    def start(self):
        if self.shares_database_of:
            return  # the owner's fresh database, not to be removed
        # The database file and its temporary directory (spill files, `<file>.tmp`).
        for stale in (self.path, self.path + ".tmp"):
            if os.path.isdir(stale):
                shutil.rmtree(stale)
            elif os.path.exists(stale):
                os.remove(stale)

    def database_files(self):
        if self.shares_database_of:
            return []
        # The database file and its temporary directory (spill files, `<file>.tmp`).
        return [self.path, self.path + ".tmp"]

    def version(self):
        done = subprocess.run([self.binary, "--version"], capture_output=True, text=True)
        return done.stdout.strip() or "kura (version unknown)"

    def settings(self):
        values = {
            "buffer (warm)": self.buffer or "default (a quarter of RAM)",
            "I/O (warm)": "buffered (OS page cache)" if self.warm_io == "buffered" else "O_DIRECT",
        }
        if self.max_memory:
            values["--max-memory"] = self.max_memory
        if self.session_settings:
            values["session settings"] = ", ".join(f"`{stmt}`" for stmt in self._set_statements())
        if self.shares_database_of:
            values["database"] = f"{self.shares_database_of}'s database file and indexes (loaded once)"
        if self.client == "serve":
            values["client"] = "psycopg over the PostgreSQL protocol to one `kura serve` process"
            values["cold runs"] = f"server restarted with O_DIRECT and --buffer {self.cold_buffer}"
        else:
            values["client"] = "one `kura -c ... --format csv` process per run"
            values["cold runs"] = f"O_DIRECT, --buffer {self.cold_buffer}, fresh process"
            if self.startup_seconds is not None:
                values["process start-up + open + count(*) on region"] = (
                    f"{self.startup_seconds * 1000:.1f} ms (median of 5)"
                )
        return values

    def load(self, tbl_dir, schema):
        start = time.perf_counter()
        done = self._kura(["tpch", "load", "--from", tbl_dir])
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            raise RuntimeError(f"kura tpch load failed: {_error_text(done)}")
        report = LoadReport(seconds)
        for line in done.stdout.splitlines():
            match = _LOAD_ROW.match(line)
            if match and match.group(1) in schema:
                report.tables[match.group(1)] = float(match.group(3))
        if self.client == "cli":
            self.startup_seconds = self._startup()
        return report

    def _startup(self):
        """What a run costs without a query: process start, database open, a trivial count."""
        times = []
        for _ in range(5):
            start = time.perf_counter()
            self._sql("SELECT count(*) FROM region")
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    def count_rows(self, table):
        lines = self._sql(f"SELECT count(*) FROM {table}").splitlines()
        if len(lines) < 2:
            raise RuntimeError(f"kura printed no count for {table}: {lines!r}")
        return int(lines[1].strip())

    def create_index(self, index):
        try:
            self._sql(index.sql())
        except QueryFailed as e:
            raise Unsupported(str(e)) from e

    def execute(self, query, timeout):
        if self.client == "serve":
            return self._execute_served(query, timeout)
        # All statements in one process (Q15 creates, uses and drops a view).
        sql = ";\n".join(self._set_statements() + list(query.statements)) + ";"
        start = time.perf_counter()
        out = self._sql(sql, timeout)
        seconds = time.perf_counter() - start
        columns, rows = parse_csv(out)
        if columns is None:
            raise QueryFailed("kura printed no result")
        return Result(columns, rows, seconds, "process")

    def query_pid(self):
        if self.client != "serve":
            raise NotMeasurable("one `kura -c` process per run (--kura-client cli) has no process to reset before it")
        # The server a cold run needs is started here rather than in execute, so its peak can be
        # reset before the query like a warm run's (start-up is outside the timed call either way).
        self._ensure_server()
        return self.server.pid

    def explain_analyze(self, query, timeout):
        """kura's EXPLAIN ANALYZE of the query's SELECT (run in its own process, warm settings)."""
        statements = list(query.statements)
        last = max(i for i, stmt in enumerate(statements) if is_select(stmt))
        statements[last] = "EXPLAIN ANALYZE " + statements[last]
        out = self._sql(";\n".join(self._set_statements() + statements) + ";", timeout)
        return "\n".join(out.splitlines()[1:])

    def _execute_served(self, query, timeout):
        self._ensure_server()
        return self._execute_on(self.con, query, timeout)

    def open_session(self):
        if self.client != "serve":
            # Each run is a process of its own already: concurrent by nature.
            return _ProcessSession(self)
        import psycopg

        self._ensure_server()
        try:
            con = self._connect(self.port)
            for stmt in self._set_statements():
                con.execute(stmt)
        except psycopg.Error as e:
            raise QueryFailed(f"{self.name}: a further session was refused: {e}") from e
        return _ServedSession(self, con)

    def _connect(self, port):
        import psycopg

        return psycopg.connect(
            host="127.0.0.1", port=port, user="bench", dbname="kura", autocommit=True, connect_timeout=5
        )

    def _execute_on(self, con, query, timeout):
        import psycopg

        timers = []
        if timeout:
            timers = [
                threading.Timer(timeout, con.cancel_safe),
                threading.Timer(timeout + KILL_GRACE_SECONDS, self._kill_server),
            ]
            for t in timers:
                t.start()
        start = time.perf_counter()
        result = None
        try:
            with con.cursor() as cur:
                for stmt in query.statements:
                    cur.execute(stmt)
                    if is_select(stmt):
                        result = ([d.name for d in cur.description], cur.fetchall())
        except psycopg.Error as e:
            elapsed = time.perf_counter() - start
            if self.server is None or self.server.poll() is not None:
                self._forget_server()
            if timeout and elapsed >= timeout:
                raise QueryFailed(f"time limit of {timeout:g} s reached", timed_out=True) from e
            raise QueryFailed(str(e).splitlines()[0] if str(e) else type(e).__name__) from e
        finally:
            for t in timers:
                t.cancel()
        seconds = time.perf_counter() - start
        if result is None:
            raise QueryFailed("the query text holds no SELECT")
        return Result(result[0], compare.normalize_rows(result[1]), seconds, "client")

    def _ensure_server(self):
        if self.server is not None and self.server.poll() is None and self.con is not None:
            return
        import psycopg

        self._stop_server()
        port = self.port = free_port()
        log = open(self.log_path, "a", encoding="utf-8")
        self.server = subprocess.Popen(
            self._server_command(port),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.time() + SERVER_START_SECONDS
        while True:
            if self.server.poll() is not None:
                self._forget_server()
                raise QueryFailed(f"{self.name} exited at start (see {self.log_path})")
            try:
                self.con = self._connect(port)
                break
            except psycopg.OperationalError as e:
                if time.time() > deadline:
                    self._stop_server()
                    raise QueryFailed(f"{self.name} did not accept connections: {e}") from e
                time.sleep(0.1)
        for stmt in self._set_statements():
            try:
                self.con.execute(stmt)
            except psycopg.Error as e:
                self._stop_server()
                raise QueryFailed(f"kura serve rejected `{stmt}`: {e}") from e

    def _server_command(self, port):
        return [self.binary] + self._options() + ["serve", "--listen", f"127.0.0.1:{port}"]

    def _kill_server(self):
        if self.server is not None and self.server.poll() is None:
            self.server.kill()

    def _forget_server(self):
        self.con = None
        self.server = None

    def _stop_server(self):
        if self.con is not None:
            try:
                self.con.close()
            except Exception:  # the server may be gone already
                pass
        if self.server is not None and self.server.poll() is None:
            self.server.terminate()
            try:
                self.server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.server.kill()
                self.server.wait()
        self._forget_server()

    def stop(self):
        self._stop_server()

    def prepare_cold(self, drop_os_cache):
        # Cold: O_DIRECT and a small buffer in a new process (a restarted server), and the
        # OS cache dropped where that is permitted.
        self._stop_server()
        self.cold = True
        drop_os_cache()

    def prepare_warm(self):
        if self.cold:
            self._stop_server()
        self.cold = False


class _ServedSession:
    """One concurrent client of the throughput test: a connection of its own to the server."""

    def __init__(self, system, con):
        self.system = system
        self.con = con

    def execute(self, query, timeout):
        return self.system._execute_on(self.con, query, timeout)

    def close(self):
        try:
            self.con.close()
        except Exception:  # the server may be gone already
            pass


class _ProcessSession:
    """One concurrent client when every run is a `kura -c` process."""

    def __init__(self, system):
        self.system = system

    def execute(self, query, timeout):
        return self.system.execute(query, timeout)

    def close(self):
        pass


def has_serve(binary):
    """Whether this kura binary has the `serve` subcommand."""
    done = subprocess.run([binary, "--help"], capture_output=True, text=True)
    return re.search(r"^\s+serve\s", done.stdout, re.M) is not None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse_csv(text):
    """kura's `--format csv`: RFC 4180 CSV, a header line first; NULL is an empty
    unquoted field (an empty string would be `""`, which the csv module also reads as
    empty — TPC-H answers hold no empty strings)."""
    records = list(csv.reader(io.StringIO(text)))
    if not records:
        return None, []
    columns = records[0]
    rows = [tuple(v.strip() if v.strip() else "NULL" for v in r) for r in records[1:]]
    return columns, rows


def _error_text(done):
    text = (done.stderr.strip() or done.stdout.strip() or f"exit status {done.returncode}").splitlines()
    message = next((line for line in text if "ERROR" in line), text[-1] if text else "")
    return message.replace("ERROR: ", "", 1).strip()
