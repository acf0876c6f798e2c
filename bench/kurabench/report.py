"""The Markdown report of a run (and its raw numbers as JSON and CSV): per-query times and
peak memory, ratios kura/peer with their geometric means, loading and index builds, the
machine, the systems' versions and settings, the cross-check and every failure."""

import csv
import dataclasses
import datetime
import json
import math
import os

from . import memory, queries, throughput

BASE = "kura"


def geometric_mean(values):
    values = [v for v in values if v and v > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def usable_time(outcome):
    """A median worth comparing: the query ran and its answer is not wrong."""
    if outcome is None or outcome.status != "ok" or outcome.wrong:
        return None
    return outcome.median


def usable_peak(outcome):
    """A peak RSS worth comparing: measured, of a query that ran with an answer not wrong."""
    if usable_time(outcome) is None:
        return None
    return outcome.peak_median_kib


def ratios(run, mode, peer, query_ids, value=usable_time):
    """kura's value / the peer's per query where both have a usable one (> 1: kura slower,
    or with usable_peak: kura's peak RSS higher)."""
    base, other = run.systems.get(BASE), run.systems.get(peer)
    found = {}
    if base is None or other is None:
        return found
    for qid in query_ids:
        k, p = value(base.outcomes.get((mode, qid))), value(other.outcomes.get((mode, qid)))
        if k and p:
            found[qid] = k / p
    return found


def memory_cell(outcome, kib):
    """One peak or baseline in MiB; n/a when the run was not measured."""
    if outcome is None:
        return "—"
    if kib is not None:
        text = f"{memory.mib(kib):.1f}"
        return f"{text} ✗wrong" if outcome.wrong else text
    if outcome.status != "ok":
        return cell(outcome)
    return "n/a"


def cell(outcome):
    if outcome is None:
        return "—"
    if outcome.status == "ok":
        text = f"{outcome.median:.4f}"
        return f"{text} ✗wrong" if outcome.wrong else text
    if outcome.status == "not run":
        return "not run"
    return "timeout" if outcome.status == "timeout" else "ERROR"


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def geomean_rows(run, blanks, per_peer, peers):
    """The geometric means of each peer's ratios over each query set, as table rows with
    `blanks` empty cells between the label and the means."""
    rows = []
    for label, subset in (
        ("geo. mean TPC-H", queries.TPCH),
        ("geo. mean (A)-(D)", queries.SELECTIVE),
        ("geo. mean vA, vC, vD", queries.VARIANTS),
        ("geo. mean all", None),
    ):
        ids = [q for q in run.query_ids if subset is None or q in subset]
        if not ids or not peers:
            continue
        row = [f"**{label}**"] + [""] * blanks
        for p in peers:
            vals = [per_peer[p][q] for q in ids if q in per_peer[p]]
            g = geometric_mean(vals)
            row.append(f"**{g:.2f}** ({len(vals)}/{len(ids)})" if g else f"— (0/{len(ids)})")
        rows.append(row)
    return rows


def memory_section(run, mode):
    """Peak RSS per query and system, the RSS before the query, and kura/peer ratios."""
    names = list(run.systems)
    peers = [n for n in names if n != BASE] if BASE in run.systems else []
    header = ["query"] + [f"{n} {what}" for n in names for what in ("peak", "before")]
    header += [f"{BASE}/{p}" for p in peers]
    per_peer = {p: ratios(run, mode, p, run.query_ids, value=usable_peak) for p in peers}
    rows = []
    for qid in run.query_ids:
        row = [qid]
        for n in names:
            o = run.systems[n].outcomes.get((mode, qid))
            row += [memory_cell(o, o and o.peak_median_kib), memory_cell(o, o and o.before_median_kib)]
        row += [f"{per_peer[p][qid]:.2f}" if qid in per_peer[p] else "—" for p in peers]
        rows.append(row)
    rows += geomean_rows(run, 2 * len(names), per_peer, peers)
    out = [f"## Peak memory (RSS), {mode} (median of {run.reps}, MiB)", ""]
    out.append(
        "For each measured run, the peak resident set size of the process that runs the query: its peak is "
        "reset (`echo 5 > /proc/PID/clear_refs`) just before the query and read (`VmHWM` of "
        "`/proc/PID/status`) after it; *before* is its RSS just before the query, so *peak − before* is what "
        "the query added. A process's RSS also holds what its buffer pool kept from earlier queries and what "
        "its allocator kept from earlier runs (the unmeasured warm run included), so peaks depend on the order "
        "of the queries and *before* is that floor. "
        + (
            "Ratios are kura's peak over the peer's (above 1: kura uses more), over the queries both answered "
            "correctly. "
            if peers
            else ""
        )
        + "The process measured:"
    )
    out.append("")
    if run.suite_rss_kib:
        out.append(
            f"- the suite's own Python process held {memory.mib(run.suite_rss_kib):.1f} MiB before any system "
            "started (interpreter, suite, client libraries loaded): the floor under an in-process system's peak"
        )
    if run.memory_limit:
        out.append(
            f"- under memory_limit {run.memory_limit} the peaks compare different things: kura's limit bounds its "
            "operators (hash tables, sorts, results), not its buffer pool, which its RSS holds; DuckDB's bounds "
            "its buffer manager too"
        )
    for name, sr in run.systems.items():
        out.append(f"- {name}: {sr.memory_scope or 'unknown'}")
        reasons = dict.fromkeys(o.memory_error for (m, _), o in sr.outcomes.items() if m == mode and o.memory_error)
        for reason in reasons:
            out.append(f"  - n/a: {reason.replace('|', '/')}")
    out += ["", table(header, rows), ""]
    return out


def times_section(run, mode, charts):
    names = list(run.systems)
    peers = [n for n in names if n != BASE] if BASE in run.systems else []
    header = ["query"] + names + [f"{BASE}/{p}" for p in peers]
    rows = []
    per_peer = {p: ratios(run, mode, p, run.query_ids) for p in peers}
    for qid in run.query_ids:
        row = [qid] + [cell(run.systems[n].outcomes.get((mode, qid))) for n in names]
        row += [f"{per_peer[p][qid]:.2f}" if qid in per_peer[p] else "—" for p in peers]
        rows.append(row)
    rows += geomean_rows(run, len(names), per_peer, peers)
    out = [f"## Query times, {mode} (median of {run.reps}, seconds)", ""]
    out.append(
        "Ratios are kura's time over the peer's (above 1: kura slower), over the queries both answered "
        "correctly; the geometric means say over how many. ✗wrong marks an answer that failed the cross-check "
        "(its time counts for nothing); ERROR, timeout and not run are explained under Failures."
        if peers
        else "kura was not part of this run, so no ratios."
    )
    for name, sr in run.systems.items():
        if sr.shares_database_of:
            settings = sr.settings.get("session settings", "other settings")
            out += ["", f"{name} queries {sr.shares_database_of}'s database with {settings}: {BASE}/{name} "
                    f"is the speed-up of {BASE}'s own plans over that (below 1: {BASE} faster)."]
    out += ["", table(header, rows), ""]
    for title, file_name in charts:
        out += [f"![{title}]({file_name})", ""]
    return out


def summary_lines(run, failures_found):
    out = []
    peers = [n for n in run.systems if n != BASE] if BASE in run.systems else []
    for mode in run.modes:
        for p in peers:
            for what, value, missing in (
                ("kura/", usable_time, "no query answered by both"),
                ("peak RSS kura/", usable_peak, "no query answered and measured by both"),
            ):
                r = ratios(run, mode, p, run.query_ids, value=value)
                g = geometric_mean(list(r.values()))
                out.append(
                    f"- {mode}: geometric mean of {what}{p} = "
                    + (f"**{g:.2f}** over {len(r)} of {len(run.query_ids)} queries" if g else f"— ({missing})")
                )
    for name, sr in run.systems.items():
        answered = sum(1 for o in sr.outcomes.values() if o.status == "ok" and not o.wrong)
        total = len(sr.outcomes)
        out.append(
            f"- {name}: {answered} of {total} query runs answered correctly"
            + ("; load failed" if sr.load_error else "")
        )
    for t in run.throughput:
        if t.error:
            out.append(f"- throughput test, {t.system}: not run ({t.error})")
            continue
        failed = sum(len(r.failed) for r in t.runs)
        wrong = sum(len(r.wrong) for r in t.runs)
        out.append(
            f"- throughput test, {t.system}: {t.streams} streams in **{t.seconds:.1f} s**, "
            f"{failed} queries failed, {wrong} wrong"
        )
    checked = run.agreements + len(run.disagreements)
    out.append(f"- cross-check: {checked} comparisons, **{len(run.disagreements)} disagreements**")
    out.append(
        "- run status: "
        + ("**PASS**" if not failures_found else f"**FAIL** ({len(failures_found)} problems, listed below)")
    )
    return out


def write(run, out_dir, stem, machine_info, cache_note, command, failures_found, charts_by_mode):
    os.makedirs(out_dir, exist_ok=True)
    date = datetime.datetime.fromtimestamp(run.started).strftime("%Y-%m-%d %H:%M")
    lines = [f"# kura benchmark: TPC-H SF {run.sf:g}, {date}", ""]
    lines += [f"Command: `{command}`  ", f"Duration: {run.seconds / 60:.1f} min", ""]
    lines += ["## Summary", ""] + summary_lines(run, failures_found) + [""]

    lines += ["## Machine", ""] + [f"- {k}: {v}" for k, v in machine_info.items()] + [""]

    lines += ["## Systems and settings", ""]
    for name, sr in run.systems.items():
        lines.append(
            f"- **{name}**: {sr.version or 'version unknown'}; timing: {sr.timing_note}; "
            f"peak RSS of: {sr.memory_scope or 'unknown'}"
        )
        for k, v in sr.settings.items():
            lines.append(f"  - {k}: {v}")
    lines += [f"- OS page cache before cold runs: {cache_note}", ""]
    lines += [
        f"Warm: one unmeasured run, then {run.reps} measured runs; cold: {run.reps} runs, each after emptying "
        f"the system's caches (see its settings). Time limit per run: {run.timeout:g} s.",
        "",
    ]

    lines += ["## Loading", ""]
    tables = list(run.expected_counts)
    header = ["system", "total s", "database bytes"] + tables
    rows = []
    for name, sr in run.systems.items():
        if sr.shares_database_of and not sr.load_error:
            rows.append([name, f"{sr.shares_database_of}'s database", "—"] + ["—"] * len(tables))
            continue
        if sr.load is None:
            rows.append([name, "FAILED", "—"] + ["—"] * len(tables))
            continue
        rows.append(
            [name, f"{sr.load.seconds:.2f}", "—" if sr.database_bytes is None else f"{sr.database_bytes:,}"]
            + [f"{sr.load.tables[t]:.2f}" if t in sr.load.tables else "—" for t in tables]
        )
    lines += [table(header, rows), ""]
    lines.append("Rows per table (from the .tbl files, and as each system counts them):")
    lines.append("")
    rows = [[".tbl files"] + [str(run.expected_counts[t]) for t in tables]]
    for name, sr in run.systems.items():
        rows.append(
            [name]
            + [
                (
                    (str(sr.counts[t]) if sr.counts[t] == run.expected_counts[t] else f"**{sr.counts[t]}** ✗")
                    if t in sr.counts
                    else "—"
                )
                for t in tables
            ]
        )
    lines += [table(["source"] + tables, rows), ""]

    lines += ["## Indexes", ""]
    # A system on another's database has that system's indexes: no column of its own.
    indexed = {name: sr for name, sr in run.systems.items() if not sr.shares_database_of}
    index_names = list(dict.fromkeys(i for sr in indexed.values() for i in sr.indexes))
    if index_names:
        rows = []
        reasons = {}  # system -> distinct reasons an index was not built, listed under the table
        for idx in index_names:
            row = [idx]
            for name, sr in indexed.items():
                v = sr.indexes.get(idx)
                if isinstance(v, float):
                    row.append(f"{v:.2f} s")
                elif v:
                    reasons.setdefault(name, {}).setdefault(v.split(":", 1)[0], v)
                    row.append(v.split(":", 1)[0])
                else:
                    row.append("—")
            rows.append(row)
        totals = ["**total built**"]
        for sr in indexed.values():
            built = [v for v in sr.indexes.values() if isinstance(v, float)]
            totals.append(f"{len(built)} in {sum(built):.2f} s")
        rows.append(totals)
        rows.append(
            ["statistics (ANALYZE)"]
            + [f"{sr.analyze_seconds:.2f} s" if sr.analyze_seconds else "—" for sr in indexed.values()]
        )
        lines += [table(["index"] + list(indexed), rows), ""]
        for name, sr in run.systems.items():
            if sr.shares_database_of:
                lines.append(f"- {name}: uses the indexes of {sr.shares_database_of}'s database")
        for name, per_kind in reasons.items():
            for reason in per_kind.values():
                lines.append(f"- {name}: {reason.replace('|', '/')}")
        if reasons:
            lines += ["", "(one reason shown per system and kind; each index's own message is in the .json)", ""]
    else:
        lines += ["No indexes were built (--no-indexes).", ""]

    for mode in run.modes:
        lines += times_section(run, mode, charts_by_mode.get(mode, []))
    for mode in run.modes:
        lines += memory_section(run, mode)

    if run.memory_limit:
        lines += [f"## Spilled under memory_limit {run.memory_limit} (kura, warm)", ""]
        lines.append(
            "Bytes kura's operators wrote to temporary files per query (EXPLAIN ANALYZE of one more run); "
            "DuckDB ran with the same memory_limit."
        )
        lines.append("")
        rows = [[qid, f"{run.spilled[qid]:,}"] for qid in run.query_ids if qid in run.spilled]
        lines += [table(["query", "bytes spilled"], rows), ""]

    if run.traffic:
        lines += traffic_section(run)

    if run.throughput:
        limits = []
        if run.max_memory:
            limits.append(f"--max-memory {run.max_memory} (kura), memory_limit {run.max_memory} (DuckDB)")
        if run.memory_limit:
            limits.append(f"memory_limit {run.memory_limit} per query (kura)")
        note = (
            "Each stream runs the 22 queries in the TPC-H specification's order for it (Appendix A), "
            "one session each, all streams started together; total = first query started to last one "
            "finished. " + ("Limits: " + "; ".join(limits) + "." if limits else "No memory limits.")
        )
        lines += throughput.report_lines(run.throughput, note)

    if run.explains:
        lines += ["## Where kura is furthest behind (warm)", ""]
        lines.append("The queries with the largest ratio of kura's time to the fastest peer's, with kura's plan:")
        lines.append("")
        for qid, ratio, peer, plan in run.explains:
            lines += [f"### {qid}: {ratio:.1f}× {peer}", "", "```", plan, "```", ""]

    lines += ["## Cross-check", ""]
    refs = len(run.references)
    lines.append(
        f"Every answered result is compared, numbers with absolute tolerance 0.01 or relative 1e-9 and text "
        f"after trimming, with the reference answer of its query where one exists ({refs} of "
        f"{len(run.query_ids)} queries: TPC-H answers and the expected results of (A)-(D)), otherwise with every "
        f"other system's result."
    )
    lines.append("")
    if run.disagreements:
        rows = [[d.query, d.mode, d.system, d.other, "; ".join(d.problems)] for d in run.disagreements]
        lines += [table(["query", "mode", "system", "compared with", "difference"], rows), ""]
    else:
        lines += [f"All {run.agreements} comparisons agree.", ""]

    lines += ["## Failures", ""]
    failed_runs = [
        (name, mode, qid, o)
        for name, sr in run.systems.items()
        for (mode, qid), o in sr.outcomes.items()
        if o.status in ("error", "timeout", "not run")
    ]
    load_failures = [(name, sr.load_error) for name, sr in run.systems.items() if sr.load_error]
    if not failed_runs and not load_failures:
        lines += ["None.", ""]
    for name, error in load_failures:
        lines.append(f"- {name}: loading failed: `{error}`")
    if failed_runs:
        rows = [[name, qid, mode, o.status, o.error.replace("|", "\\|")[:300]] for name, mode, qid, o in failed_runs]
        lines += ["", table(["system", "query", "mode", "status", "message"], rows), ""]
    if failures_found:
        lines += ["What makes this run fail:", ""] + [f"- {f}" for f in failures_found] + [""]

    rewritten = {}
    for name, sr in run.systems.items():
        for (mode, qid), o in sr.outcomes.items():
            if o.rewritten:
                rewritten.setdefault(name, {})[qid] = o.rewritten
    lines += ["## Rewritten queries", ""]
    if not rewritten:
        lines += ["Every system ran kura's query texts unchanged.", ""]
    for name, per_query in rewritten.items():
        lines.append(f"{name} ran these queries in its own dialect (otherwise kura's texts unchanged):")
        lines.append("")
        for qid, notes in per_query.items():
            lines.append(f"- {qid}: {', '.join(notes)}")
        lines.append("")

    path = os.path.join(out_dir, stem + ".md")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    write_json(run, os.path.join(out_dir, stem + ".json"), machine_info, failures_found)
    write_csv(run, os.path.join(out_dir, stem + ".csv"))
    write_settings_csv(run, os.path.join(out_dir, stem + "-settings.csv"), machine_info, cache_note)
    return path


# Columns of the per-query CSV, read by other tools (`kura bench paper003`, by name: new
# columns go at the end).
CSV_COLUMNS = [
    "system",
    "mode",
    "query",
    "status",
    "wrong",
    "median_s",
    "runs",
    "times_s",
    "peak_rss_mib",
    "rss_before_mib",
    "peaks_rss_mib",
    "memory_note",
]


def traffic_section(run):
    """kura-cluster: rows and bytes that crossed each kind of exchange, and the shares of the
    parts' busy time (kura's fragments on the shards, DataFusion on the workers, receiving
    and decoding exchanges, the coordinator)."""
    lines = ["## kura-cluster: data moved and busy time (warm, EXPLAIN ANALYZE of one more run)", ""]
    lines.append(
        "Rows and encoded bytes through datafusion-distributed's exchanges (shuffle between workers, "
        "broadcast of a join side, gather into one task — the coordinator's result), and each part's "
        "share of the summed busy time: kura running fragments on the shards, DataFusion operators on "
        "the workers, receiving and decoding exchanges, DataFusion in the coordinator. Wall is the "
        "profiled run's."
    )
    lines.append("")
    parts = ["shard_kura_ms", "worker_datafusion_ms", "exchange_ms", "coordinator_ms"]
    rows = []
    for qid in run.query_ids:
        p = run.traffic.get(qid)
        if p is None:
            continue
        p = dict(p)
        p["exchange_ms"] = sum(p.get(f"{k}_ms", 0.0) for k in ("shuffle", "broadcast", "gather"))
        busy = sum(p[k] for k in parts) or 1.0
        moved = [
            f"{int(p.get(f'{k}_rows', 0)):,} / {p.get(f'{k}_bytes', 0) / 2**20:.2f}"
            for k in ("shuffle", "broadcast", "gather")
        ]
        rows.append(
            [qid, f"{p['wall_ms']:.1f}"] + moved + [f"{100 * p[k] / busy:.0f} %" for k in parts]
        )
    header = ["query", "wall ms", "shuffle rows / MiB", "broadcast rows / MiB", "gather rows / MiB"]
    header += ["kura on shards", "DataFusion on workers", "exchanges", "coordinator"]
    return lines + [table(header, rows), ""]


def mib_text(kib):
    return "" if kib is None else f"{memory.mib(kib):.1f}"


def write_csv(run, path):
    """One row per system, mode and query: status, whether the answer was wrong, the median
    and every measured time (space-separated), in seconds; the median peak RSS, the median
    RSS before the query and every peak, in MiB, or why memory was not measured."""
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for name, sr in run.systems.items():
            for (mode, qid), o in sr.outcomes.items():
                median = "" if o.median is None else f"{o.median:.6f}"
                times = " ".join(f"{t:.6f}" for t in o.times)
                peaks = " ".join(mib_text(k) for k in o.peaks_kib)
                w.writerow(
                    [name, mode, qid, o.status, "yes" if o.wrong else "no", median, len(o.times), times]
                    + [mib_text(o.peak_median_kib), mib_text(o.before_median_kib), peaks, o.memory_error]
                )


def write_settings_csv(run, path, machine_info, cache_note=""):
    """The machine and each system's version, load outcome and settings as (scope, key, value)
    rows, so a reader of the CSV can state what was measured."""
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["scope", "key", "value"])
        for k, v in machine_info.items():
            w.writerow(["machine", k, v])
        w.writerow(["run", "sf", f"{run.sf:g}"])
        w.writerow(["run", "reps", run.reps])
        w.writerow(["run", "OS page cache before cold runs", cache_note])
        for name, sr in run.systems.items():
            w.writerow([name, "version", sr.version])
            w.writerow([name, "load_error", sr.load_error])
            for k, v in sr.settings.items():
                w.writerow([name, k, v])


