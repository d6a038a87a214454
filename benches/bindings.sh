#!/usr/bin/env bash
# The cost of a call from Go and Java against the same call in Rust: one index of N random
# fingerprints (k = 3), Q queries (stored keys with one bit flipped), one thread
# (RAYON_NUM_THREADS=1). Batches: near_many in batches of 1,000, per key; single: near, per
# call. The three run in turns REPS times (default 3) and each keeps its best: this machine's
# speed drifts between runs more than the differences measured. Prints each language's numbers
# and the ratios to Rust.
#
#   bash benches/bindings.sh                 # N=10000000 Q=100000, scratch in target/bench-bindings
#   N=1000000 Q=20000 bash benches/bindings.sh
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-10000000}
Q=${Q:-100000}
dir="$(realpath -m "${DIR:-target/bench-bindings}")/n$N"
prefix="$PWD/target/prefix"
cargo build --release --quiet -p simdex-cli
make -C bindings/c install PREFIX="$prefix" >/dev/null
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig" LD_LIBRARY_PATH="$prefix/lib" RAYON_NUM_THREADS=1
mkdir -p "$dir"
if [ ! -d "$dir/index" ]; then
    target/release/simdex gen --n "$N" --planted 0 --format u64 --out "$dir/keys.u64"
    target/release/simdex build --input "$dir/keys.u64" --format u64 --out "$dir/index" --k 3 --quiet
fi
python3 - "$dir/keys.u64" "$dir/queries.u64" "$Q" <<'PY'
import struct, sys
keys, out, q = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = open(keys, "rb").read(8 * q)
qs = [k ^ (1 << (i % 64)) for i, (k,) in enumerate(struct.iter_unpack("<Q", data))]
open(out, "wb").write(struct.pack(f"<{len(qs)}Q", *qs))
PY
for _ in $(seq "${REPS:-3}"); do
    cargo bench --quiet -p simdex-c --bench calls -- "$dir/index" "$dir/queries.u64"
    (cd bindings/go && SIMDEX_BENCH_INDEX="$dir/index" \
        SIMDEX_BENCH_QUERIES="$dir/queries.u64" \
        go test -count=1 -run TestCallBenchmark -v . | grep '^go')
    make --no-print-directory -s -C bindings/java bench LIBDIR="$prefix/lib" \
        ARGS="$dir/index $dir/queries.u64" | grep '^java'
done | tee "$dir/results.tsv"
awk -F'\t' '!(($1, $2) in best) || $3 < best[$1, $2] { best[$1, $2] = $3 }
    END {
        for (k in best) { split(k, p, SUBSEP); if (p[1] == "rust") rust[p[2]] = best[k] }
        for (k in best) {
            split(k, p, SUBSEP)
            printf "%s\t%s\t%d ns\t%.2fx Rust (%+d ns)\n", p[1], p[2], best[k],
                best[k] / rust[p[2]], best[k] - rust[p[2]]
        }
    }' "$dir/results.tsv" | sort
