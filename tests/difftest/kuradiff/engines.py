"""The two systems under comparison: DuckDB (the Python package, in process) and kura
(`kura serve` processes, one per buffer size, reached with psycopg). Both load the
same `.tbl` files and build the same NULL-heavy tables."""

import os
import shutil
import socket
import subprocess
import threading
import time

from .schema import NULL_TABLES, index_statements, tpch_tables

SERVER_START_SECONDS = 60


class Failed(Exception):
    """The system reported an error for the statement."""


class Crashed(Exception):
    """The kura server died while running the statement."""


class TimedOut(Exception):
    """The statement ran past the time limit (the server was killed and restarts)."""


def tbl_path(tbl_dir, table):
    return os.path.join(tbl_dir, f"{table}.tbl")


class DuckDB:
    def __init__(self, path, threads=2):
        import duckdb

        self.duckdb = duckdb
        for stale in (path, path + ".wal"):
            if os.path.exists(stale):
                os.remove(stale)
        self.con = duckdb.connect(path, config={"threads": str(threads)})

    def load(self, tbl_dir):
        for table, cols in tpch_tables().items():
            self.con.execute(f"CREATE TABLE {table} ({', '.join(f'{c} {t}' for c, t in cols)})")
            # Every field read as text and cast; dbgen's trailing '|' is one more column.
            spec = {c: "VARCHAR" for c, _ in cols} | {"_trailing": "VARCHAR"}
            casts = ", ".join(f"CAST({c} AS {t})" for c, t in cols)
            self.con.execute(
                f"INSERT INTO {table} SELECT {casts} FROM read_csv(?, delim='|', header=false, "
                f"quote='', escape='', columns={spec!r})",
                [tbl_path(tbl_dir, table)],
            )
        for sql in NULL_TABLES.values():
            self.con.execute(sql)
        # DuckDB 2.0 answers wrongly from tables not yet checkpointed: orders LEFT
        # JOIN orders_n (every key matches) ORDER BY 1 NULLS FIRST LIMIT 3 gave three
        # NULL rows right after CREATE TABLE orders_n AS ..., the right rows after
        # CHECKPOINT.
        self.con.execute("CHECKPOINT")

    def run(self, sql, timeout=60):
        fired = threading.Event()

        def interrupt():
            fired.set()
            self.con.interrupt()

        timer = threading.Timer(timeout, interrupt)
        timer.start()
        try:
            cur = self.con.execute(sql)
            types = [str(d[1]) for d in cur.description]
            return types, cur.fetchall()
        except self.duckdb.Error as e:
            if fired.is_set():
                raise TimedOut(f"DuckDB gave no answer within {timeout:g} s") from e
            raise Failed(str(e).splitlines()[0]) from e
        finally:
            timer.cancel()

    def close(self):
        self.con.close()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prepare_kura(binary, db_path, tbl_dir, log):
    """Loads the `.tbl` files, paper 003's index set and the NULL-heavy tables."""
    for stale in (db_path, db_path + ".tmp"):
        if os.path.exists(stale):
            os.remove(stale)
    steps = [
        ["tpch", "load", "--from", tbl_dir],
        ["-c", ";\n".join(index_statements()) + ";"],
        ["-c", ";\n".join(NULL_TABLES.values()) + ";"],
    ]
    for args in steps:
        done = subprocess.run([binary, "--db", db_path] + args, capture_output=True, text=True)
        log.write(done.stdout + done.stderr)
        if done.returncode != 0:
            raise RuntimeError(f"kura {' '.join(args[:3])} failed: {done.stderr.strip() or done.stdout.strip()}")


class KuraServer:
    """One `kura serve` on its own copy of the database file, restarted when it dies."""

    def __init__(self, binary, db_path, buffer, log_path):
        self.binary, self.db_path, self.buffer, self.log_path = binary, db_path, buffer, log_path
        self.proc = None
        self.con = None
        self.settings = {}
        self.restarts = 0

    def start(self):
        import psycopg

        self.stop()
        port = free_port()
        args = [self.binary, "--db", self.db_path, "serve", "--listen", f"127.0.0.1:{port}"]
        if self.buffer:
            args[3:3] = ["--buffer", self.buffer]
        with open(self.log_path, "a", encoding="utf-8") as log:
            self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        deadline = time.time() + SERVER_START_SECONDS
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"kura serve exited at start (see {self.log_path})")
            try:
                self.con = psycopg.connect(
                    host="127.0.0.1", port=port, user="difftest", dbname="kura", autocommit=True,
                    connect_timeout=5,
                )
                break
            except psycopg.OperationalError:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        self.settings = {}

    def alive(self):
        return self.proc is not None and self.proc.poll() is None and self.con is not None

    def set(self, name, value):
        if self.settings.get(name) != value:
            self.run_plain(f"SET {name} = '{value}'")
            self.settings[name] = value

    def run_plain(self, sql):
        with self.con.cursor() as cur:
            cur.execute(sql)

    def run(self, sql, settings, timeout=60):
        """(column type names, rows) of `sql` under `settings`; Failed or Crashed otherwise."""
        import psycopg

        if not self.alive():
            self.start()
        fired = threading.Event()

        def kill():
            fired.set()
            self._kill()

        killer = threading.Timer(timeout, kill)
        killer.start()
        try:
            for name, value in settings.items():
                self.set(name, value)
            with self.con.cursor() as cur:
                cur.execute(sql)
                types = [str(d.type_code) for d in cur.description] if cur.description else []
                return types, cur.fetchall() if cur.description else []
        except psycopg.Error as e:
            if fired.is_set():
                self.restarts += 1
                self.stop()
                raise TimedOut(f"no answer within {timeout:g} s") from e
            # psycopg raises OperationalError for a lost connection and also for
            # errors the server sent of class 53 (53200 out of memory, 53100 disk
            # full): only the first, which has no SQLSTATE, is a crash.
            lost = isinstance(e, psycopg.OperationalError) and e.sqlstate is None
            if self.proc.poll() is not None or self.con.closed or lost:
                try:
                    code = self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    code = None
                self.restarts += 1
                self.stop()
                raise Crashed(f"server gone (exit {code})") from e
            raise Failed(str(e).splitlines()[0] if str(e) else type(e).__name__) from e
        finally:
            killer.cancel()

    def _kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()

    def stop(self):
        if self.con is not None:
            try:
                self.con.close()
            except Exception:  # the server may be gone already
                pass
            self.con = None
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


def _die_with_parent():
    """In the child: the kernel kills it when the tester dies, however that happens."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def copy_database(src, dst):
    shutil.copyfile(src, dst)
