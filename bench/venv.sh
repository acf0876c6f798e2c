#!/usr/bin/env bash
# The benchmark suite's Python venv, made ready once: `bench/venv.sh` creates it (bench/.venv,
# or $KURA_BENCH_VENV) and installs bench/requirements.txt, and prints its path last.
# bench/run and tests/difftest/run call it. A half-made venv (python3 -m venv or pip failed,
# most often a full disk) is removed so that the next run starts over instead of finding a
# venv without pip; the failure says how much disk was free.
set -euo pipefail
BENCH="$(cd "$(dirname "$0")" && pwd)"
VENV="${KURA_BENCH_VENV:-$BENCH/.venv}"

broken() {
    echo "bench/venv.sh: $1; free disk where the venv goes:" >&2
    df -h "$(dirname "$VENV")" >&2 || true
    rm -rf "$VENV"
    exit 1
}

if [[ ! -x "$VENV/bin/pip" ]]; then
    rm -rf "$VENV"
    echo "== creating $VENV" >&2
    python3 -m venv "$VENV" >&2 || broken "python3 -m venv $VENV failed"
fi
if ! cmp -s "$BENCH/requirements.txt" "$VENV/.kura-bench-requirements" 2>/dev/null; then
    echo "== installing $(grep -v '^#' "$BENCH/requirements.txt" | tr '\n' ' ')" >&2
    "$VENV/bin/pip" install --quiet -r "$BENCH/requirements.txt" >&2 ||
        broken "pip could not install bench/requirements.txt into $VENV"
    cp "$BENCH/requirements.txt" "$VENV/.kura-bench-requirements"
fi
echo "$VENV"
