#!/bin/bash
# formats.sh's comparison again with the two indexes' storage swapped: format 3 on the RAM
# disk, format 4 on the disk (page cache), so that where each index lives is not what the
# ratios measure. One pinned thread in turns (A/B harness), then `simdex batch` with the
# library's own time, then 16 threads. Binaries beside this script, as for formats.sh.
#   OUT=/tmp/out bash benches/big/formats_swap.sh                   # about 6 minutes
set -u
D=$(cd "$(dirname "$0")" && pwd)
NEW=$D/simdex-new
N1=${N1:-1000000000}
. "$D/common.sh"
S=/dev/shm/simdex-big; mkdir -p "$S"
{
log "facts"; nproc; grep -m1 'model name' /proc/cpuinfo; free -g | head -2; df -h "$W" /dev/shm | cat
log "generate $N1 keys, $Q queries"; rt gen1 python3 "$D/gen.py" "$N1" "$Q" "$S"
mv "$S/q.u64" "$S/q100k.u64" "$W/"
log "build format 3 to the RAM disk"
rt build3 "$NEW" build --input "$S/fps.u64" --format u64 --out "$S/i3" --k 3 --mem "$MEM" --segment-keys 20 --quiet
log "build auto (format 4) to the disk"
rt build4 "$NEW" build --input "$S/fps.u64" --format u64 --out "$W/i4" --k 3 --mem "$MEM" --quiet
rm -f "$S/fps.u64"; "$NEW" stats "$W/i4" | sed -n 3,8p
ab "$S/i3,$W/i4" many 20
ab "$S/i3,$W/i4" near 10
bt "$NEW" "$S/i3" batch-f3-a; bt "$NEW" "$W/i4" batch-f4-a; bt "$NEW" "$S/i3" batch-f3-b; bt "$NEW" "$W/i4" batch-f4-b
q "$NEW" "$S/i3" "$W/q.u64" "$T" q16-f3 --populate
q "$NEW" "$W/i4" "$W/q.u64" "$T" q16-f4 --populate
rm -rf "$S" "$W/i4"
log "done"
} 2>&1 | tee "$OUT/log"
