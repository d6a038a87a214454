#!/bin/bash
# The 1B and 100M rows of docs/log/benchmarks.md (issue 29, part 7), on a 16-core machine with 128 GiB
# of RAM and 64 GiB of disk: the 1B index built and queried with one binary (simdex-new), then
# 100M keys built and queried by two binaries, interleaved (simdex-old: the binary before a
# change, on its own default index of the same keys). Put both stripped release binaries
# beside this script; python3 with numpy makes the data (gen.py). Results go to $OUT/log.
#   OUT=/tmp/out bash benches/big/run.sh                       # the rows (about 5 minutes)
#   N1=2000000 N2=1000000 Q=200000 MEM=1G bash benches/big/run.sh   # a small trial
set -u
D=$(cd "$(dirname "$0")" && pwd)
NEW=$D/simdex-new; OLD=$D/simdex-old
N1=${N1:-1000000000}; N2=${N2:-100000000}
. "$D/common.sh"
{
log "facts"; nproc; grep -m1 'model name' /proc/cpuinfo; grep -o -m1 'avx512[a-z]*' /proc/cpuinfo | head -3 | tr '\n' ' '; echo
free -g | head -2; df -h "$W" /tmp | cat; uname -r
cat /sys/kernel/mm/transparent_hugepage/enabled

gen_build1
du -sb "$W/i1"; "$NEW" stats "$W/i1"; df -h "$W" | tail -1
q "$NEW" "$W/i1" "$W/q100k.u64" 1 q1-pop-a --populate
q "$NEW" "$W/i1" "$W/q.u64" "$T" q16-pop --populate
b1() { RAYON_NUM_THREADS=$T rt batch1$1 "$NEW" batch "$W/i1" --input "$W/q.u64" --format u64 --out "$W/pairs.tsv" --quiet
  echo "  pairs $(wc -l < "$W/pairs.tsv"), md5 $(md5sum < "$W/pairs.tsv" | cut -c1-12)"; rm -f "$W/pairs.tsv"; }
log "batch 1M x 1B, $T threads"; b1 a
q "$NEW" "$W/i1" "$W/q100k.u64" 1 q1-map
q "$NEW" "$W/i1" "$W/q100k.u64" 1 q1-pop-b --populate
q "$NEW" "$W/i1" "$W/q.u64" "$T" q16-map
log "batch 1M x 1B, $T threads"; b1 b
q "$NEW" "$W/i1" "$W/q100k.u64" 1 q1-mem --in-memory
log "verify 1B"; RAYON_NUM_THREADS=$T rt verify1 "$NEW" verify "$W/i1"
rm -rf "$W/i1" "$W/q.u64" "$W/q100k.u64"

log "100M: generate, build old and new"; rt gen2 python3 "$D/gen.py" "$N2" "$Q" "$W"
rt build2old "$OLD" build --input "$W/fps.u64" --format u64 --out "$W/o2" --k 3 --mem "$MEM" --quiet
rt build2new "$NEW" build --input "$W/fps.u64" --format u64 --out "$W/n2" --k 3 --mem "$MEM" --quiet
rm -f "$W/fps.u64"; du -sb "$W/o2" "$W/n2"; "$NEW" stats "$W/n2" | head -20
for r in 1 2 3; do
  q "$OLD" "$W/o2" "$W/q100k.u64" 1 q2old$r --populate
  q "$NEW" "$W/n2" "$W/q100k.u64" 1 q2new$r --populate
done
q "$OLD" "$W/o2" "$W/q.u64" "$T" q2old16 --populate
q "$NEW" "$W/n2" "$W/q.u64" "$T" q2new16 --populate
for r in 1 2; do for b in old new; do
  if [ $b = old ]; then bin=$OLD; idx=$W/o2; else bin=$NEW; idx=$W/n2; fi
  log "batch 1M x 100M $b"; RAYON_NUM_THREADS=$T rt batch2$b$r "$bin" batch "$idx" --input "$W/q.u64" --format u64 --out "$W/pairs.tsv" --quiet
  echo "  pairs $(wc -l < "$W/pairs.tsv"), md5 $(md5sum < "$W/pairs.tsv" | cut -c1-12)"; rm -f "$W/pairs.tsv"; done; done
for r in 1 2; do
  q "$OLD" "$W/o2" "$W/q100k.u64" 1 q2old-map$r
  q "$NEW" "$W/n2" "$W/q100k.u64" 1 q2new-map$r
done
log "done"
} 2>&1 | tee "$OUT/log"
