"""One benchmark run: data generated once, every system loaded from the same files and
given the same indexes, every query run warm and cold, every result cross-checked."""

import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field

from . import compare, memory, paths, queries, schema, tbl, throughput
from .systems.base import QueryFailed, Unsupported


@dataclass
class Outcome:
    """One system's runs of one query in one mode."""

    status: str  # ok | error | timeout | not run
    times: list = field(default_factory=list)
    error: str = ""
    result: object = None  # systems.base.Result of the last run
    rewritten: list = field(default_factory=list)  # notes on a translation for this system
    wrong: bool = False  # set by the cross-check
    peaks_kib: list = field(default_factory=list)  # peak RSS of each measured run
    before_kib: list = field(default_factory=list)  # RSS just before each measured run
    memory_error: str = ""  # why the peak RSS was not measured, if it was not

    @property
    def median(self):
        return statistics.median(self.times) if self.times else None

    @property
    def peak_median_kib(self):
        return statistics.median(self.peaks_kib) if self.peaks_kib else None

    @property
    def before_median_kib(self):
        return statistics.median(self.before_kib) if self.before_kib else None


@dataclass
class SystemRun:
    name: str
    version: str = ""
    settings: dict = field(default_factory=dict)
    timing_note: str = ""
    memory_scope: str = ""  # the process whose peak RSS is reported
    load: object = None  # LoadReport
    load_error: str = ""
    counts: dict = field(default_factory=dict)  # table -> rows the system holds
    indexes: dict = field(default_factory=dict)  # index name -> seconds | "not supported: ..."
    analyze_seconds: float = None
    outcomes: dict = field(default_factory=dict)  # (mode, query id) -> Outcome
    shares_database_of: str = None  # the system whose loaded database this one queries
    database_bytes: int = None  # its database's size on disk after loading, indexing and analyzing


@dataclass
class Disagreement:
    query: str
    mode: str
    system: str
    other: str  # another system's name, or "reference answer"
    problems: list


@dataclass
class Run:
    sf: float
    query_ids: list
    modes: list
    reps: int
    timeout: float
    expected_counts: dict = field(default_factory=dict)
    systems: dict = field(default_factory=dict)  # name -> SystemRun
    disagreements: list = field(default_factory=list)
    agreements: int = 0
    references: dict = field(default_factory=dict)  # query id -> answer file used, where one exists
    explains: list = field(default_factory=list)  # (query id, ratio, fastest peer, kura's EXPLAIN ANALYZE)
    memory_limit: str = None  # --memory-limit, applied to kura and DuckDB
    max_memory: str = None  # --max-memory: kura's --max-memory, DuckDB's memory_limit
    streams: int = 0  # --streams: the throughput test's concurrent streams (0: none)
    throughput: list = field(default_factory=list)  # throughput.Throughput per system
    spilled: dict = field(default_factory=dict)  # query id -> bytes kura spilled (warm), under a memory limit
    traffic: dict = field(default_factory=dict)  # query id -> kura-cluster's profile (moved rows/bytes, busy ms)
    remove_databases: bool = False  # --remove-databases: each database deleted once its system is done
    # The suite's own RSS before any system started: the floor under in-process systems' peaks.
    suite_rss_kib: int = None
    started: float = field(default_factory=time.time)
    seconds: float = 0.0


def ensure_data(kura_binary, sf, data_dir, log):
    """The eight .tbl files for this scale factor, generated once by kura's generator."""
    marker = os.path.join(data_dir, ".complete")
    if os.path.exists(marker):
        with open(marker, encoding="utf-8") as f:
            if f.read().strip() == f"sf={sf:g}":
                log(f"data: reusing {data_dir}")
                return data_dir
    if not kura_binary:
        raise RuntimeError("generating data needs kura (--kura BINARY) or existing .tbl files (--data DIR)")
    os.makedirs(data_dir, exist_ok=True)
    log(f"data: kura tpch gen --sf {sf:g} --out {data_dir}")
    done = subprocess.run(
        [kura_binary, "tpch", "gen", "--sf", f"{sf:g}", "--out", data_dir], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"kura tpch gen failed: {done.stderr.strip()}")
    with open(marker, "w", encoding="utf-8") as f:
        f.write(f"sf={sf:g}\n")
    return data_dir


def missing_tables(tbl_dir):
    """The .tbl files of the TPC-H tables that are not in tbl_dir."""
    return [f"{t}.tbl" for t in schema.TABLES if not os.path.isfile(tbl.path(tbl_dir, t))]


