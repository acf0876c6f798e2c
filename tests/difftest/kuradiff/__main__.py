"""The differential tester: random seeded SQL run in kura and in DuckDB on the same
TPC-H data, every query in every execution mode, with indexes on and off and with a
small buffer; a mismatch is shrunk and saved as a sqllogictest regression file.

    tests/difftest/run --sf 0.01 --queries 300 --seed 1
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

from . import compare, slt
from .ast import Select
from .engines import Crashed, DuckDB, Failed, KuraServer, TimedOut, copy_database, prepare_kura
from .known import duckdb_bug, duckdb_over_limit, known_difference, known_refusal
from .shrink import shrink
from .sqlgen import Generator

MODES = ("serial", "static", "ooo")


def configs(small_buffer, spill_limit):
    """(server, settings) pairs every query runs under: every mode with indexes on and
    off, every mode with a small buffer, and two modes under a memory limit small
    enough that joins, aggregations and sorts spill to disk."""
    out = []
    for index in ("on", "off"):
        for mode in MODES:
            out.append(("normal", {"execution_mode": mode, "enable_index": index}))
    for mode in MODES:
        out.append(("small", {"execution_mode": mode, "enable_index": "on"}))
    for mode in ("serial", "ooo"):
        out.append(("spill", {"execution_mode": mode, "enable_index": "on", "memory_limit": spill_limit}))
    return out


def over_limit(server, kura):
    """Kura refused a query under the spill configuration's memory limit (53200):
    what cannot go to disk (an uncorrelated NOT IN, a window function that reads
    ahead over a partition past the limit, a join without keys) is refused there,
    not answered wrongly."""
    return server == "spill" and kura[0] == "error" and kura[1].startswith("out of memory")


def describe(server, settings, small_buffer):
    parts = [f"{k}={v}" for k, v in settings.items()]
    if server == "small":
        parts.append(f"buffer={small_buffer}")
    return ", ".join(parts)


def is_unsupported(message):
    return "not supported" in message or "does not exist" in message and "function" in message


class Tester:
    def __init__(self, args):
        self.args = args
        self.work = os.path.abspath(args.work)
        os.makedirs(self.work, exist_ok=True)
        self.log = open(os.path.join(self.work, "difftest.log"), "a", encoding="utf-8")
        self.counts = Counter()
        self.failures = []
        self.unsupported = Counter()
        self.over_limit = Counter()  # what the spill configuration refused, by message
        self.kura_errors = Counter()
        self.examples = {}  # error kind -> one query that got it
        self.slow = []  # (seconds, query number, sql)
        self.timeouts = []  # (query number, seed, settings, sql)

    # ---- set-up ------------------------------------------------------------------------

    def setup(self):
        a = self.args
        tbl_dir = os.path.join(self.work, f"tbl-sf{a.sf:g}")
        if not os.path.exists(os.path.join(tbl_dir, "lineitem.tbl")):
            print(f"== generating TPC-H SF {a.sf:g} ({tbl_dir})", flush=True)
            done = subprocess.run([a.kura, "tpch", "gen", "--sf", f"{a.sf:g}", "--out", tbl_dir],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"kura tpch gen failed: {done.stderr.strip()}")
        print("== loading kura (tables, paper 003's indexes, NULL-heavy tables)", flush=True)
        base = os.path.join(self.work, "kura.db")
        prepare_kura(a.kura, base, tbl_dir, self.log)
        small = os.path.join(self.work, "kura-small.db")
        copy_database(base, small)
        self.servers = {
            "normal": KuraServer(a.kura, base, None, os.path.join(self.work, "serve-normal.log")),
            "small": KuraServer(a.kura, small, a.small_buffer, os.path.join(self.work, "serve-small.log")),
        }
        spill = os.path.join(self.work, "kura-spill.db")
        copy_database(base, spill)
        self.servers["spill"] = KuraServer(a.kura, spill, None, os.path.join(self.work, "serve-spill.log"))
        print("== loading DuckDB", flush=True)
        self.duck = DuckDB(os.path.join(self.work, "duckdb.db"))
        self.duck.load(tbl_dir)
        import duckdb

        self.duckdb_version = duckdb.__version__

    def close(self):
        for s in self.servers.values():
            s.stop()
        self.duck.close()

    # ---- one query ---------------------------------------------------------------------

    def kura_outcome(self, sql, server, settings):
        """('rows', types, rows) / ('error', message) / ('crash', why)."""
        try:
            types, rows = self.servers[server].run(sql, settings, self.args.time_limit)
            return ("rows", types, rows)
        except Failed as e:
            return ("error", str(e))
        except Crashed as e:
            return ("crash", str(e))
        except TimedOut as e:
            return ("timeout", str(e))

    def duck_outcome(self, sql):
        try:
            types, rows = self.duck.run(sql, self.args.time_limit)
            return ["rows", types, rows]
        except Failed as e:
            if duckdb_bug(str(e)):
                # No reference answer: skipped, neither agreed nor failed.
                return ("skip", str(e))
            return ("error", str(e))
        except TimedOut as e:
            return ("skip", str(e))

    def verdict(self, q, duck, kura):
        """None when kura agrees with DuckDB, else (class, detail)."""
        if kura[0] in ("crash", "timeout"):
            return (kura[0], kura[1])
        if kura[0] == "error" and kura[1].startswith("internal error"):
            # A bug caught on its way to the user (a panic turned into SQLSTATE
            # XX000), not a refusal: counted as a crash.
            return ("crash", kura[1])
        if duck[0] == "error":
            if kura[0] == "error":
                return None
            if known_difference(q.sql(), duck[1]):
                return None
            return ("answered-invalid", f"DuckDB: {duck[1]}")
        if kura[0] == "error":
            if known_refusal(q.sql(), kura[1]):
                return None
            return ("kura-error", kura[1])
        if duckdb_over_limit(q, duck):
            # DuckDB is wrong, not kura (the shrinker must not follow it).
            return None
        if len(duck) < 4:
            duck.append(compare.prepare(duck[2], q.total_order()))
        diff = compare.differences(duck[3], kura[2], q.total_order(), q.order_by)
        return ("wrong", diff) if diff else None

    def check(self, n, seed, q):
        sql = q.sql()
        duck = self.duck_outcome(sql)
        self.counts["queries"] += 1
        if duck[0] == "skip":
            return "too-large"
        if duck[0] == "error":
            self.counts["duckdb-error"] += 1
        elif len(duck[2]) > self.args.max_rows:
            # The generator bounds join sizes; this guards the run's time all the same.
            return "too-large"
        elif duckdb_over_limit(q, duck):
            # No reference answer: DuckDB 2.0 answers some ORDER BY ... LIMIT
            # queries over a RIGHT JOIN with every row (2,000 rows for LIMIT 1).
            print(f"   query {n} (seed {seed}): DuckDB returned {len(duck[2])} rows under "
                  f"LIMIT {q.limit}, skipped: {sql}", flush=True)
            return "duckdb-wrong"
        for server, settings in configs(self.args.small_buffer, self.args.spill_limit):
            kura = self.kura_outcome(sql, server, settings)
            self.counts["runs"] += 1
            if over_limit(server, kura):
                self.counts["refused-over-limit"] += 1
                self.over_limit[_message_kind(kura[1])] += 1
                self.examples.setdefault(_message_kind(kura[1]), sql)
                continue
            v = self.verdict(q, duck, kura)
            if v is None:
                continue
            cls, detail = v
            if cls == "timeout":
                # Slow, not wrong: reported with the slow queries, neither shrunk nor
                # run under the other settings (each would wait out the limit too).
                print(f"   query {n} (seed {seed}) timed out under {describe(server, settings, self.args.small_buffer)}: {sql}", flush=True)
                self.timeouts.append((n, seed, describe(server, settings, self.args.small_buffer), sql))
                return "timeout"
            if cls == "kura-error" and server == "spill":
                # Answered with memory, refused for another reason than the limit
                # while spilling: a failure of the spill path.
                cls = "spill-error"
            elif cls == "kura-error":
                # The same planner refuses the query under every setting: count it once.
                bucket = self.unsupported if is_unsupported(detail) else self.kura_errors
                kind = _message_kind(detail)
                bucket[kind] += 1
                self.examples.setdefault(kind, sql)
                self.counts["kura-error"] += 1
                return "kura-error"
            self.record_failure(n, seed, q, cls, detail, server, settings, duck)
            return cls
        return "ok"

    def record_failure(self, n, seed, q, cls, detail, server, settings, duck):
        where = describe(server, settings, self.args.small_buffer)
        print(f"!! query {n} (seed {seed}): {cls} under {where}: {detail}\n   {q.sql()}", flush=True)
        small = self.shrink(q, cls, server, settings) if self.args.shrink else q
        sql = small.sql()
        entry = {
            "query": n, "seed": seed, "class": cls, "detail": detail, "config": where,
            "sql": q.sql(), "shrunk": sql,
        }
        if small is not q:
            again = self.verdict(small, self.duck_outcome(sql), self.kura_outcome(sql, server, settings))
            entry["shrunk_detail"] = again[1] if again else None
            print(f"   shrunk: {sql}\n   -> {entry['shrunk_detail']}", flush=True)
        self.failures.append(entry)
        self.counts[cls] += 1
        self.save_regression(entry, small, server, settings)

    def shrink(self, q, cls, server, settings):
        deadline = time.time() + self.args.shrink_seconds

        def still_fails(cand):
            if not isinstance(cand, Select):
                return False
            if time.time() > deadline:
                return False
            sql = cand.sql()
            duck = self.duck_outcome(sql)
            if duck[0] == "skip" or (cls != "answered-invalid" and duck[0] == "error"):
                return False
            kura = self.kura_outcome(sql, server, settings)
            if over_limit(server, kura):
                return False
            v = self.verdict(cand, duck, kura)
            want = "kura-error" if cls == "spill-error" else cls
            return v is not None and v[0] == want

        return shrink(q, still_fails, self.args.shrink_budget)

    def save_regression(self, entry, q, server, settings):
        if not self.args.regressions:
            return
        os.makedirs(self.args.regressions, exist_ok=True)
        sql = q.sql()
        duck = self.duck_outcome(sql)
        if duck[0] == "skip":
            return
        name = f"difftest-{entry['seed']}-{entry['class']}.slt"
        path = os.path.join(self.args.regressions, name)
        header = [
            f"Found by the differential tester (seed {entry['seed']}, query {entry['query']}), shrunk.",
            f"kura ({entry['config']}): {entry['class']}: {entry.get('shrunk_detail') or entry['detail']}",
            f"Expected rows: DuckDB {self.duckdb_version}.",
        ]
        if duck[0] == "error":
            text = "\n".join(f"# {h}" for h in header) + f"\n\nstatement error\n{sql}\n"
        else:
            text = slt.render(sql, settings, duck[1], duck[2], q.total_order(), header)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"   saved {path}", flush=True)

    # ---- the run -----------------------------------------------------------------------

    def run(self):
        a = self.args
        start = time.time()
        self.setup()
        print(f"== {a.queries} queries from seed {a.seed}, {len(configs(a.small_buffer, a.spill_limit))} settings each "
              f"(modes {', '.join(MODES)}; indexes on/off; buffer default and {a.small_buffer}; "
              f"memory_limit {a.spill_limit}, spilling)", flush=True)
        outcomes = Counter()
        try:
            for n in range(a.queries):
                seed = a.seed * 1_000_003 + n
                q = Generator(seed).query()
                began = time.time()
                outcomes[self.check(n, seed, q)] += 1
                took = time.time() - began
                if took > a.slow:
                    print(f"   query {n} (seed {seed}) took {took:.1f} s: {q.sql()}", flush=True)
                    self.slow.append((round(took, 1), n, q.sql()))
                if (n + 1) % max(1, a.queries // 10) == 0:
                    print(f"   {n + 1}/{a.queries} queries, {time.time() - start:.0f} s: "
                          + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())), flush=True)
        finally:
            self.close()
        self.report(outcomes, time.time() - start)
        bad = sum(outcomes[c] for c in ("wrong", "crash", "answered-invalid", "spill-error"))
        return 1 if bad else 0

    def report(self, outcomes, seconds):
        a = self.args
        summary = {
            "seed": a.seed, "queries": a.queries, "sf": a.sf, "seconds": round(seconds, 1),
            "outcomes": dict(outcomes), "runs": self.counts["runs"],
            "duckdb_errors": self.counts["duckdb-error"],
            "refused_over_limit": dict(self.over_limit.most_common()),
            "unsupported": dict(self.unsupported.most_common()),
            "kura_errors": dict(self.kura_errors.most_common()),
            "error_examples": self.examples,
            "slow": sorted(self.slow, reverse=True),
            "timeouts": self.timeouts,
            "failures": self.failures,
        }
        with open(os.path.join(self.work, "difftest-report.json"), "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=1)
        print(f"== {a.queries} queries, {self.counts['runs']} kura runs in {seconds:.0f} s")
        print(f"   agreed: {outcomes['ok']}; wrong answers: {outcomes['wrong']}; crashes: {outcomes['crash']}; "
              f"answered where DuckDB refused: {outcomes['answered-invalid']}; "
              f"refused only while spilling: {outcomes['spill-error']}; "
              f"refused by kura: {outcomes['kura-error']}; timed out in kura (slow, not failed): "
              f"{outcomes['timeout']}; skipped (answer over --max-rows, or DuckDB timed out): {outcomes['too-large']}; "
              f"skipped (DuckDB returned more rows than the LIMIT): {outcomes['duckdb-wrong']}")
        print(f"   runs under memory_limit {a.spill_limit} refused as over the limit (53200): "
              f"{self.counts['refused-over-limit']}")
        for title, counter in (("unsupported in kura", self.unsupported), ("other kura errors", self.kura_errors),
                               (f"refused under memory_limit {a.spill_limit}", self.over_limit)):
            if counter:
                print(f"   {title}:")
                for msg, k in counter.most_common(12):
                    print(f"     {k:5d}  {msg}")
        failed = sum(outcomes[c] for c in ("wrong", "crash", "answered-invalid", "spill-error"))
        print(f"difftest: {a.queries - failed} passed, {failed} failed")


def _message_kind(message):
    """An error message without its positions, to count kinds of refusals."""
    import re

    m = re.sub(r"line \d+, column \d+: ", "", message)
    m = re.sub(r"'[^']*'|\"[^\"]*\"", "…", m)
    return m[:110]


def main(argv=None):
    p = argparse.ArgumentParser(prog="difftest", description=__doc__.splitlines()[0])
    p.add_argument("--kura", required=True, help="the kura binary")
    p.add_argument("--sf", type=float, default=0.01, help="TPC-H scale factor (default 0.01)")
    p.add_argument("--queries", type=int, default=300, help="how many queries (default 300)")
    p.add_argument("--seed", type=int, default=1, help="first seed; query n uses seed*1000003+n")
    p.add_argument("--work", default="target/difftest", help="where data, databases and logs go")
    p.add_argument("--small-buffer", default="4MB", help="kura's small buffer (default 4MB)")
    p.add_argument("--spill-limit", default="1MB",
                   help="memory_limit of the spilling configuration (default 1MB)")
    p.add_argument("--time-limit", type=float, default=20,
                   help="seconds per statement before kura counts as timed out (default 20)")
    p.add_argument("--slow", type=float, default=10, help="report queries whose runs take longer (s)")
    p.add_argument("--max-rows", type=int, default=100_000,
                   help="skip queries whose answer has more rows (default 100000)")
    p.add_argument("--regressions", default=None,
                   help="write each shrunk failure as a .slt file here (e.g. tests/slt/tpch)")
    p.add_argument("--no-shrink", dest="shrink", action="store_false", help="report failures unshrunk")
    p.add_argument("--shrink-budget", type=int, default=400, help="candidates tried per shrink")
    p.add_argument("--shrink-seconds", type=float, default=180, help="time a shrink may take")
    args = p.parse_args(argv)
    if args.queries < 1:
        p.error("--queries must be at least 1")
    if not args.regressions:
        args.regressions = os.path.join(args.work, "regressions")
    # A termination signal ends the run through its `finally`, which stops the servers.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    return Tester(args).run()


if __name__ == "__main__":
    sys.exit(main())
