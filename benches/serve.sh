#!/usr/bin/env bash
# `simdex serve` under load and faults, against the library and `simdex ingest` in the same run
# (benches/serve.rs says what each line measures). Client and server share the machine.
#
#   bash benches/serve.sh                                   # 10M stored fingerprints, 5 s phases, 20 kills
#   SIMDEX_BENCH_N=1000000 SIMDEX_BENCH_SECS=2 bash benches/serve.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p simdex-cli
cargo bench --quiet --bench serve