def prepare_system(system, run, tbl_dir, tables, indexes, log):
    """Starts, loads, checks row counts, builds indexes; False when the system cannot run queries.
    A system sharing another's database only checks its row counts."""
    sr = SystemRun(
        system.name,
        timing_note=system.timing_note,
        memory_scope=system.memory_scope,
        shares_database_of=system.shares_database_of,
    )
    run.systems[system.name] = sr
    owner = run.systems.get(sr.shares_database_of) if sr.shares_database_of else None
    if sr.shares_database_of and (owner is None or owner.load is None or owner.load_error):
        sr.load_error = f"it queries {sr.shares_database_of}'s database, which was not loaded before it"
        log(f"{system.name}: FAILED: {sr.load_error}")
        return False
    try:
        system.start()
        sr.version = system.version()
        if owner is None:
            log(f"{system.name}: loading ({sr.version})")
            sr.load = system.load(tbl_dir, tables)
            log(f"{system.name}: loaded in {sr.load.seconds:.2f} s")
        else:
            log(f"{system.name}: querying {owner.name}'s database ({sr.version})")
        for table in tables:
            sr.counts[table] = system.count_rows(table)
    except Exception as e:  # any failure to load is reported, not raised: the other systems go on
        sr.load_error = f"{type(e).__name__}: {e}"
        log(f"{system.name}: LOAD FAILED: {sr.load_error}")
        return False
    if owner is None:
        build_indexes(system, sr, indexes, log)
    try:
        if owner is None:
            start = time.perf_counter()
            system.analyze()
            sr.analyze_seconds = time.perf_counter() - start
        sr.settings = system.settings()
    except Exception as e:
        sr.load_error = f"after loading: {type(e).__name__}: {e}"
        log(f"{system.name}: FAILED: {sr.load_error}")
        return False
    if system.database_files():
        sr.database_bytes = disk_bytes(system.database_files())
        log(f"{system.name}: database {sr.database_bytes:,} bytes on disk")
    return True


def disk_bytes(paths):
    """Bytes the files and directories take on disk (allocated blocks, as du counts them)."""
    total = 0
    for path in paths:
        if os.path.isdir(path) and not os.path.islink(path):
            for root, _, names in os.walk(path):
                total += sum(os.lstat(os.path.join(root, n)).st_blocks * 512 for n in names)
        elif os.path.lexists(path):
            total += os.lstat(path).st_blocks * 512
    return total


def remove_database(system, log):
    """Deletes a stopped system's database (--remove-databases), to make room on the disk for
    the next system's. kura's stays: the steps after all systems ran query it (EXPLAIN ANALYZE)."""
    if system.name == "kura":
        return
    paths = [p for p in system.database_files() if os.path.lexists(p)]
    if not paths:
        return
    freed = disk_bytes(paths)
    for path in paths:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.remove(path)
    log(f"{system.name}: database removed ({freed:,} bytes freed)")


def build_indexes(system, sr, indexes, log):
    for index in indexes:
        try:
            start = time.perf_counter()
            system.create_index(index)
            sr.indexes[index.name] = time.perf_counter() - start
        except Unsupported as e:
            reason = str(e)
            sr.indexes[index.name] = reason if reason.startswith("not supported") else f"not supported: {reason}"
        except Exception as e:
            sr.indexes[index.name] = f"failed: {type(e).__name__}: {e}"
    built = sum(isinstance(v, float) for v in sr.indexes.values())
    log(f"{system.name}: {built} of {len(indexes)} indexes built")


def run_query(system, query, mode, reps, timeout, drop_os_cache):
    """The runs of one query in one mode: warm = one unmeasured run then `reps` measured
    ones; cold = `reps` runs, each after emptying the system's caches."""
    try:
        translated, notes = system.translate(query)
    except queries.NotRunnable as e:
        return Outcome("not run", error=str(e))
    outcome = Outcome("ok", rewritten=notes)
    try:
        if mode == "warm":
            system.execute(translated, timeout)
        for _ in range(reps):
            if mode == "cold":
                system.prepare_cold(drop_os_cache)
            probe = begin_memory(system, outcome)
            result = system.execute(translated, timeout)
            end_memory(probe, outcome)
            outcome.times.append(result.seconds)
            outcome.result = result
    except QueryFailed as e:
        outcome.status = "timeout" if e.timed_out else "error"
        outcome.error = str(e)
    return outcome


def begin_memory(system, outcome):
    """Resets the peak RSS of the process about to run the query: (pid, its RSS now in KiB),
    or None with the reason kept in the outcome."""
    try:
        pid = system.query_pid()
        return pid, memory.begin(pid)
    except memory.NotMeasurable as e:
        outcome.memory_error = str(e)
        return None


