"""PostgreSQL 15 as a peer: a throw-away cluster initialised with initdb in the work
directory, started with pg_ctl on 127.0.0.1 and a free port (as an unprivileged user
when the suite runs as root, since postgres refuses root), and stopped at the end."""

import glob
import os
import pwd
import shutil
import socket
import subprocess
import time

from .. import compare, tbl
from ..memory import NotMeasurable
from ..queries import created_views, is_select
from .base import LoadReport, QueryFailed, Result, System

USER = "bench"


def find_bindir():
    """Directory of initdb/pg_ctl/postgres: PostgreSQL 15's Debian location, else pg_config's."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/15/bin")) + sorted(glob.glob("/usr/lib/postgresql/*/bin"))
    for d in candidates:
        if os.path.isfile(os.path.join(d, "pg_ctl")):
            return d
    pg_config = shutil.which("pg_config")
    if pg_config:
        d = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True).stdout.strip()
        if os.path.isfile(os.path.join(d, "pg_ctl")):
            return d
    raise RuntimeError("PostgreSQL server binaries not found (apt-get install -y postgresql-15)")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgreSQL(System):
    name = "postgres"
    memory_scope = (
        "the connection's backend process (pg_backend_pid()): parallel workers are not counted, and "
        "shared_buffers count as far as this backend touched them"
    )

    def __init__(self, work_dir, shared_buffers="1GB", work_mem="256MB", cold_shared_buffers="16MB", workers=None):
        import psycopg

        self.psycopg = psycopg
        self.bindir = find_bindir()
        self.dir = os.path.join(work_dir, "postgres")
        self.data = os.path.join(self.dir, "data")
        self.log = os.path.join(self.dir, "server.log")
        self.port = free_port()
        self.warm = {"shared_buffers": shared_buffers, "work_mem": work_mem}
        if workers:
            self.warm["max_parallel_workers_per_gather"] = str(workers)
        self.cold_shared_buffers = cold_shared_buffers
        self.current = dict(self.warm)
        self.con = None
        self.backend_pid = None
        self.running = False
        # postgres refuses to run as root: run the server as the 'postgres' account then.
        self.run_as = None
        if os.geteuid() == 0:
            try:
                self.run_as = pwd.getpwnam("postgres")
            except KeyError as e:
                raise RuntimeError("running as root needs a 'postgres' user to run the server as") from e

    def _run(self, args, check=True):
        cmd = [os.path.join(self.bindir, args[0])] + args[1:]
        if self.run_as:
            cmd = ["runuser", "-u", self.run_as.pw_name, "--"] + cmd
        done = subprocess.run(cmd, capture_output=True, text=True)
        if check and done.returncode != 0:
            tail = ""
            if os.path.exists(self.log):
                with open(self.log, encoding="utf-8", errors="replace") as f:
                    tail = "".join(f.readlines()[-10:])
            raise RuntimeError(f"{' '.join(args[:2])} failed: {done.stderr.strip()}\n{tail}")
        return done

    def start(self):
        if os.path.exists(self.dir):
            shutil.rmtree(self.dir)
        os.makedirs(self.dir)
        if self.run_as:
            os.chown(self.dir, self.run_as.pw_uid, self.run_as.pw_gid)
        # C locale: byte order, so a B+tree index serves LIKE 'prefix%' as it does in the other systems.
        self._run(["initdb", "-D", self.data, "-U", USER, "--auth=trust", "--locale=C", "-E", "UTF8", "--no-sync"])
        self._start_server()

    def _start_server(self):
        options = [f"-p {self.port}", "-c listen_addresses=127.0.0.1", f"-k {self.dir}"]
        options += [f"-c {k}={v}" for k, v in self.current.items()]
        self._run(["pg_ctl", "-D", self.data, "-l", self.log, "-w", "-o", " ".join(options), "start"])
        self.running = True
        self.con = self.psycopg.connect(host="127.0.0.1", port=self.port, user=USER, dbname="postgres", autocommit=True)
        self.backend_pid = self.con.execute("SELECT pg_backend_pid()").fetchone()[0]

    def _stop_server(self):
        if self.con is not None:
            self.con.close()
            self.con = None
            self.backend_pid = None
        if self.running:
            self._run(["pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop"], check=False)
            self.running = False

    def database_files(self):
        return [self.data]

    def stop(self):
        self._stop_server()

    def version(self):
        return "PostgreSQL " + self.con.execute("SHOW server_version").fetchone()[0]

    def settings(self):
        names = ["shared_buffers", "work_mem", "max_parallel_workers_per_gather", "jit", "effective_cache_size"]
        values = {n: self.con.execute(f"SHOW {n}").fetchone()[0] for n in names}
        values["cold runs"] = f"restart with shared_buffers={self.cold_shared_buffers}"
        values["locale"] = "C"
        return values

    def load(self, tbl_dir, schema):
        report = LoadReport(0.0)
        start_all = time.perf_counter()
        for table, columns in schema.items():
            start = time.perf_counter()
            self.con.execute(f"CREATE TABLE {table} ({', '.join(f'{c} {t}' for c, t in columns)})")
            with self.con.cursor().copy(f"COPY {table} FROM STDIN (DELIMITER '|')") as copy:
                for chunk in tbl.chunks_without_trailing_bar(tbl.path(tbl_dir, table)):
                    copy.write(chunk)
            report.tables[table] = time.perf_counter() - start
        report.seconds = time.perf_counter() - start_all
        return report

    def count_rows(self, table):
        return self.con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]

    def create_index(self, index):
        self.con.execute(index.sql())

    def analyze(self):
        self.con.execute("VACUUM ANALYZE")

    def execute(self, query, timeout):
        return self._execute_on(self.con, query, timeout)

    def open_session(self):
        con = self.psycopg.connect(host="127.0.0.1", port=self.port, user=USER, dbname="postgres", autocommit=True)
        return _Session(self, con)

    def _execute_on(self, con, query, timeout):
        con.execute(f"SET statement_timeout = {int(timeout * 1000) if timeout else 0}")
        start = time.perf_counter()
        result = None
        try:
            with con.cursor() as cur:
                for stmt in query.statements:
                    cur.execute(stmt)
                    if is_select(stmt):
                        result = ([d.name for d in cur.description], cur.fetchall())
        except self.psycopg.errors.QueryCanceled as e:
            self._drop_views(con, query)
            raise QueryFailed(f"time limit of {timeout:g} s reached", timed_out=True) from e
        except self.psycopg.Error as e:
            self._drop_views(con, query)
            raise QueryFailed(str(e).splitlines()[0]) from e
        seconds = time.perf_counter() - start
        if result is None:
            raise QueryFailed("the query text holds no SELECT")
        return Result(result[0], compare.normalize_rows(result[1]), seconds, "client")

    def query_pid(self):
        if self.backend_pid is None:
            raise NotMeasurable("no connection to the server")
        return self.backend_pid

    def _drop_views(self, con, query):
        for view in created_views(query):
            con.execute(f"DROP VIEW IF EXISTS {view}")

    def prepare_cold(self, drop_os_cache):
        self._stop_server()
        drop_os_cache()
        self.current = dict(self.warm, shared_buffers=self.cold_shared_buffers)
        self._start_server()

    def prepare_warm(self):
        if self.current != self.warm:
            self._stop_server()
            self.current = dict(self.warm)
            self._start_server()


class _Session:
    """One concurrent client of the throughput test: a connection (a backend) of its own."""

    def __init__(self, system, con):
        self.system = system
        self.con = con

    def execute(self, query, timeout):
        return self.system._execute_on(self.con, query, timeout)

    def close(self):
        self.con.close()
