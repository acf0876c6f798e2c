"""The run's bookkeeping: ratios and geometric means, what fails a run, the cross-check
of results between systems, and the parsers of kura's output and of .tbl files."""

import csv
import importlib.util
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kurabench import queries, report, schema, suite, tbl  # noqa: E402
from kurabench.__main__ import make_systems, parse_args  # noqa: E402
from kurabench.systems.base import LoadReport, Result, System  # noqa: E402
from kurabench.systems.kura import _LOAD_ROW, parse_csv  # noqa: E402


def ok(seconds, rows):
    return suite.Outcome("ok", times=[seconds], result=Result(["x"], rows, seconds, "client"))


def make_run(sf=123.0):
    # A scale factor without reference answers: systems are compared with each other.
    run = suite.Run(sf, ["Q1", "Q6", "A"], ["warm"], 1, 60.0)
    run.expected_counts = {"region": 5}
    for name in ("kura", "duckdb", "sqlite"):
        run.systems[name] = suite.SystemRun(name, counts={"region": 5})
    return run


class MissingTablesTest(unittest.TestCase):
    def test_names_the_tbl_files_a_data_directory_lacks(self):
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(len(suite.missing_tables(d)), 8)
            for t in schema.TABLES[:-1]:
                open(tbl.path(d, t), "w").close()
            self.assertEqual(suite.missing_tables(d), ["lineitem.tbl"])


class RatioTest(unittest.TestCase):
    def test_ratios_and_geometric_mean(self):
        run = make_run()
        k, d = run.systems["kura"].outcomes, run.systems["duckdb"].outcomes
        k[("warm", "Q1")], d[("warm", "Q1")] = ok(2.0, [("1",)]), ok(1.0, [("1",)])
        k[("warm", "Q6")], d[("warm", "Q6")] = ok(1.0, [("2",)]), ok(4.0, [("2",)])
        k[("warm", "A")] = suite.Outcome("error", error="boom")
        d[("warm", "A")] = ok(1.0, [("3",)])
        r = report.ratios(run, "warm", "duckdb", run.query_ids)
        self.assertEqual(r, {"Q1": 2.0, "Q6": 0.25})
        # sqrt(2 * 0.25) = sqrt(0.5)
        self.assertAlmostEqual(report.geometric_mean(r.values()), 0.5**0.5)
        self.assertIsNone(report.geometric_mean([]))

    def test_wrong_answers_get_no_ratio(self):
        run = make_run()
        run.systems["kura"].outcomes[("warm", "Q1")] = ok(1.0, [("1",)])
        run.systems["duckdb"].outcomes[("warm", "Q1")] = ok(1.0, [("1",)])
        run.systems["kura"].outcomes[("warm", "Q1")].wrong = True
        self.assertEqual(report.ratios(run, "warm", "duckdb", ["Q1"]), {})


class FurthestBehindTest(unittest.TestCase):
    def test_largest_ratio_to_the_fastest_peer_first(self):
        run = make_run()
        k, d, s = (run.systems[n].outcomes for n in ("kura", "duckdb", "sqlite"))
        k[("warm", "Q1")], d[("warm", "Q1")], s[("warm", "Q1")] = ok(6.0, []), ok(3.0, []), ok(2.0, [])
        k[("warm", "Q6")], d[("warm", "Q6")] = ok(1.0, []), ok(0.1, [])
        k[("warm", "A")], d[("warm", "A")] = ok(1.0, []), ok(2.0, [])  # kura ahead: not listed
        found = suite.furthest_behind(run)
        self.assertEqual([(q, p) for q, _, p in found], [("Q6", "duckdb"), ("Q1", "sqlite")])
        self.assertAlmostEqual(found[0][1], 10.0)
        self.assertAlmostEqual(found[1][1], 3.0)


