#!/usr/bin/env bash
# simdex beside faiss IndexBinaryMultiHash on the same data, in one run (opt-in, not in CI).
#
#   bash benches/compare/run.sh [N] [QUERIES] [compare.py options]   # default 10000000 100000
#
# Builds the release CLI, creates a virtual environment (target/compare-venv) with faiss-cpu and
# numpy, and runs compare.py, which prints the table and the ratios. Results: BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release --quiet -p simdex-cli
venv=target/compare-venv
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --upgrade pip
    "$venv/bin/pip" install --quiet numpy faiss-cpu
fi
exec "$venv/bin/python" benches/compare/compare.py --simdex target/release/simdex \
    --n "${1:-10000000}" --queries "${2:-100000}" --dir target/compare "${@:3}"
