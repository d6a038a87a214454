#!/bin/bash
# Issue 29's rows on a 16-core machine in one call that must end within BUDGET seconds (a device
# lease is short): the 1B index built and queried first (one pinned thread through the A/B
# harness and through `simdex query`, 16 threads, the batch 1M x 1B, reader memory), then, while
# time is left, the 1B index read into memory (huge pages) against its populated map, and the
# 1M, 10M and 100M rows on the same machine. Each optional step is skipped, and says so, when
# the time it is expected to take is not left. Binaries beside the script as for memory.sh
# (simdex-new, ab-harness, both stripped); python3 with numpy makes the data (gen.py).
#   OUT=/tmp/out BUDGET=520 bash benches/big/targets.sh                 # about 8 minutes
#   N1=3000000 Q=200000 MEM=1G BUDGET=300 bash benches/big/targets.sh   # a small trial
# R1=4: four pinned one-thread `simdex query` runs at 1B instead of two; ROUNDS=40: harness
# rounds; INMEM=0 skips the in-memory A/B (part 17 found it gains nothing).
set -u
D=$(cd "$(dirname "$0")" && pwd)
NEW=$D/simdex-new
N1=${N1:-1000000000}; BUDGET=${BUDGET:-520}; R1=${R1:-2}; ROUNDS=${ROUNDS:-20}; INMEM=${INMEM:-1}
. "$D/common.sh"
# want SECS WHAT: true where SECS are left before the budget runs out
want() { if [ $((BUDGET - SECONDS)) -ge "$1" ]; then return 0; fi
  log "skipped: $2 (needs ~$1 s, $((BUDGET - SECONDS)) s left)"; return 1; }
# small N SECS: the rows of N keys (build, one pinned thread by harness and CLI, 16 threads)
small() { local n=$1; want "$2" "the $n rows" || return 0
  log "$n keys"; mkdir -p "$W/s$n"; rt "gen$n" python3 "$D/gen.py" "$n" 200000 "$W/s$n"
  rt "build$n" "$NEW" build --input "$W/s$n/fps.u64" --format u64 --out "$W/s$n/i" --k 3 --mem "$MEM" --quiet
  rm -f "$W/s$n/fps.u64"; "$NEW" stats "$W/s$n/i" | sed -n 3,8p
  ab "$W/s$n/i,$W/s$n/i" many 20 "$W/s$n/q.u64"
  for r in 1 2 3; do PIN="taskset -c $PIN_CORE" q "$NEW" "$W/s$n/i" "$W/s$n/q.u64" 1 "q1-$n-$r" --populate; done
  q "$NEW" "$W/s$n/i" "$W/s$n/q.u64" "$T" "q16-$n" --populate
  rm -rf "$W/s$n"; }
{
log "facts (budget $BUDGET s)"; nproc; grep -m1 'model name' /proc/cpuinfo; free -g | head -2
df -h "$W" | tail -1; uname -r; cat /sys/kernel/mm/transparent_hugepage/enabled
"$NEW" --version

gen_build1
du -sb "$W/i1"; "$NEW" stats "$W/i1" | sed -n 2,8p
# One pinned thread: the harness (one open, 10k-query rounds, near_many) as part 11 measured,
# then the CLI's library time on 100k queries.
ab "$W/i1,$W/i1" many "$ROUNDS"
for r in $(seq "$R1"); do PIN="taskset -c $PIN_CORE" q "$NEW" "$W/i1" "$W/q100k.u64" 1 "q1-pop-$r" --populate; done
q "$NEW" "$W/i1" "$W/q.u64" "$T" q16-pop --populate
want 60 "the harness on q100k.u64" && ab "$W/i1,$W/i1" many "$ROUNDS" "$W/q100k.u64"
bt "$NEW" "$W/i1" batch1a --quiet
bt "$NEW" "$W/i1" batch1b --quiet
want 60 "near, one call a query" && ab "$W/i1,$W/i1" near 10
# The in-memory reader (anonymous 2 MiB pages) against the populated map, in turns.
[ "$INMEM" = 1 ] && want 120 "the 1B in-memory A/B" && AB_B_IN_MEMORY=1 ab "$W/i1,$W/i1" many 20
rm -rf "$W/i1" "$W/q.u64" "$W/q100k.u64"
small 1000000 40
small 10000000 60
small 100000000 110
log "done"
} 2>&1 | tee "$OUT/log"
