#!/usr/bin/env bash
# Builds kura's Python wheel with maturin, installs it into a fresh venv with what the tests
# use (pytest, pyarrow, pandas, polars, and DuckDB for file round trips) and runs the Python
# test suite. KURA_PY_PROFILE=release builds
# an optimised wheel (the default, dev, shares the workspace's test build).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
case "$target_dir" in /*) ;; *) target_dir="$root/$target_dir" ;; esac
venv="$target_dir/python-venv"
wheels="$target_dir/wheels"

# A fresh venv each run: the test is of the wheel as a user installs it.
rm -rf "$venv" "$wheels"
python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check "maturin>=1.9,<2" pytest pyarrow pandas polars duckdb
(cd "$here" && "$venv/bin/maturin" build --profile "${KURA_PY_PROFILE:-dev}" --strip -o "$wheels")
"$venv/bin/pip" install -q --disable-pip-version-check "$wheels"/kura-*.whl
# Run from a directory without the sources, so that `import kura` is the installed wheel.
cd "$target_dir"
"$venv/bin/python" -m pytest -q -p no:cacheprovider "$here/tests"
