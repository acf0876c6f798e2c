#!/usr/bin/env bash
# Runs every kura test on a fresh machine: installs what the tests need (the
# PostgreSQL client and server, Maven, Valgrind; Python packages go into venvs the tests create), then
# the Rust test suites — unit, property, sqllogictest, TPC-H checks at SF 0.01 and
# 0.1, storage crash and corruption tests, runtime stress tests, cache simulator,
# and the PostgreSQL-wire client tests (psql, psycopg, pgjdbc); then the Python package's
# tests (its wheel installed into a fresh venv); then the benchmark
# suite at SF 0.01 and the differential test against DuckDB.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v psql >/dev/null 2>&1 || need_apt+=(postgresql-client)
command -v mvn >/dev/null 2>&1 || need_apt+=(maven)
# The simulated memory profile's test traces TPC-H Q6 under Valgrind's lackey.
command -v valgrind >/dev/null 2>&1 || need_apt+=(valgrind)
python3 -c "import venv, ensurepip" >/dev/null 2>&1 || need_apt+=(python3-venv)
# Paper 002's pgbench profile runs a PostgreSQL 15 server (and pgbench) under lackey.
ls /usr/lib/postgresql/15/bin/postgres >/dev/null 2>&1 || need_apt+=(postgresql-15)
if [ ${#need_apt[@]} -gt 0 ]; then
    echo "== installing ${need_apt[*]} =="
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}"
fi

export CARGO_TERM_COLOR=never
# A fresh build gains nothing from incremental state, which is gigabytes on disk.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
# The SF 0.1 TPC-H checks run here (they are opt-in for quick local runs).
export KURA_TEST_SF01="${KURA_TEST_SF01:-1}"

mkdir -p target
# Free disk at each stage, so that a run that fills the disk says so.
disk() { echo "== free disk: $(df -h --output=avail . | tail -1 | tr -d ' ') =="; }
disk
echo "== cargo test (workspace) =="
status=0
# The cluster (`kura cluster`, behind a cargo feature) is built and tested here too.
cargo test --workspace --features kura-cli/cluster --no-fail-fast 2>&1 | tee target/test-output.txt || status=1

disk
echo "== Python: build the wheel (maturin), install it into a fresh venv, pytest =="
bash crates/kura-python/test.sh || status=1

disk
echo "== benchmark suite, SF 0.01 (kura, DuckDB, SQLite) =="
target_dir="${CARGO_TARGET_DIR:-$PWD/target}"
case "$target_dir" in /*) ;; *) target_dir="$PWD/$target_dir" ;; esac
KURA_BIN="$target_dir/debug/kura" bash bench/ci.sh || status=1

disk
echo "== differential test against DuckDB, SF 0.01 (300 seeded queries, 9 settings each) =="
python3 -m unittest discover -s tests/difftest || status=1
tests/difftest/run --kura "$target_dir/debug/kura" --queries "${KURA_DIFFTEST_QUERIES:-300}" \
    --seed "${KURA_DIFFTEST_SEED:-1}" --work "$target_dir/difftest-ci" || status=1

disk
exit $status
