"""What the suite needs from a database system, and the outcome types it records."""

import time
from dataclasses import dataclass, field

from ..memory import NotMeasurable


class QueryFailed(Exception):
    """The system ran the query and reported an error (or broke off at the time limit)."""

    def __init__(self, message, timed_out=False):
        super().__init__(message)
        self.timed_out = timed_out


class Unsupported(Exception):
    """The system lacks a feature the suite asked for (e.g. CREATE INDEX)."""


@dataclass
class Result:
    columns: list
    rows: list  # rows of normalised values (see compare.normalize)
    seconds: float  # as the system's timing source measured it
    timing: str  # "client" (wall time around the call), "process" or "server"


@dataclass
class LoadReport:
    seconds: float
    tables: dict = field(default_factory=dict)  # table -> seconds, where the system says


class System:
    """One database under test. Subclasses implement the hooks; the suite calls them in order:
    start, load, count_rows, create_index*, analyze, then execute per query, with
    prepare_cold / prepare_warm around the cold runs, and stop at the end (always)."""

    name = "?"
    # The name of another system in the run whose loaded database (and indexes) this one
    # queries; the suite then neither loads nor indexes it a second time.
    shares_database_of = None
    # What the timings of `execute` measure, for the report.
    timing_note = "wall time of the client call, results fetched"
    # Which process `query_pid` names, for the report's peak memory (RSS).
    memory_scope = "the process that runs the queries"

    def start(self):
        pass

    def stop(self):
        pass

    def version(self):
        raise NotImplementedError

    def settings(self):
        """{setting: value} worth reporting (buffer sizes, threads, I/O mode)."""
        return {}

    def load(self, tbl_dir, schema):
        raise NotImplementedError

    def count_rows(self, table):
        raise NotImplementedError

    def database_files(self):
        """The files and directories this system's own loaded database occupies (none when it
        queries another system's database or keeps it elsewhere), for its size on disk and
        --remove-databases."""
        return []

    def create_index(self, index):
        """Builds one index; raises Unsupported when the system has no such index."""
        raise Unsupported("no secondary indexes")

    def analyze(self):
        """Gathers optimizer statistics after loading, where the system needs it."""

    def translate(self, query):
        """(query in this system's dialect, notes on what was rewritten); raises NotRunnable."""
        return query, []

    def execute(self, query, timeout):
        """Runs every statement of the query; returns the Result of its last SELECT."""
        raise NotImplementedError

    def query_pid(self):
        """The pid of the process the next `execute` runs in, for its peak RSS; raises
        memory.NotMeasurable with the reason when no such local process can be named."""
        raise NotMeasurable("this system names no process that runs its queries")

    def open_session(self):
        """A session of its own for one of several concurrent clients (the throughput
        test): an object with `execute(query, timeout)` like this system's, and `close()`.
        Raises QueryFailed when the system cannot serve concurrent clients."""
        raise QueryFailed(f"{self.name} has no concurrent sessions in this suite")

    def prepare_cold(self, drop_os_cache):
        """Empties this system's caches before a cold run (restart, small buffer)."""

    def prepare_warm(self):
        """Returns to the warm configuration after cold runs."""


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start