def end_memory(probe, outcome):
    """Records the peak RSS since begin_memory, with the RSS before, as one pair."""
    if probe is None:
        return
    pid, before = probe
    try:
        outcome.peaks_kib.append(memory.peak(pid))
        outcome.before_kib.append(before)
    except memory.NotMeasurable as e:
        outcome.memory_error = str(e)


def own_rss_kib():
    try:
        return memory.read_kib(os.getpid(), "VmRSS")
    except memory.NotMeasurable:
        return None


def run_system(system, run, query_list, drop_os_cache, log):
    sr = run.systems[system.name]
    for mode in run.modes:
        for query in query_list:
            previous = sr.outcomes.get(("warm", query.id))
            if mode == "cold" and previous is not None and previous.status == "timeout":
                sr.outcomes[(mode, query.id)] = Outcome("not run", error="timed out warm")
                continue
            outcome = run_query(system, query, mode, run.reps, run.timeout, drop_os_cache)
            sr.outcomes[(mode, query.id)] = outcome
            shown = (
                f"{outcome.median:.3f} s" if outcome.status == "ok" else f"{outcome.status.upper()}: {outcome.error}"
            )
            if outcome.peak_median_kib is not None:
                shown += f", peak RSS {memory.mib(outcome.peak_median_kib):.0f} MiB"
            log(f"{system.name}: {mode} {query.id}: {shown}")
        if mode == "cold":
            system.prepare_warm()


def reference_answer(sf, query):
    if query.is_selective:
        directory = paths.selective_answers_dir(sf)
    else:
        directory = paths.tpch_answers_dir(sf)
    if directory is None:
        return None
    path = os.path.join(directory, query.file_stem() + ".csv")
    return path if os.path.isfile(path) else None


def cross_check(run, query_list):
    """Checks every answered result, in every mode: against the reference answer where
    one exists (so all systems are checked against each other through it), otherwise
    against every other system's result of the same query. Flags each disagreement."""
    for query in query_list:
        reference = reference_answer(run.sf, query)
        expected = None
        if reference:
            run.references[query.id] = reference
            expected = compare.read_answer(reference)[1]
        for mode in run.modes:
            answered = [
                (name, sr.outcomes[(mode, query.id)])
                for name, sr in run.systems.items()
                if (mode, query.id) in sr.outcomes and sr.outcomes[(mode, query.id)].status == "ok"
            ]
            for i, (name, outcome) in enumerate(answered):
                rows = outcome.result.rows
                if expected is not None:
                    problems = compare.differences(expected, rows)
                    if problems:
                        outcome.wrong = True
                        run.disagreements.append(Disagreement(query.id, mode, name, "reference answer", problems))
                    else:
                        run.agreements += 1
                    continue
                # No reference answer: every pair of systems is compared instead.
                for other_name, other in answered[i + 1 :]:
                    problems = compare.differences(other.result.rows, rows)
                    if problems:
                        outcome.wrong = other.wrong = True
                        run.disagreements.append(Disagreement(query.id, mode, name, other_name, problems))
                    else:
                        run.agreements += 1


def furthest_behind(run, count=3, mode="warm"):
    """The queries where kura's time is the largest multiple of the fastest peer's:
    [(query id, ratio, peer)], ratio > 1 only, largest first."""
    base = run.systems.get("kura")
    if base is None:
        return []
    found = []
    for qid in run.query_ids:
        mine = base.outcomes.get((mode, qid))
        if mine is None or mine.status != "ok" or mine.wrong:
            continue
        peers = [
            (o.median, name)
            for name, sr in run.systems.items()
            if name != "kura" and (o := sr.outcomes.get((mode, qid))) is not None and o.status == "ok" and not o.wrong
        ]
        if peers:
            best, peer = min(peers)
            if mine.median > best:
                found.append((qid, mine.median / best, peer))
    return sorted(found, key=lambda f: -f[1])[:count]


def explain_furthest_behind(kura, run, query_list, log):
    """kura's EXPLAIN ANALYZE of the queries where it is furthest behind, for the report."""
    by_id = {q.id: q for q in query_list}
    for qid, ratio, peer in furthest_behind(run):
        try:
            plan = kura.explain_analyze(by_id[qid], run.timeout)
        except QueryFailed as e:
            plan = f"EXPLAIN ANALYZE failed: {e}"
        run.explains.append((qid, ratio, peer, plan))
        log(f"kura: EXPLAIN ANALYZE {qid} ({ratio:.1f}x {peer})")


_SPILLED = re.compile(r"spilled (\d+) bytes")


def spilled_bytes(plan):
    """The bytes every operator of an EXPLAIN ANALYZE spilled to temporary files."""
    return sum(int(m.group(1)) for m in _SPILLED.finditer(plan))


