"""Where the suite finds the repository's query texts, schema, indexes and expected answers."""

import os

BENCH_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO_DIR = os.path.dirname(BENCH_DIR)

# kura's own texts are the single source of truth: every system runs the same SQL.
QUERY_DIR = os.path.join(REPO_DIR, "crates", "kura", "src", "tpch", "queries")
SCHEMA_FILE = os.path.join(REPO_DIR, "crates", "kura", "src", "tpch", "schema.sql")
INDEX_FILE = os.path.join(BENCH_DIR, "indexes.sql")
# Covering indexes (INCLUDE) for paper 003's selective queries, added by --covering.
COVERING_INDEX_FILE = os.path.join(REPO_DIR, "crates", "kura", "src", "tpch", "covering.sql")
SELECTIVE_ANSWERS = os.path.join(REPO_DIR, "tests", "data", "selective")


def sf_name(sf):
    """The directory name of a scale factor, as the answer sets spell it: 0.01 -> sf0.01, 1 -> sf1."""
    text = f"{sf:g}"
    return f"sf{text}"


def tpch_answers_dir(sf):
    """The reference answers of the 22 queries at this scale factor, or None.

    `$KURA_TPCH_ANSWERS` names the answers root; otherwise `shared/tpch/answers` is
    looked for beside the repository and above it (the repository is checked out
    with `shared/` beside it).
    """
    roots = []
    if os.environ.get("KURA_TPCH_ANSWERS"):
        roots.append(os.environ["KURA_TPCH_ANSWERS"])
    here = REPO_DIR
    while True:
        roots.append(os.path.join(here, "shared", "tpch", "answers"))
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    for root in roots:
        for candidate in (os.path.join(root, sf_name(sf)), root):
            if os.path.isfile(os.path.join(candidate, "q01.csv")):
                return candidate
    return None


def selective_answers_dir(sf):
    candidate = os.path.join(SELECTIVE_ANSWERS, sf_name(sf))
    return candidate if os.path.isdir(candidate) else None
