"""Peak RSS per query: parsing /proc/PID/status, resetting the peak, the n/a paths, and
the report's peak table, ratios and CSV columns."""

import csv
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kurabench import memory, queries, report, suite  # noqa: E402
from kurabench.systems.base import Result, System  # noqa: E402

STATUS = """Name:\tkura
State:\tS (sleeping)
Pid:\t4242
VmPeak:\t 2101236 kB
VmHWM:\t  524288 kB
VmRSS:\t  131072 kB
Threads:\t3
"""


def fake_proc(root, pid=4242, status=STATUS, clear_refs=True):
    """A directory laid out like /proc for one process (regular files stand in for /proc's)."""
    directory = os.path.join(root, str(pid))
    os.makedirs(directory)
    with open(os.path.join(directory, "status"), "w", encoding="ascii") as f:
        f.write(status)
    if clear_refs:
        open(os.path.join(directory, "clear_refs"), "w").close()
    return directory


class StatusTest(unittest.TestCase):
    def test_fields_in_kib(self):
        self.assertEqual(memory.status_kib(STATUS, "VmHWM"), 524288)
        self.assertEqual(memory.status_kib(STATUS, "VmRSS"), 131072)
        self.assertIsNone(memory.status_kib(STATUS, "VmSwap"))
        self.assertIsNone(memory.status_kib(STATUS, "Threads"))  # a count, not kB
        self.assertIsNone(memory.status_kib("VmHWM:\tlots kB\n", "VmHWM"))


class FakeProcTest(unittest.TestCase):
    def test_begin_resets_the_peak_and_returns_the_rss_now(self):
        with tempfile.TemporaryDirectory() as proc:
            directory = fake_proc(proc)
            self.assertEqual(memory.begin(4242, proc, platform="linux"), 131072)
            with open(os.path.join(directory, "clear_refs"), "rb") as f:
                self.assertEqual(f.read(), memory.RESET_PEAK)
            self.assertEqual(memory.peak(4242, proc), 524288)

    def test_no_clear_refs_is_not_measurable_and_says_why(self):
        with tempfile.TemporaryDirectory() as proc:
            fake_proc(proc, clear_refs=False)
            with self.assertRaisesRegex(memory.NotMeasurable, "cannot write .*4242/clear_refs"):
                memory.begin(4242, proc, platform="linux")
            # Not created in passing: the next attempt fails the same way.
            self.assertFalse(os.path.exists(os.path.join(proc, "4242", "clear_refs")))

    def test_a_gone_process_or_another_os_is_not_measurable(self):
        with tempfile.TemporaryDirectory() as proc:
            with self.assertRaisesRegex(memory.NotMeasurable, "cannot read .*/4242/status"):
                memory.peak(4242, proc)
            fake_proc(proc, status="Name:\tx\n")
            with self.assertRaisesRegex(memory.NotMeasurable, "no VmHWM line"):
                memory.peak(4242, proc)
        with self.assertRaisesRegex(memory.NotMeasurable, "not Linux"):
            memory.begin(1, platform="darwin")


@unittest.skipUnless(sys.platform.startswith("linux"), "/proc/PID/clear_refs is Linux's")
class ThisProcessTest(unittest.TestCase):
    def test_the_peak_sees_memory_touched_after_the_reset(self):
        try:
            before = memory.begin(os.getpid())
        except memory.NotMeasurable as e:
            self.skipTest(str(e))
        block = bytearray(64 * 1024 * 1024)  # zero-filled: every page touched
        self.assertGreaterEqual(memory.peak(os.getpid()) - before, 60 * 1024)
        del block


class InProcess(System):
    """A system that runs its queries in this process, like DuckDB and SQLite."""

    name = "inproc"
    memory_scope = "this test's process"

    def query_pid(self):
        return os.getpid()

    def execute(self, query, timeout):
        block = bytearray(16 * 1024 * 1024)
        del block
        return Result(["x"], [("1",)], 0.01, "client")


class Remote(InProcess):
    name = "remote"
    memory_scope = "none"

    def query_pid(self):
        raise memory.NotMeasurable("the server runs on another machine")


