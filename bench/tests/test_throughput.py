"""TPC-H's throughput test: the specification's stream orders, per-stream views, and a run
over a fake system whose sessions record what ran concurrently."""

import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kurabench import queries, throughput  # noqa: E402
from kurabench.systems.base import QueryFailed, Result, System  # noqa: E402


class OrdersTest(unittest.TestCase):
    def test_every_stream_runs_each_query_once(self):
        for stream in range(1, throughput.MAX_STREAMS + 1):
            order = throughput.order_of(stream)
            self.assertEqual(sorted(order), sorted(queries.TPCH), stream)
        self.assertEqual(throughput.order_of(1)[:3], ["Q21", "Q3", "Q18"])

    def test_streams_past_the_kept_orders_are_refused(self):
        with self.assertRaises(ValueError):
            throughput.order_of(0)
        with self.assertRaises(ValueError):
            throughput.order_of(throughput.MAX_STREAMS + 1)

    def test_q15s_view_is_renamed_for_each_stream(self):
        q15 = queries.load("Q15", sf=1)
        text = " ".join(throughput.for_stream(q15, 3).statements)
        self.assertNotIn("revenue0", text)
        self.assertEqual(text.count("revenue3"), " ".join(q15.statements).count("revenue0"))
        q6 = queries.load("Q6", sf=1)
        self.assertEqual(throughput.for_stream(q6, 3), q6)


class Fake(System):
    """Answers every query after a short sleep; fails Q9 in stream sessions past the first."""

    name = "fake"

    def __init__(self):
        self.running = 0
        self.most_at_once = 0
        self.lock = threading.Lock()
        self.sessions = 0

    def open_session(self):
        self.sessions += 1
        return FakeSession(self, self.sessions)


class FakeSession:
    def __init__(self, system, number):
        self.system = system
        self.number = number
        self.closed = False

    def execute(self, query, timeout):
        s = self.system
        with s.lock:
            s.running += 1
            s.most_at_once = max(s.most_at_once, s.running)
        time.sleep(0.002)
        with s.lock:
            s.running -= 1
        if query.id == "Q9" and self.number > 1:
            raise QueryFailed("out of memory")
        # Q1's answer differs from the made-up reference answer below.
        rows = [("1",)] if query.id != "Q1" else [("2",)]
        return Result(["x"], rows, 0.002, "client")

    def close(self):
        self.closed = True


class RunTest(unittest.TestCase):
    def test_streams_run_at_once_and_failures_and_wrong_answers_are_reported(self):
        fake = Fake()
        test = throughput.run(fake, 1, 3, 60, lambda q: None, lambda m: None)
        self.assertEqual(len(test.runs), 3)
        self.assertGreater(fake.most_at_once, 1)
        self.assertTrue(all(len(r.queries) == 22 for r in test.runs))
        self.assertEqual([len(r.failed) for r in test.runs], [0, 1, 1])
        lines = throughput.problems(test)
        self.assertEqual(len(lines), 2)
        self.assertIn("stream 2 Q9 failed: out of memory", lines[0])
        self.assertGreater(test.seconds, 0)

    def test_answers_are_checked_against_the_reference(self):
        import tempfile

        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "q01.csv")
            with open(path, "w") as f:
                f.write("x\n1\n")
            test = throughput.run(
                Fake(), 1, 1, 60, lambda q: path if q.id == "Q1" else None, lambda m: None
            )
        wrong = test.runs[0].wrong
        self.assertEqual([q.query for q in wrong], ["Q1"])
        self.assertTrue(any(" wrong: " in line for line in throughput.problems(test)))

    def test_a_system_without_sessions_is_reported_not_run(self):
        class Plain(System):
            name = "plain"

        test = throughput.run(Plain(), 1, 2, 60, lambda q: None, lambda m: None)
        self.assertIn("no concurrent sessions", test.error)
        self.assertTrue(any("not run" in line for line in throughput.report_lines([test], "")))


if __name__ == "__main__":
    unittest.main()