def write_json(run, path, machine_info, failures_found):
    data = {
        "sf": run.sf,
        "queries": run.query_ids,
        "modes": run.modes,
        "reps": run.reps,
        "suite_rss_kib": run.suite_rss_kib,
        "machine": machine_info,
        "failures": failures_found,
        "systems": {
            name: {
                "version": sr.version,
                "settings": sr.settings,
                "shares_database_of": sr.shares_database_of,
                "load_seconds": sr.load.seconds if sr.load else None,
                "load_tables": sr.load.tables if sr.load else {},
                "database_bytes": sr.database_bytes,
                "load_error": sr.load_error,
                "counts": sr.counts,
                "indexes": sr.indexes,
                "memory_scope": sr.memory_scope,
                "outcomes": {
                    f"{mode}/{qid}": {
                        "status": o.status,
                        "times": o.times,
                        "median": o.median,
                        "wrong": o.wrong,
                        "error": o.error,
                        "rewritten": o.rewritten,
                        "peak_rss_kib": o.peaks_kib,
                        "rss_before_kib": o.before_kib,
                        "peak_rss_median_kib": o.peak_median_kib,
                        "memory_error": o.memory_error,
                    }
                    for (mode, qid), o in sr.outcomes.items()
                },
            }
            for name, sr in run.systems.items()
        },
        "disagreements": [d.__dict__ for d in run.disagreements],
        "throughput": [dataclasses.asdict(t) for t in run.throughput],
        "cluster_profiles": run.traffic,
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