class CrossCheckTest(unittest.TestCase):
    def test_disagreeing_systems_are_flagged_and_fail_the_run(self):
        run = make_run()
        run.systems["kura"].outcomes[("warm", "Q6")] = ok(1.0, [("100.00",)])
        run.systems["duckdb"].outcomes[("warm", "Q6")] = ok(1.0, [("100.004",)])
        run.systems["sqlite"].outcomes[("warm", "Q6")] = ok(1.0, [("250.00",)])
        suite.cross_check(run, [queries.Query("Q6", ("select 1",))])
        pairs = {(d.system, d.other) for d in run.disagreements}
        self.assertEqual(pairs, {("kura", "sqlite"), ("duckdb", "sqlite")})
        self.assertEqual(run.agreements, 1)
        self.assertTrue(run.systems["sqlite"].outcomes[("warm", "Q6")].wrong)
        self.assertEqual(len(suite.failures(run, must_pass=[])), 2)

    def test_reference_answer_is_the_arbiter(self):
        run = make_run(sf=0.01)
        answer = suite.reference_answer(0.01, queries.Query("Q6", ()))
        if answer is None:
            self.skipTest("no TPC-H reference answers beside the repository")
        revenue = open(answer, encoding="utf-8").read().splitlines()[1]
        run.systems["kura"].outcomes[("warm", "Q6")] = ok(1.0, [(revenue,)])
        run.systems["duckdb"].outcomes[("warm", "Q6")] = ok(1.0, [(str(float(revenue) + 1),)])
        suite.cross_check(run, [queries.Query("Q6", ())])
        self.assertEqual([(d.system, d.other) for d in run.disagreements], [("duckdb", "reference answer")])
        self.assertFalse(run.systems["kura"].outcomes[("warm", "Q6")].wrong)


class FailuresTest(unittest.TestCase):
    def test_errors_fail_only_must_pass_systems(self):
        run = make_run()
        run.systems["kura"].outcomes[("warm", "Q1")] = suite.Outcome("error", error="unsupported")
        run.systems["sqlite"].outcomes[("warm", "Q1")] = suite.Outcome("not run", error="no dates")
        self.assertEqual(suite.failures(run, must_pass=["duckdb", "sqlite"]), [])
        self.assertEqual(suite.failures(run, must_pass=["kura"]), ["kura: Q1 (warm) error: unsupported"])

    def test_wrong_row_counts_and_load_errors_always_fail(self):
        run = make_run()
        run.systems["kura"].counts["region"] = 4
        run.systems["sqlite"].load_error = "disk full"
        found = suite.failures(run, must_pass=[])
        self.assertIn("kura: region holds 4 rows, 5 in the .tbl file", found)
        self.assertIn("sqlite: load failed: disk full", found)


class FakeSystem(System):
    def __init__(self, name, shares_database_of=None):
        self.name, self.shares_database_of = name, shares_database_of
        self.loaded, self.indexed = False, []

    def version(self):
        return "fake"

    def load(self, tbl_dir, tables):
        self.loaded = True
        return LoadReport(1.0)

    def count_rows(self, table):
        return 5

    def create_index(self, index):
        self.indexed.append(index.name)


