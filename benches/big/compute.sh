#!/bin/bash
# How much of a 1B query is compute and how much is waiting on memory (issue 29), for a device
# session: the 1B index built as targets.sh builds it, then one pinned thread times the same
# number of queries drawn from 20, 200 and 2000 distinct ones (repeated: their lines stay in
# the caches, and for the fewest the CPU learns their branches) against 100k distinct ones,
# through the A/B harness (the same build as A and B: one open on all cores, 10k-query rounds)
# and through `simdex query --populate --timing` (library time). Binaries beside the script as
# for targets.sh (simdex-new, ab-harness, both stripped); python3 with numpy makes the data.
#   OUT=/tmp/out bash benches/big/compute.sh                      # about 4 minutes at 1B
#   N1=3000000 Q=200000 MEM=1G bash benches/big/compute.sh        # a small trial
set -u
D=$(cd "$(dirname "$0")" && pwd)
NEW=$D/simdex-new
N1=${N1:-1000000000}
. "$D/common.sh"
{
log "facts"; nproc; grep -m1 'model name' /proc/cpuinfo; lscpu | grep -E '^L[23]'; free -g | head -2
gen_build1
"$NEW" stats "$W/i1" | sed -n 2,8p
python3 - "$W" <<'PY'
import sys
import numpy as np
w = sys.argv[1]
q = np.fromfile(f"{w}/q100k.u64", dtype=np.uint64)
for n in (20, 200, 2000):
    np.tile(q[:n], 100_000 // n).tofile(f"{w}/rep{n}.u64")
PY
for turn in 1 2; do
  for f in q100k rep20 rep200 rep2000; do log "turn $turn, $f"; ab "$W/i1,$W/i1" many 10 "$W/$f.u64"; done
done
for f in q100k rep20 q100k rep2000 q100k; do
  PIN="taskset -c $PIN_CORE" q "$NEW" "$W/i1" "$W/$f.u64" 1 "q1-$f" --populate
done
rm -rf "$W/i1"
log "done"
} 2>&1 | tee "$OUT/log"
