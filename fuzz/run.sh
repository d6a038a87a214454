#!/usr/bin/env bash
# Run every fuzz target for SECONDS each (default 60), seeding corpora from format-spec/vectors.
#   cargo install cargo-fuzz && bash fuzz/run.sh 300
# Uses nightly (rustup toolchain install nightly) for the sanitizers; prints execs per target.
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-60}
mkdir -p corpus/open_table corpus/manifest corpus/build_query corpus/decode_block corpus/huffman_twin \
    corpus/wal_parse corpus/id_map corpus/store_ops corpus/lanes_twin corpus/doc_map corpus/recipe \
    corpus/documents
cp ../format-spec/vectors/*.sxt corpus/open_table/
cp ../format-spec/vectors/v1-index/*.sxt corpus/open_table/
cp ../format-spec/vectors/v1-index/MANIFEST corpus/manifest/
cp ../format-spec/vectors/v1-store.wal corpus/wal_parse/
# These targets read a flag byte first (1: reseal the crcs).
for seed in id_map:v1-store.ids doc_map:v2-store.docs recipe:v2-store.recipe; do
    { printf '\001'; cat "../format-spec/vectors/${seed#*:}"; } > "corpus/${seed%%:*}/${seed#*:}"
done
targets=${TARGETS:-open_table decode_block huffman_twin manifest build_query wal_parse id_map store_ops lanes_twin \
    doc_map recipe documents}
for t in $targets; do
    echo "== $t ($secs s)"
    cargo +nightly fuzz run "$t" -- -max_total_time="$secs" -print_final_stats=1 2>&1 \
        | grep -E "stat::number_of_executed_units|Done|ERROR|panicked|SUMMARY" || true
done
