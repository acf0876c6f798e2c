"""Charts in the style of paper 003's figures 4 and 5: for each query, every system's
time normalised to kura's (kura = 1), one bar per system, log scale."""

import math
import textwrap

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"kura": "#c0392b", "kura-scan": "#f5b7b1", "duckdb": "#f1c40f", "postgres": "#2e86c1", "sqlite": "#7f8c8d"}


def normalised(run, mode, query_ids, systems, base="kura"):
    """{system: [time / base time or None]} per query, and the ids where base has no time."""
    base_run = run.systems.get(base)
    values = {s: [] for s in systems}
    missing_base = []
    for qid in query_ids:
        base_outcome = base_run.outcomes.get((mode, qid)) if base_run else None
        base_time = base_outcome.median if base_outcome and base_outcome.status == "ok" else None
        if not base_time:
            missing_base.append(qid)
        for s in systems:
            outcome = run.systems[s].outcomes.get((mode, qid))
            t = outcome.median if outcome and outcome.status == "ok" else None
            values[s].append(t / base_time if (t and base_time) else None)
    return values, missing_base


def plot(run, mode, query_ids, title, path, base="kura"):
    """Writes one chart; queries kura did not answer are labelled so instead of drawn."""
    systems = [s for s in run.systems if s == base] + [s for s in run.systems if s != base]
    values, missing_base = normalised(run, mode, query_ids, systems, base)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.55 * len(query_ids) * max(1, len(systems)) / 2 + 2), 4.2))
    width = 0.8 / max(1, len(systems))
    for k, s in enumerate(systems):
        xs = [i + (k - (len(systems) - 1) / 2) * width for i in range(len(query_ids))]
        heights = [v if v is not None else 0 for v in values[s]]
        ax.bar(xs, heights, width, label=s, color=COLORS.get(s, None), edgecolor="black", linewidth=0.4)
        for x, v, qid in zip(xs, values[s], query_ids):
            if v is None and qid not in missing_base:
                outcome = run.systems[s].outcomes.get((mode, qid))
                mark = "n/r" if outcome is None or outcome.status == "not run" else "✗"
                ax.text(x, 1.0, mark, ha="center", va="bottom", fontsize=7, rotation=90)
    for i, qid in enumerate(query_ids):
        if qid in missing_base:
            ax.text(i, 1.0, f"no {base} time", ha="center", va="center", fontsize=7, rotation=90, color="#c0392b")
    ax.axhline(1.0, color="black", linewidth=0.6)
    ax.set_yscale("log")
    present = [v for s in systems for v in values[s] if v]
    if present:
        low, high = min(present + [1.0]), max(present + [1.0])
        ax.set_ylim(10 ** math.floor(math.log10(low) - 0.1), 10 ** math.ceil(math.log10(high) + 0.1))
    else:
        ax.set_ylim(0.1, 10)
    ax.set_xticks(range(len(query_ids)))
    ax.set_xticklabels(query_ids)
    ax.set_ylabel(f"execution time relative to {base} ({base} = 1)")
    # Long titles (few queries make a narrow chart) wrap instead of running off the edge.
    ax.set_title(textwrap.fill(title, width=int(fig.get_figwidth() * 9)))
    ax.legend(fontsize=8, ncol=len(systems))
    ax.grid(axis="y", which="major", linestyle=":", linewidth=0.5)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
