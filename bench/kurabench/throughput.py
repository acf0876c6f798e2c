"""TPC-H's throughput test: N query streams run at once, each the 22 queries in the order
the specification gives that stream (Appendix A), one session per stream over one server
(`kura serve`, PostgreSQL) or one process (DuckDB, a connection per stream). Reports the
total time (first query started to last query finished), each stream's time, every failed
query with its error, and every answer that differs from the reference answer."""

import re
import threading
import time
from dataclasses import dataclass, field

from . import compare, queries
from .systems.base import QueryFailed

# TPC-H specification, Appendix A ("ordered sets"): stream s runs the queries in row s.
# Row 0 is the power test's order; the throughput test's streams are 1, 2, ...
STREAM_ORDERS = [
    [14, 2, 9, 20, 6, 17, 18, 8, 21, 13, 3, 22, 16, 4, 11, 15, 1, 10, 19, 5, 7, 12],
    [21, 3, 18, 5, 11, 7, 6, 20, 17, 12, 16, 15, 13, 10, 2, 8, 14, 19, 9, 22, 1, 4],
    [6, 17, 14, 16, 19, 10, 9, 2, 15, 8, 5, 22, 12, 7, 13, 18, 1, 4, 20, 3, 11, 21],
    [8, 5, 4, 6, 17, 7, 1, 18, 22, 14, 9, 10, 15, 11, 20, 2, 21, 19, 13, 16, 12, 3],
    [5, 21, 14, 19, 15, 17, 12, 6, 4, 9, 8, 16, 11, 2, 10, 18, 1, 13, 7, 22, 3, 20],
    [21, 15, 4, 6, 7, 16, 19, 18, 14, 22, 11, 13, 3, 1, 2, 5, 8, 20, 12, 17, 10, 9],
    [10, 3, 15, 13, 6, 8, 9, 7, 4, 11, 22, 18, 12, 1, 5, 16, 2, 14, 19, 20, 17, 21],
    [18, 8, 20, 21, 2, 4, 22, 17, 1, 11, 9, 19, 3, 13, 5, 7, 10, 16, 6, 14, 15, 12],
    [19, 1, 15, 17, 5, 8, 9, 12, 14, 7, 4, 3, 20, 16, 6, 22, 10, 13, 2, 21, 18, 11],
]
MAX_STREAMS = len(STREAM_ORDERS) - 1


@dataclass
class QueryRun:
    query: str  # Q1 .. Q22
    seconds: float = None
    error: str = ""
    wrong: list = field(default_factory=list)  # differences from the reference answer


@dataclass
class StreamRun:
    stream: int
    seconds: float = 0.0
    queries: list = field(default_factory=list)  # QueryRun, in the stream's order

    @property
    def failed(self):
        return [q for q in self.queries if q.error]

    @property
    def wrong(self):
        return [q for q in self.queries if q.wrong]


@dataclass
class Throughput:
    system: str
    streams: int
    seconds: float = 0.0
    runs: list = field(default_factory=list)  # StreamRun per stream
    error: str = ""  # why the test did not run


def order_of(stream):
    """The query ids of throughput stream `stream` (1-based), in the specification's order."""
    if not 1 <= stream <= MAX_STREAMS:
        raise ValueError(f"stream {stream}: the specification's orders are kept for streams 1-{MAX_STREAMS}")
    return [f"Q{n}" for n in STREAM_ORDERS[stream]]


def for_stream(query, stream):
    """The query with the views it creates renamed for the stream (Q15's revenue0 becomes
    revenue1, ...), as the specification allows: concurrent streams must not share them."""
    statements = list(query.statements)
    for view in queries.created_views(query):
        own = re.sub(r"\d*$", "", view) + str(stream)
        statements = [re.sub(rf"\b{re.escape(view)}\b", own, s) for s in statements]
    return queries.Query(query.id, tuple(statements))


def run(system, sf, streams, timeout, reference_answer, log):
    """Runs `streams` throughput streams on `system` at once; a Throughput.
    `reference_answer(query)` gives the path of a query's expected answer, or None."""
    test = Throughput(system.name, streams)
    try:
        sessions = [system.open_session() for _ in range(streams)]
    except QueryFailed as e:
        test.error = str(e)
        return test
    expected = {}
    for qid in queries.TPCH:
        path = reference_answer(queries.load(qid, sf=sf))
        if path:
            expected[qid] = compare.read_answer(path)[1]
    test.runs = [StreamRun(s + 1) for s in range(streams)]
    start_together = threading.Barrier(streams)

    def one_stream(index):
        stream = test.runs[index]
        session = sessions[index]
        start_together.wait()
        began = time.perf_counter()
        for qid in order_of(stream.stream):
            q = QueryRun(qid)
            stream.queries.append(q)
            try:
                result = session.execute(for_stream(queries.load(qid, sf=sf), stream.stream), timeout)
                q.seconds = result.seconds
                if qid in expected:
                    q.wrong = compare.differences(expected[qid], result.rows)
            except QueryFailed as e:
                q.error = str(e)
            shown = f"{q.seconds:.2f} s" if q.seconds is not None else f"FAILED: {q.error}"
            log(f"{system.name}: stream {stream.stream} {qid}: {shown}{' WRONG' if q.wrong else ''}")
        stream.seconds = time.perf_counter() - began

    threads = [threading.Thread(target=one_stream, args=(i,)) for i in range(streams)]
    began = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    test.seconds = time.perf_counter() - began
    for session in sessions:
        session.close()
    failed = sum(len(r.failed) for r in test.runs)
    wrong = sum(len(r.wrong) for r in test.runs)
    log(f"{system.name}: {streams} streams in {test.seconds:.1f} s, {failed} failed, {wrong} wrong")
    return test


def problems(test):
    """The failures of a throughput test, one line each (for the run's verdict)."""
    lines = []
    if test.error:
        lines.append(f"{test.system}: throughput test not run: {test.error}")
    for r in test.runs:
        for q in r.failed:
            lines.append(f"{test.system}: stream {r.stream} {q.query} failed: {q.error}")
        for q in r.wrong:
            lines.append(f"{test.system}: stream {r.stream} {q.query} wrong: {q.wrong[0]}")
    return lines


def report_lines(tests, command_note):
    """The report's section: totals side by side, then each stream."""
    if not tests:
        return []
    lines = [f"## Throughput test: {tests[0].streams} concurrent streams", "", command_note, ""]
    base = next((t for t in tests if t.system == "duckdb" and not t.error), None)
    lines += ["| system | total (s) | vs duckdb | failed | wrong | streams (s) |", "|---|---:|---:|---:|---:|---|"]
    for t in tests:
        if t.error:
            lines.append(f"| {t.system} | not run: {t.error} | | | | |")
            continue
        ratio = f"{t.seconds / base.seconds:.2f}" if base and base.seconds else ""
        failed = sum(len(r.failed) for r in t.runs)
        wrong = sum(len(r.wrong) for r in t.runs)
        per_stream = ", ".join(f"{r.seconds:.1f}" for r in t.runs)
        lines.append(f"| {t.system} | {t.seconds:.1f} | {ratio} | {failed} | {wrong} | {per_stream} |")
    lines.append("")
    for t in tests:
        for line in problems(t):
            lines.append(f"- {line}")
    return lines + [""]