def measure_spills(kura, run, query_list, log):
    """What each query kura answered spilled under the memory limit (one more run, with
    EXPLAIN ANALYZE, after the measured ones)."""
    for q in query_list:
        outcome = run.systems["kura"].outcomes.get(("warm", q.id))
        if outcome is None or outcome.status != "ok":
            continue
        try:
            run.spilled[q.id] = spilled_bytes(kura.explain_analyze(q, run.timeout))
        except QueryFailed as e:
            log(f"kura: EXPLAIN ANALYZE {q.id} failed: {e}")
    log(f"kura: {sum(1 for b in run.spilled.values() if b)} queries spilled under memory_limit {run.memory_limit}")


_PROFILE = re.compile(r"kura-cluster-profile:(.*)")


def cluster_profile(plan):
    """The `kura-cluster-profile:` line of the cluster's EXPLAIN ANALYZE as {key: number}."""
    m = _PROFILE.search(plan)
    if m is None:
        raise QueryFailed("the cluster's EXPLAIN ANALYZE has no kura-cluster-profile line")
    return {k: float(v) for k, v in (kv.split("=", 1) for kv in m.group(1).split())}


def measure_traffic(cluster, run, query_list, log):
    """What each query the cluster answered moved between its processes and where its busy
    time went (EXPLAIN ANALYZE of one more warm run, after the measured ones)."""
    for q in query_list:
        outcome = run.systems[cluster.name].outcomes.get(("warm", q.id))
        if outcome is None or outcome.status != "ok":
            continue
        try:
            run.traffic[q.id] = cluster_profile(cluster.explain_analyze(q, run.timeout))
        except QueryFailed as e:
            log(f"{cluster.name}: EXPLAIN ANALYZE {q.id} failed: {e}")
    log(f"{cluster.name}: profiled {len(run.traffic)} queries (rows and bytes moved, busy time)")


def check_counts(run):
    """Row counts every system holds against the .tbl files' line counts."""
    problems = []
    for name, sr in run.systems.items():
        for table, rows in sr.counts.items():
            if rows != run.expected_counts[table]:
                problems.append(f"{name}: {table} holds {rows} rows, {run.expected_counts[table]} in the .tbl file")
    return problems


def failures(run, must_pass):
    """Everything that makes the run fail: load errors, wrong row counts, disagreements,
    and failed queries of the systems that must answer every query they run."""
    found = [f"{name}: load failed: {sr.load_error}" for name, sr in run.systems.items() if sr.load_error]
    found += check_counts(run)
    found += [f"{d.query} ({d.mode}): {d.system} vs {d.other}: {'; '.join(d.problems)}" for d in run.disagreements]
    for name, sr in run.systems.items():
        if name not in must_pass:
            continue
        for (mode, qid), outcome in sr.outcomes.items():
            if outcome.status in ("error", "timeout"):
                found.append(f"{name}: {qid} ({mode}) {outcome.status}: {outcome.error}")
    for test in run.throughput:
        # Wrong answers fail every system's run; failed queries those that must pass.
        found += [p for p in throughput.problems(test) if test.system in must_pass or " wrong: " in p]
    return found


def execute(systems, run, tbl_dir, drop_os_cache, log, with_indexes=True, covering=False):
    tables = schema.read_schema()
    indexes = schema.read_indexes() if with_indexes else []
    if covering:
        indexes += schema.read_indexes(paths.COVERING_INDEX_FILE)
    query_list = [queries.load(q, sf=run.sf) for q in run.query_ids]
    run.expected_counts = {t: tbl.line_count(tbl.path(tbl_dir, t)) for t in tables}
    run.suite_rss_kib = own_rss_kib()
    for system in systems:
        try:
            if prepare_system(system, run, tbl_dir, tables, indexes, log):
                run_system(system, run, query_list, drop_os_cache, log)
                if system.name == "kura-cluster" and "warm" in run.modes:
                    measure_traffic(system, run, query_list, log)
                if run.streams:
                    log(f"{system.name}: throughput test, {run.streams} streams")
                    run.throughput.append(
                        throughput.run(
                            system, run.sf, run.streams, run.timeout, lambda q: reference_answer(run.sf, q), log
                        )
                    )
        finally:
            try:
                system.stop()
            except Exception as e:  # a failed stop must not hide the run's results
                print(f"{system.name}: stop failed: {e}", file=sys.stderr)
            if run.remove_databases:
                remove_database(system, log)
    cross_check(run, query_list)
    kura = next((s for s in systems if s.name == "kura"), None)
    if kura is not None and "warm" in run.modes and not run.systems["kura"].load_error:
        explain_furthest_behind(kura, run, query_list, log)
        if run.memory_limit:
            measure_spills(kura, run, query_list, log)
    run.seconds = time.time() - run.started
