#!/bin/bash
# Where a 1B query's time goes, for a later device session (issue 29): the automatic 1B index
# mapped and populated (A) against the same index read into memory in huge pages (B,
# `AB_B_IN_MEMORY`), one pinned thread in turns; then the 1M and 10M library rows on the same
# machine (one pinned thread, populated), which the 2-core VM cannot time steadily. Binaries
# beside this script, as for formats.sh (simdex-new, ab-harness). Where a `simdex-old` is
# there too (a binary from before a reader change, e.g. part 11's directory), the two query
# the 1B index in turns (whole process, one pinned thread, populated). Results go to $OUT/log.
#   OUT=/tmp/out bash benches/big/memory.sh                         # about 5 minutes
#   N1=2000000 Q=200000 MEM=1G bash benches/big/memory.sh           # a small trial
#   DROP=1 ...: drop the page cache before the 1B A/B (see there)
set -u
D=$(cd "$(dirname "$0")" && pwd)
NEW=$D/simdex-new
N1=${N1:-1000000000}
. "$D/common.sh"
# small N: the 1M/10M rows, built from gen.py's data of N keys
small() { local n=$1
  log "$n keys"; rt "gen$n" python3 "$D/gen.py" "$n" 200000 "$W/s$n"
  rt "build$n" "$NEW" build --input "$W/s$n/fps.u64" --format u64 --out "$W/s$n/i" --k 3 --mem "$MEM" --quiet
  "$NEW" stats "$W/s$n/i" | sed -n 3,5p
  ab "$W/s$n/i,$W/s$n/i" many 20 "$W/s$n/q.u64"
  for r in 1 2; do PIN="taskset -c $PIN_CORE" q "$NEW" "$W/s$n/i" "$W/s$n/q.u64" 1 "q1-$n-$r" --populate; done
  rm -rf "$W/s$n"; }
{
log "facts"; nproc; grep -m1 'model name' /proc/cpuinfo; free -g | head -2; df -h "$W" | tail -1
cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag
mkdir -p "$W/s1000000" "$W/s10000000"
small 1000000
small 10000000
gen_build1
"$NEW" stats "$W/i1" | sed -n 3,8p
# A file just written sits in the page cache in small folios, which a map cannot enter in
# 2 MiB pages; read back after a drop (kernel 6.18, ext4), a populated map of it is almost all
# in 2 MiB pages (FilePmdMapped, printed by the harness). DROP=1: the fairer comparison with
# the in-memory reader's huge pages, at the cost of reading the index back from disk.
if [ "${DROP:-0}" = 1 ]; then sync; echo 3 > /proc/sys/vm/drop_caches && log "page cache dropped"; fi
AB_B_IN_MEMORY=1 ab "$W/i1,$W/i1" many 20
AB_B_IN_MEMORY=1 ab "$W/i1,$W/i1" near 20
ab "$W/i1,$W/i1" many 20
if [ -x "$D/simdex-old" ]; then
  for r in 1 2 3; do for b in old new; do
    PIN="taskset -c $PIN_CORE" q "$D/simdex-$b" "$W/i1" "$W/q.u64" 1 "$b-$r" --populate
  done; done
fi
rm -rf "$W/i1"
log "done"
} 2>&1 | tee "$OUT/log"