class SharedDatabaseTest(unittest.TestCase):
    def test_kura_scan_runs_after_kura_on_its_database(self):
        args = parse_args(["--kura", "kura", "--kura-client", "cli", "--systems", "kura-scan,kura"])
        self.assertEqual(args.system_list, ["kura", "kura-scan"])
        kura, scan = make_systems(args, tempfile.gettempdir())
        self.assertEqual((scan.name, scan.shares_database_of, scan.path), ("kura-scan", "kura", kura.path))
        self.assertEqual(scan._set_statements(), ["SET enable_index = off"])
        self.assertEqual(kura._set_statements(), [])

    def test_a_shared_database_is_neither_loaded_nor_indexed_again(self):
        run = suite.Run(123.0, ["A"], ["warm"], 1, 60.0, expected_counts={"region": 5})
        owner, scan = FakeSystem("kura"), FakeSystem("kura-scan", shares_database_of="kura")
        index = schema.Index("region_key", "region", ("r_regionkey",))
        for system in (owner, scan):
            self.assertTrue(suite.prepare_system(system, run, "tbl", ["region"], [index], lambda m: None))
        self.assertEqual((owner.loaded, owner.indexed), (True, ["region_key"]))
        self.assertEqual((scan.loaded, scan.indexed), (False, []))
        self.assertEqual(run.systems["kura-scan"].counts, {"region": 5})
        run.systems["kura"].outcomes[("warm", "A")] = ok(1.0, [("1",)])
        run.systems["kura-scan"].outcomes[("warm", "A")] = ok(4.0, [("1",)])
        with tempfile.TemporaryDirectory() as out:
            with open(report.write(run, out, "t", {}, "", "cmd", [], {}), encoding="utf-8") as f:
                text = f.read()
        self.assertIn("| kura-scan | kura's database |", text)
        self.assertIn("| A | 1.0000 | 4.0000 | 0.25 |", text)

    def test_the_csv_holds_every_outcome_and_the_settings(self):
        run = make_run()
        run.systems["kura"].outcomes[("warm", "A")] = ok(2.0, [("1",)])
        run.systems["duckdb"].outcomes[("warm", "A")] = suite.Outcome("error", error="boom")
        run.systems["duckdb"].settings = {"threads": "2"}
        with tempfile.TemporaryDirectory() as out:
            report.write(run, out, "t", {"CPU": "x86"}, "dropped", "cmd", [], {})
            with open(os.path.join(out, "t.csv"), encoding="utf-8", newline="") as f:
                rows = list(csv.reader(f))
            with open(os.path.join(out, "t-settings.csv"), encoding="utf-8", newline="") as f:
                settings = list(csv.reader(f))
        self.assertEqual(rows[0], report.CSV_COLUMNS)
        self.assertIn(["kura", "warm", "A", "ok", "no", "2.000000", "1", "2.000000", "", "", "", ""], rows)
        self.assertIn(["duckdb", "warm", "A", "error", "no", "", "0", "", "", "", "", ""], rows)
        self.assertIn(["machine", "CPU", "x86"], settings)
        self.assertIn(["duckdb", "threads", "2"], settings)
        self.assertIn(["run", "OS page cache before cold runs", "dropped"], settings)

    def test_kura_scan_without_a_loaded_kura_fails_clearly(self):
        run = suite.Run(123.0, ["A"], ["warm"], 1, 60.0)
        scan = FakeSystem("kura-scan", shares_database_of="kura")
        self.assertFalse(suite.prepare_system(scan, run, "tbl", ["region"], [], lambda m: None))
        self.assertIn("kura's database, which was not loaded", run.systems["kura-scan"].load_error)


class FileSystem(FakeSystem):
    """A fake system whose database is a file and a directory in a temporary directory."""

    def __init__(self, name, directory):
        super().__init__(name)
        self.files = [os.path.join(directory, f"{name}.db"), os.path.join(directory, f"{name}.db.tmp")]

    def load(self, tbl_dir, tables):
        self.found_at_load = sorted(n for n in os.listdir(os.path.dirname(self.files[0])) if ".db" in n)
        with open(self.files[0], "wb") as f:
            f.write(b"x" * 10000)
        os.makedirs(self.files[1])
        with open(os.path.join(self.files[1], "spill"), "wb") as f:
            f.write(b"y" * 5000)
        return super().load(tbl_dir, tables)

    def database_files(self):
        return self.files

    def execute(self, query, timeout):
        return Result(["x"], [("1",)], 0.1, "client")


