# Shared by the scripts beside it (sourced, after D is set): settings, the work directory and
# the timing helpers.
Q=${Q:-1000000}; MEM=${MEM:-48G}
OUT=${OUT:-/tmp/devout}; mkdir -p "$OUT"
W=${W:-${TMPDIR:-/tmp}/simdex-big}; mkdir -p "$W"
T=$(nproc)
log() { echo "[$(date +%T) +${SECONDS}s] $*"; }
# rt NAME CMD...: wall seconds and peak RSS of CMD, stderr kept in $W/NAME.err (and echoed)
rt() { local name=$1; shift
  python3 - "$@" <<'PY' 2> >(tee "$W/$name.err" >&2)
import resource, subprocess, sys, time
t = time.time(); rc = subprocess.call(sys.argv[1:])
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"  rc {rc}, wall {time.time() - t:.2f} s, user {r.ru_utime:.1f} s, sys {r.ru_stime:.1f} s, peak RSS {r.ru_maxrss / 2**20:.2f} GiB", file=sys.stderr)
PY
}
# q BIN IDX QFILE THREADS NAME [flags]: query (under $PIN, e.g. "taskset -c 5", if set), md5
# of the answers
q() { local bin=$1 idx=$2 qf=$3 th=$4 name=$5; shift 5
  log "query $name ($th threads, $*)"
  RAYON_NUM_THREADS=$th rt "$name" ${PIN:-} "$bin" query "$idx" --input "$qf" --format u64 --timing "$@" > "$W/ans"
  echo "  md5 $(md5sum < "$W/ans" | cut -c1-12), lines $(wc -l < "$W/ans")"; rm -f "$W/ans"; }
# bt BIN IDX NAME [flags]: `simdex batch` of $W/q.u64 against IDX on all cores, md5 of the pairs
bt() { local bin=$1 idx=$2 name=$3; shift 3
  log "batch $name"; RAYON_NUM_THREADS=$T rt "$name" "$bin" batch "$idx" --input "$W/q.u64" --format u64 --out "$W/pairs.tsv" "$@"
  echo "  pairs $(wc -l < "$W/pairs.tsv"), md5 $(md5sum < "$W/pairs.tsv" | cut -c1-12)"; rm -f "$W/pairs.tsv"; }
# The A/B harness (benches/ab, built by its run.sh) beside the scripts, and the core it times on.
AB=$D/ab-harness; PIN_CORE=$((T > 3 ? T - 3 : 0))
# ab DIR_A,DIR_B MODE ROUNDS [QFILE]: one pinned thread, A and B in turns on 10k-query batches
# of QFILE (default $W/q.u64); AB_B_IN_MEMORY=1 before the call reads B into memory.
ab() { log "A/B $1 $2${AB_B_IN_MEMORY:+, B in memory}"; AB_PIN=$PIN_CORE "$AB" "$1" "${4:-$W/q.u64}" 10000 "$3" "$2"; }
# gen_build1: gen.py's N1 keys and Q queries in $W (q.u64, q100k.u64), the index $W/i1 built
# from the keys (auto design, k = 3, --mem $MEM), then the keys removed
gen_build1() {
  log "generate $N1 keys, $Q queries"; rt gen1 python3 "$D/gen.py" "$N1" "$Q" "$W"
  log "build $N1 (auto)"; rt build1 "$NEW" build --input "$W/fps.u64" --format u64 --out "$W/i1" --k 3 --mem "$MEM" --quiet
  rm -f "$W/fps.u64"; }
