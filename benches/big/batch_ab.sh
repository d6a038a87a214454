#!/bin/bash
# The 1B index again: `simdex batch` of 1M queries against it, before (simdex-new) and after
# (simdex-bs) a change, interleaved, with the library's own time; then one-thread query runs
# pinned to a core, and 16 threads. Binaries beside this script, as for run.sh.
#   OUT=/tmp/out bash benches/big/batch_ab.sh                  # about 4 minutes
set -u
D=$(cd "$(dirname "$0")" && pwd)
NEW=$D/simdex-bs; OLD=$D/simdex-new
N1=${N1:-1000000000}
. "$D/common.sh"
{
log "facts"; nproc; grep -m1 'model name' /proc/cpuinfo; free -g | head -2; df -h "$W" | tail -1
if [ ! -d "$W/i1" ]; then
  gen_build1
fi
"$NEW" stats "$W/i1" | sed -n 2,7p
for r in 1 2 3; do bt "$OLD" "$W/i1" "batch-before-$r"; bt "$NEW" "$W/i1" "batch-after-$r"; done
for r in 1 2 3; do PIN="taskset -c $((T > 3 ? T - 3 : 1))" q "$NEW" "$W/i1" "$W/q.u64" 1 "q1-pop-pinned-$r" --populate; done
q "$NEW" "$W/i1" "$W/q.u64" "$T" q16-pop --populate
log "done"
} 2>&1 | tee "$OUT/log"
