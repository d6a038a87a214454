#!/usr/bin/env bash
# Instructions and branch mispredictions per query, counted by valgrind (opt-in, not in CI).
#
#   bash benches/instructions/run.sh IDX QUERIES.u64 [--in-memory | --populate] [BINARY]
#
# Runs `simdex query` (the release CLI, or BINARY) under callgrind twice, on every query of
# QUERIES.u64 (u64 format) and on its first query alone, and prints the difference per
# query: the cost of one more query, with the open, the crc checks of blocks read for the
# first time and everything else fixed taken out. Counts are exact and repeat from run to
# run, unlike times on a shared 2-core VM (~2x apart between runs), so a change to the query
# path can be judged by them where its time difference is inside the noise; a time
# comparison (interleaved runs) still has the last word. Valgrind reports no AVX-512, so the
# AVX2 lanes run. Mispredictions are callgrind's model of a simple predictor, not the CPU's.
set -euo pipefail
idx=${1:?index directory}
queries=${2:?query file (u64)}
mode=${3:-}
exe=${4:-}
command -v valgrind > /dev/null || { echo "valgrind is not installed" >&2; exit 1; }
if [ -z "$exe" ]; then
    (cd "$(dirname "$0")/../.." && cargo build --release --quiet -p simdex-cli)
    exe="$(cd "$(dirname "$0")/../.." && pwd)/target/release/simdex"
fi
n=$(( $(stat -c %s "$queries") / 8 ))
[ "$n" -ge 2 ] || { echo "need at least 2 queries" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
head -c 8 "$queries" > "$work/one.u64"

# Instructions and mispredictions of a run, less those of its crc checks.
count() {
    RAYON_NUM_THREADS=1 valgrind --tool=callgrind --branch-sim=yes \
        --callgrind-out-file="$work/cg.out" "$exe" query "$idx" --input "$1" --format u64 \
        $mode > "$work/out.txt" 2> /dev/null
    callgrind_annotate --inclusive=yes --show=Ir,Bcm "$work/cg.out" 2> /dev/null \
        | sed -E 's/\( *[0-9.]+%\)//g' | awk '
        /PROGRAM TOTALS/ { gsub(",", "", $1); gsub(",", "", $2); ir = $1; bm = $2 }
        /simdex::(table::block|checksum)::check_crc / { gsub(",", "", $1); gsub(",", "", $2); if ($1 + 0 > c + 0) { c = $1; cm = $2 } }
        END { print ir - c, bm - cm }'
}

read -r all_ir all_bm < <(count "$queries")
matches=$(wc -l < "$work/out.txt")
read -r one_ir one_bm < <(count "$work/one.u64")
awk -v n="$n" -v a="$all_ir" -v b="$one_ir" -v am="$all_bm" -v bm="$one_bm" -v m="$matches" \
    'BEGIN { printf "%d queries, %d matches: %.0f instructions and %.1f mispredicted branches per query\n",
             n, m, (a - b) / (n - 1), (am - bm) / (n - 1) }'