class RemoveDatabasesTest(unittest.TestCase):
    def test_the_option_is_parsed_and_off_by_default(self):
        self.assertFalse(parse_args(["--systems", "duckdb"]).remove_databases)
        self.assertTrue(parse_args(["--systems", "duckdb", "--remove-databases"]).remove_databases)

    def test_each_database_is_measured_and_all_but_kuras_removed_after_its_queries(self):
        with tempfile.TemporaryDirectory() as d:
            tbl_dir = os.path.join(d, "tbl")
            os.makedirs(tbl_dir)
            for t in schema.TABLES:
                with open(tbl.path(tbl_dir, t), "w") as f:
                    f.write("1|\n")
            duck, kura = FileSystem("duckdb", d), FileSystem("kura", d)
            run = suite.Run(123.0, ["Q6"], ["warm"], 1, 60.0)
            run.remove_databases = True
            suite.execute([duck, kura], run, tbl_dir, lambda: None, lambda m: None, with_indexes=False)
            for system in (duck, kura):
                # Allocated blocks: at least the bytes written, file and directory together.
                self.assertGreaterEqual(run.systems[system.name].database_bytes, 15000)
            self.assertFalse(any(os.path.exists(p) for p in duck.files))
            self.assertEqual(kura.found_at_load, [])  # duckdb's was gone before kura loaded
            self.assertTrue(all(os.path.exists(p) for p in kura.files))
            self.assertEqual(run.agreements, 1)  # answers are kept after the database is gone
            with tempfile.TemporaryDirectory() as out:
                with open(report.write(run, out, "t", {}, "", "cmd", [], {}), encoding="utf-8") as f:
                    text = f.read()
            self.assertIn(f"| duckdb | 1.00 | {run.systems['duckdb'].database_bytes:,} |", text)

    def test_removing_deletes_file_and_directory_but_never_kuras(self):
        with tempfile.TemporaryDirectory() as d:
            duck, kura = FileSystem("duckdb", d), FileSystem("kura", d)
            duck.load("tbl", [])
            kura.load("tbl", [])
            suite.remove_database(kura, lambda m: None)
            suite.remove_database(duck, lambda m: None)
            self.assertTrue(all(os.path.exists(p) for p in kura.files))
            self.assertFalse(any(os.path.exists(p) for p in duck.files))


class MemoryLimitTest(unittest.TestCase):
    def test_the_limit_reaches_kura_and_kura_scan(self):
        args = parse_args(["--kura", "kura", "--kura-client", "cli", "--systems", "kura,kura-scan", "--memory-limit", "256MB"])
        kura, scan = make_systems(args, tempfile.gettempdir())
        self.assertEqual(kura._set_statements(), ["SET memory_limit = '256MB'"])
        self.assertEqual(scan._set_statements(), ["SET enable_index = off", "SET memory_limit = '256MB'"])

    @unittest.skipUnless(importlib.util.find_spec("duckdb"), "DuckDB is installed in the benchmark's venv")
    def test_the_limit_reaches_duckdb(self):
        args = parse_args(["--systems", "duckdb", "--memory-limit", "256MB"])
        (duck,) = make_systems(args, tempfile.gettempdir())
        self.assertEqual(duck.memory_limit, "256MB")

    def test_a_limit_that_is_no_size_is_refused(self):
        with self.assertRaises(SystemExit):
            parse_args(["--kura", "kura", "--systems", "duckdb", "--memory-limit", "lots"])

    def test_spilled_bytes_are_summed_over_operators_and_reported(self):
        plan = (
            "hash_join: Inner [rows 5 spilled 1000 bytes in 64 files]\n"
            "  sort: [rows 9 spilled 24 bytes in 2 files (3 sorted runs, 1 merge passes)]\n"
            "  table_scan: t [rows 9]"
        )
        self.assertEqual(suite.spilled_bytes(plan), 1024)
        self.assertEqual(suite.spilled_bytes("table_scan: t [rows 9]"), 0)
        run = make_run()
        run.memory_limit = "64MB"
        run.spilled = {"Q1": 1024, "Q6": 0}
        with tempfile.TemporaryDirectory() as out:
            with open(report.write(run, out, "t", {}, "", "cmd", [], {}), encoding="utf-8") as f:
                text = f.read()
        self.assertIn("## Spilled under memory_limit 64MB (kura, warm)", text)
        self.assertIn("| Q1 | 1,024 |", text)
        self.assertIn("kura's limit bounds its operators", text)