class RunQueryTest(unittest.TestCase):
    query = queries.Query("Q1", ("select 1",))

    def test_a_system_without_a_process_is_reported_not_failed(self):
        outcome = suite.run_query(Remote(), self.query, "warm", 2, 60.0, lambda: None)
        self.assertEqual(outcome.status, "ok")
        self.assertEqual((outcome.peaks_kib, outcome.memory_error), ([], "the server runs on another machine"))

    @unittest.skipUnless(sys.platform.startswith("linux"), "/proc/PID/clear_refs is Linux's")
    def test_every_measured_run_has_a_peak_and_a_baseline(self):
        outcome = suite.run_query(InProcess(), self.query, "cold", 3, 60.0, lambda: None)
        if outcome.memory_error:
            self.skipTest(outcome.memory_error)
        self.assertEqual((len(outcome.peaks_kib), len(outcome.before_kib)), (3, 3))
        self.assertTrue(all(p >= b for p, b in zip(outcome.peaks_kib, outcome.before_kib)))


def measured(seconds, peak_mib, before_mib, runs=3):
    return suite.Outcome(
        "ok",
        times=[seconds] * runs,
        result=Result(["x"], [("1",)], seconds, "client"),
        peaks_kib=[peak_mib * 1024] * runs,
        before_kib=[before_mib * 1024] * runs,
    )


class ReportTest(unittest.TestCase):
    def make_run(self):
        run = suite.Run(123.0, ["Q1", "Q6", "A"], ["warm"], 3, 60.0, expected_counts={"region": 5})
        for name, scope in (("kura", "the server"), ("duckdb", "Python"), ("sqlite", "Python")):
            run.systems[name] = suite.SystemRun(name, memory_scope=scope, counts={"region": 5})
        k, d, s = (run.systems[n].outcomes for n in ("kura", "duckdb", "sqlite"))
        k[("warm", "Q1")], d[("warm", "Q1")] = measured(1.0, 200, 100), measured(1.0, 400, 300)
        k[("warm", "Q6")], d[("warm", "Q6")] = measured(1.0, 800, 100), measured(1.0, 400, 300)
        k[("warm", "A")] = suite.Outcome("error", error="boom")
        d[("warm", "A")] = measured(1.0, 50, 40)
        for qid in run.query_ids:
            s[("warm", qid)] = suite.Outcome("ok", times=[1.0], memory_error="clear_refs not writable")
        return run

    def test_peak_table_ratios_and_the_reason_for_n_a(self):
        run = self.make_run()
        run.suite_rss_kib = 40 * 1024
        r = report.ratios(run, "warm", "duckdb", run.query_ids, value=report.usable_peak)
        self.assertEqual(r, {"Q1": 0.5, "Q6": 2.0})
        text = "\n".join(report.memory_section(run, "warm"))
        self.assertIn("| Q1 | 200.0 | 100.0 | 400.0 | 300.0 | n/a | n/a | 0.50 | — |", text)
        self.assertIn("| A | ERROR | ERROR | 50.0 | 40.0 | n/a | n/a | — | — |", text)
        self.assertIn("| **geo. mean all** |  |  |  |  |  |  | **1.00** (2/3) | — (0/3) |", text)
        self.assertIn("- sqlite: Python\n  - n/a: clear_refs not writable", text)
        self.assertIn("Python process held 40.0 MiB before any system started", text)
        summary = "\n".join(report.summary_lines(run, []))
        self.assertIn("warm: geometric mean of peak RSS kura/duckdb = **1.00** over 2 of 3 queries", summary)

    def test_the_csv_and_json_hold_the_peaks(self):
        run = self.make_run()
        with tempfile.TemporaryDirectory() as out:
            report.write(run, out, "t", {}, "", "cmd", [], {})
            with open(os.path.join(out, "t.csv"), encoding="utf-8", newline="") as f:
                rows = {(r["system"], r["query"]): r for r in csv.DictReader(f)}
            with open(os.path.join(out, "t.json"), encoding="utf-8") as f:
                data = f.read()
        q6 = rows[("kura", "Q6")]
        self.assertEqual((q6["peak_rss_mib"], q6["rss_before_mib"]), ("800.0", "100.0"))
        self.assertEqual(q6["peaks_rss_mib"], "800.0 800.0 800.0")
        self.assertEqual(rows[("sqlite", "Q1")]["memory_note"], "clear_refs not writable")
        self.assertIn('"peak_rss_median_kib": 819200', data)


if __name__ == "__main__":
    unittest.main()
