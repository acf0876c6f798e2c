"""kura under test, driven through its command line: `kura tpch load --from DIR` to
load, and one `kura -c SQL --format csv` process per query run, timed as the wall
time of that process (kura's one-shot mode prints no timings of its own)."""

import os
import re
import statistics
import subprocess
import time

from .base import LoadReport, QueryFailed, Result, System, Unsupported

# CLI table output (comfy-table, UTF-8 borders) of `kura tpch load`: │ table │ rows │ MB │ seconds │ ...
_LOAD_ROW = re.compile(r"^\s*[│|]\s*(\w+)\s*[│|]\s*(\d+)\s*[│|]\s*[\d.]+\s*[│|]\s*([\d.]+)\s*[│|]")


class Kura(System):
    name = "kura"
    timing_note = "wall time of one `kura -c` process per run (start-up, open, query, output)"

    def __init__(self, binary, work_dir, buffer=None, cold_buffer="16MB", warm_io="buffered"):
        self.binary = binary
        self.path = os.path.join(work_dir, "kura.db")
        self.buffer = buffer
        self.cold_buffer = cold_buffer
        self.warm_io = warm_io
        self.cold = False
        self.startup_seconds = None

    def _options(self):
        options = ["--db", self.path]
        if self.cold:
            options += ["--buffer", self.cold_buffer]
        else:
            if self.buffer:
                options += ["--buffer", self.buffer]
            if self.warm_io == "buffered":
                options.append("--buffered-io")
        return options

    def _kura(self, args, timeout=None, options=None):
        cmd = [self.binary] + (self._options() if options is None else options) + args
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            raise QueryFailed(f"time limit of {timeout:g} s reached", timed_out=True) from e

    def _sql(self, sql, timeout=None):
        done = self._kura(["--format", "csv", "-c", sql], timeout)
        if done.returncode != 0:
            raise QueryFailed(_error_text(done))
        return done.stdout

    def start(self):
        for stale in (self.path, self.path + ".tmp"):
            if os.path.exists(stale):
                os.remove(stale)

    def version(self):
        done = subprocess.run([self.binary, "--version"], capture_output=True, text=True)
        return done.stdout.strip() or "kura (version unknown)"

    def settings(self):
        values = {
            "buffer (warm)": self.buffer or "default (a quarter of RAM)",
            "I/O (warm)": "buffered (OS page cache)" if self.warm_io == "buffered" else "O_DIRECT",
            "cold runs": f"O_DIRECT, --buffer {self.cold_buffer}, fresh process",
            "client": "one `kura -c ... --format csv` process per run",
        }
        if self.startup_seconds is not None:
            values["process start-up + open + count(*) on region"] = f"{self.startup_seconds * 1000:.1f} ms (median of 5)"
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
        # All statements in one process (Q15 creates, uses and drops a view).
        sql = ";\n".join(query.statements) + ";"
        start = time.perf_counter()
        out = self._sql(sql, timeout)
        seconds = time.perf_counter() - start
        columns, rows = parse_csv(out)
        if columns is None:
            raise QueryFailed("kura printed no result")
        return Result(columns, rows, seconds, "process")

    def prepare_cold(self, drop_os_cache):
        # Every run is a fresh process, so kura's buffer starts empty; cold adds O_DIRECT
        # and a small buffer, and the OS cache is dropped where that is permitted.
        self.cold = True
        drop_os_cache()

    def prepare_warm(self):
        self.cold = False


def parse_csv(text):
    """kura's `--format csv`: a header line, then '|'-separated rows; NULL prints empty."""
    lines = text.splitlines()
    if not lines:
        return None, []
    columns = lines[0].split("|")
    rows = []
    for line in lines[1:]:
        rows.append(tuple(v.strip() if v.strip() else "NULL" for v in line.split("|")))
    return columns, rows


def _error_text(done):
    text = (done.stderr.strip() or done.stdout.strip() or f"exit status {done.returncode}").splitlines()
    message = next((line for line in text if "ERROR" in line), text[-1] if text else "")
    return message.replace("ERROR: ", "", 1).strip()