class ParserTest(unittest.TestCase):
    def test_kura_csv(self):
        columns, rows = parse_csv('n_name,total\nFRANCE,12.50\nGERMANY,\n"A, B",1\n')
        self.assertEqual(columns, ["n_name", "total"])
        self.assertEqual(rows, [("FRANCE", "12.50"), ("GERMANY", "NULL"), ("A, B", "1")])
        self.assertEqual(parse_csv(""), (None, []))

    def test_kura_load_table_row(self):
        m = _LOAD_ROW.match("│ lineitem ┆ 60175 ┆ 7.3  ┆ 0.194   ┆ 37.4 ┆ 309615 │")
        self.assertEqual(m.groups(), ("lineitem", "60175", "0.194"))
        self.assertIsNone(_LOAD_ROW.match("│ table    ┆ rows  ┆ MB   ┆ seconds ┆ MB/s ┆ rows/s │"))

    def test_tbl_lines_lose_their_trailing_bar(self):
        with tempfile.NamedTemporaryFile("w", suffix=".tbl", delete=False) as f:
            f.write("0|AFRICA|lar deposits|\n1|AMERICA|hs use ironic|\n")
        try:
            self.assertEqual(
                b"".join(tbl.chunks_without_trailing_bar(f.name, chunk_bytes=8)),
                b"0|AFRICA|lar deposits\n1|AMERICA|hs use ironic\n",
            )
            self.assertEqual(list(tbl.rows(f.name))[1], ["1", "AMERICA", "hs use ironic"])
            self.assertEqual(tbl.line_count(f.name), 2)
        finally:
            os.remove(f.name)


if __name__ == "__main__":
    unittest.main()


class KuraClusterTest(unittest.TestCase):
    def test_the_cluster_needs_a_shard_and_takes_no_memory_limit(self):
        with self.assertRaises(SystemExit):
            parse_args(["--kura", "kura", "--systems", "kura-cluster", "--cluster-shards", "0"])
        with self.assertRaises(SystemExit):
            parse_args(["--kura", "kura", "--systems", "kura-cluster", "--memory-limit", "256MB"])

    def test_the_front_door_is_started_on_the_shards_it_loaded(self):
        from kurabench.systems.kura_cluster import KuraCluster

        cluster = KuraCluster("kura", "bench-work", sf=1.0, shards=3, buffer="1GB")
        cmd = cluster._server_command(5999)
        self.assertEqual(cmd[:4], ["kura", "cluster", "up", "--local"])
        self.assertEqual(cmd[4], "3")
        self.assertIn(os.path.join("bench-work", "kura-cluster"), cmd)
        self.assertEqual(cmd[-2:], ["--buffer", "1GB"])
        cluster.cold = True
        self.assertEqual(cluster._server_command(5999)[-2:], ["--buffer", "16MB"])


class ClusterProfileTest(unittest.TestCase):
    LINE = (
        "kura-cluster-profile: wall_ms=120.000 shards=2 shard_kura_ms=150.000 shard_rows=1000 "
        "worker_datafusion_ms=20.000 coordinator_ms=5.000 shuffle_exchanges=0 shuffle_rows=0 "
        "shuffle_bytes=0 shuffle_ms=0.000 broadcast_exchanges=0 broadcast_rows=0 broadcast_bytes=0 "
        "broadcast_ms=0.000 gather_exchanges=1 gather_rows=1000 gather_bytes=2097152 gather_ms=25.000"
    )

    def test_reads_the_profile_line_of_the_clusters_explain_analyze(self):
        p = suite.cluster_profile("┌───── DistributedExec\n...\n" + self.LINE + "\n")
        self.assertEqual(p["wall_ms"], 120.0)
        self.assertEqual(p["gather_bytes"], 2097152.0)
        with self.assertRaises(suite.QueryFailed):
            suite.cluster_profile("a plan without the line")

    def test_the_report_gives_moved_data_and_busy_shares(self):
        run = make_run()
        run.traffic["Q1"] = suite.cluster_profile(self.LINE)
        text = "\n".join(report.traffic_section(run))
        # Busy 150 + 20 + 25 + 5 = 200 ms: the shards' share is 75 %.
        self.assertIn("| Q1 | 120.0 | 0 / 0.00 | 0 / 0.00 | 1,000 / 2.00 | 75 % | 10 % | 12 % | 2 % |", text)
