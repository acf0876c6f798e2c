#!/usr/bin/env bash
# Runs every kura test on a fresh machine: installs what the tests need, then the
# Rust test suites (unit, property, sqllogictest, TPC-H checks, storage crash and
# corruption tests) and the client tests.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TERM_COLOR=never
# The SF 0.1 TPC-H checks run in CI (they are opt-in for quick local runs).
export KURA_TEST_SF01="${KURA_TEST_SF01:-1}"

mkdir -p target
echo "== cargo test (workspace) =="
cargo test --workspace --no-fail-fast 2>&1 | tee target/test-output.txt
