#!/bin/bash
# The 1B rows of format 4 (issue 29, part 11), on a 16-core machine with 128 GiB of RAM and 64
# GiB of disk: the automatic layout at 1B (design 10, every table aligned: format 4) against
# part 7's layout of the same keys (`--segment-keys 20`: format 3), both built by one binary
# and, where the RAM disk holds one of them, queried in one process in turns (the A/B
# harness, benches/ab). Then 100M keys if time is left. Put the stripped binaries simdex-new
# and ab-harness (benches/ab/run.sh builds it) beside this script; python3 with numpy makes
# the data (gen.py). Results go to $OUT/log.
#   OUT=/tmp/out bash benches/big/formats.sh                        # about 7 minutes
#   N1=2000000 N2=1000000 Q=200000 MEM=1G bash benches/big/formats.sh   # a small trial
set -u
D=$(cd "$(dirname "$0")" && pwd)
NEW=$D/simdex-new
N1=${N1:-1000000000}; N2=${N2:-100000000}
# A later phase starts only before these many seconds (the device call's limit is 600; the
# format-3 build and its runs take ~200 s at 1B, the 100M rows ~80 s).
P2=${P2:-330}; P3=${P3:-450}
. "$D/common.sh"
{
log "facts"; nproc; grep -m1 'model name' /proc/cpuinfo; grep -o -m1 'avx512[a-z]*' /proc/cpuinfo | head -3 | tr '\n' ' '; echo
free -g | head -2; df -h "$W" /dev/shm | cat; uname -r; cat /sys/kernel/mm/transparent_hugepage/enabled

# The keys and the format-4 index go to the RAM disk when they fit there (the disk cannot hold
# both indexes).
need=$((N1 * 60 + (1 << 30)))
S=/dev/shm/simdex-big
avail() { df -B1 --output=avail /dev/shm | tail -1; }
if [ "$(avail)" -lt "$need" ]; then
  mount -o remount,size=$(( (need >> 30) + 4 ))G /dev/shm 2>&1 || true
fi
if [ "$(avail)" -ge "$need" ]; then mkdir -p "$S"; BOTH=1; else S=$W; BOTH=0; fi
echo "format-4 index in $S (both at once: $BOTH)"; df -h /dev/shm | tail -1

log "generate $N1 keys, $Q queries"; rt gen1 python3 "$D/gen.py" "$N1" "$Q" "$S"
[ "$S" = "$W" ] || mv "$S/q.u64" "$S/q100k.u64" "$W/"
log "build $N1 auto"; rt build4 "$NEW" build --input "$S/fps.u64" --format u64 --out "$S/i4" --k 3 --mem "$MEM" --quiet
du -sb "$S/i4"; "$NEW" stats "$S/i4"
ab "$S/i4,$S/i4" many 10
q "$NEW" "$S/i4" "$W/q.u64" "$T" q16-f4-a --populate
bt "$NEW" "$S/i4" batch-f4-a --quiet

if [ $BOTH = 0 ]; then rm -rf "$S/i4"; fi
if [ $SECONDS -lt "$P2" ]; then
  log "build $N1 format 3 (--segment-keys 20)"
  rt build3 "$NEW" build --input "$S/fps.u64" --format u64 --out "$W/i3" --k 3 --mem "$MEM" --segment-keys 20 --quiet
  rm -f "$S/fps.u64"; du -sb "$W/i3"; "$NEW" stats "$W/i3" | sed -n 2,12p
  if [ $BOTH = 1 ]; then
    ab "$W/i3,$S/i4" many 20
    ab "$W/i3,$S/i4" near 10
    q "$NEW" "$W/i3" "$W/q.u64" "$T" q16-f3-a --populate
    q "$NEW" "$S/i4" "$W/q.u64" "$T" q16-f4-b --populate
    q "$NEW" "$W/i3" "$W/q.u64" "$T" q16-f3-b --populate
    bt "$NEW" "$W/i3" batch-f3-a --quiet; bt "$NEW" "$S/i4" batch-f4-b --quiet; bt "$NEW" "$W/i3" batch-f3-b --quiet
  else
    ab "$W/i3,$W/i3" many 10
    q "$NEW" "$W/i3" "$W/q.u64" "$T" q16-f3-a --populate
    bt "$NEW" "$W/i3" batch-f3-a --quiet
  fi
fi
rm -rf "$W/i3" "$S/fps.u64"
if [ -d "$S/i4" ] && [ $SECONDS -lt "$P3" ]; then
  log "verify"; RAYON_NUM_THREADS=$T rt verify4 "$NEW" verify "$S/i4"
fi
rm -rf "$S/i4"

if [ $SECONDS -lt "$P3" ]; then
  log "100M: generate, build"; rt gen2 python3 "$D/gen.py" "$N2" "$Q" "$W"
  rt build2 "$NEW" build --input "$W/fps.u64" --format u64 --out "$W/n2" --k 3 --mem "$MEM" --quiet
  rm -f "$W/fps.u64"; du -sb "$W/n2"; "$NEW" stats "$W/n2" | sed -n 2,12p
  ab "$W/n2,$W/n2" many 10
  q "$NEW" "$W/n2" "$W/q.u64" "$T" q16-100m --populate
  bt "$NEW" "$W/n2" batch-100m --quiet
fi
log "done"
} 2>&1 | tee "$OUT/log"
