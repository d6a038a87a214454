#!/usr/bin/env bash
# A 1B-like index on a small machine (opt-in, not in CI): probes that decode what a probe of
# the 1B index decodes, from 4.5 GiB of tables instead of 45.
#
#   bash benches/big/proxy.sh DIR [BASE]
#
# At 1B keys, design 10's probes read runs of ~15 and ~30 keys (26- and 25-bit prefixes) in
# format 4, 21.6 keys and 1.1 blocks a probe. 60M uniform keys under design m6c2r0 (k = 4: 15
# tables of 21.3-bit prefixes) give runs of ~25 keys in format 4, with the same 1 KiB blocks,
# directory and key distribution: 25.5 keys and 1.13 blocks a probe. (Fixing bits of 60M keys
# under design 10 instead gives the run lengths but not the distribution: its lumps send the
# directory to binary searches the 1B index never makes.) The queries are half stored keys
# with 0-4 bits flipped, half random.
#
# Writes DIR/fps.u64, DIR/q100k.u64, DIR/q20k.u64 and the index DIR/i (kept between runs),
# then prints instructions a query (benches/instructions, valgrind) of the working tree's
# build, of BASE's too where given, and the A/B harness (benches/ab) of BASE against the
# working tree. Needs python3 with numpy, and valgrind for the counts.
set -euo pipefail
dir=${1:?work directory}
base=${2:-}
root="$(cd "$(dirname "$0")/../.." && pwd)"
mkdir -p "$dir"
(cd "$root" && cargo build --release --quiet -p simdex-cli)
exe="$root/target/release/simdex"
if [ ! -f "$dir/q20k.u64" ]; then
    python3 - "$dir" <<'PY'
import sys
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(12)
n, m = 60_000_000, 100_000
fps = rng.integers(0, 2**64, size=n, dtype=np.uint64)
fps.tofile(f"{d}/fps.u64")
q = np.empty(m, dtype=np.uint64)
h = m // 2
q[:h] = fps[rng.integers(0, n, size=h)]
for i in range(h):
    for _ in range(rng.integers(0, 5)):
        q[i] ^= np.uint64(1) << np.uint64(rng.integers(0, 64))
q[h:] = rng.integers(0, 2**64, size=m - h, dtype=np.uint64)
q = q[rng.permutation(m)]
q.tofile(f"{d}/q100k.u64")
q[:20000].tofile(f"{d}/q20k.u64")
PY
fi
if [ ! -d "$dir/i" ]; then
    "$exe" build --input "$dir/fps.u64" --format u64 --out "$dir/i" --k 4 --design m6c2r0 \
        --block-size 1024 --mem 8G --quiet
fi
"$exe" stats "$dir/i"
echo
RAYON_NUM_THREADS=1 "$exe" query "$dir/i" --input "$dir/q100k.u64" --format u64 --populate \
    --timing > /dev/null
if command -v valgrind > /dev/null; then
    echo "working tree: $(bash "$root/benches/instructions/run.sh" "$dir/i" "$dir/q20k.u64" --populate "$exe")"
    if [ -n "$base" ]; then
        work=$(mktemp -d)
        trap 'rm -rf "$work"' EXIT
        git -C "$root" worktree add -q --detach "$work/tree" "$base"
        (cd "$work/tree" && CARGO_TARGET_DIR="$work/target" cargo build --release --quiet -p simdex-cli)
        echo "$base: $(bash "$root/benches/instructions/run.sh" "$dir/i" "$dir/q20k.u64" --populate "$work/target/release/simdex")"
        git -C "$root" worktree remove --force "$work/tree"
    fi
fi
if [ -n "$base" ]; then
    bash "$root/benches/ab/run.sh" "$base" "$dir/i" "$dir/q100k.u64" 10000 30 many
fi
