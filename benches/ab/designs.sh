#!/usr/bin/env bash
# Every design, batch and store query of two simdex binaries on the same keys, in turns (opt-in,
# not in CI): issue 29's "no design, batch or store query slower than before".
#
#   OLD=BIN NEW=BIN bash benches/ab/designs.sh [N] [TURNS]      # default 10000000 3
#
# Each binary builds its own index of N uniform keys (benches/big/gen.py's, seed 7) for every
# design in DESIGNS, in its own default layout, so a binary from before a format change is
# measured on the files it writes. Then, on one thread pinned to core $CORE (default 1):
# `simdex query --populate --timing` of 100k queries (half within 3 bits of a stored key), the
# two binaries in turns, TURNS times; `simdex batch` of the same queries for BATCH_DESIGNS
# (whole process); and `simdex query` on a store of STORE_PAIRS pairs (design 4, compacted;
# whole process). Every line is µs a query (library time) or seconds, with the md5 of the
# answers, which must agree between the binaries. Work files go to $W (default
# ${TMPDIR:-/tmp}/simdex-designs, removed at the end). numpy comes from the venv
# benches/compare/run.sh makes (target/compare-venv), or python3's own.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
: "${OLD:?OLD=path of the binary before}" "${NEW:?NEW=path of the binary after}"
N=${1:-10000000}; TURNS=${2:-3}
DESIGNS=${DESIGNS:-4 10 16 20 m2c1r1 m4c2r1}
BATCH_DESIGNS=${BATCH_DESIGNS:-4 20 m2c1r1}
STORE_PAIRS=${STORE_PAIRS:-2000000}
CORE=${CORE:-1}
W=${W:-${TMPDIR:-/tmp}/simdex-designs}
py=$root/target/compare-venv/bin/python
[ -x "$py" ] || py=python3
mkdir -p "$W"
trap 'rm -rf "$W"' EXIT
pin() { RAYON_NUM_THREADS=1 taskset -c "$CORE" "$@"; }
md5() { md5sum | cut -c1-10; }

echo "# $N keys; old $OLD; new $NEW; $TURNS turns; core $CORE; $(date -u +%FT%TZ)"
"$py" "$root/benches/big/gen.py" "$N" 200000 "$W"
q=$W/q100k.u64

# µs a query in the library from `--timing`'s line, and the answers' md5.
query() { # BIN IDX
    local t
    t=$(pin "$1" query "$2" --input "$q" --format u64 --timing --populate 2> "$W/err" | md5)
    echo "$(grep -o '[0-9.]* µs/query' "$W/err" | cut -d' ' -f1) $t"
}
# Wall seconds of a whole command and the md5 of FILE after it.
wall() { # FILE CMD...
    local f=$1 s e
    shift
    s=$(date +%s.%N)
    "$@" > /dev/null 2>&1
    e=$(date +%s.%N)
    echo "$(printf '%.3f' "$(echo "$e - $s" | bc)") $(md5 < "$f")"
}

echo "## query, µs a query (md5): old | new, by turn"
for d in $DESIGNS; do
    for v in OLD NEW; do
        "${!v}" build --input "$W/fps.u64" --format u64 --out "$W/$v-$d" --k 3 --design "$d" \
            --quiet > /dev/null
    done
    old=() new=()
    for _ in $(seq "$TURNS"); do
        old+=("$(query "$OLD" "$W/OLD-$d")")
        new+=("$(query "$NEW" "$W/NEW-$d")")
    done
    echo "design $d | ${old[*]} | ${new[*]}"
done

echo "## batch of the 100k queries, one thread, whole process, s (md5): old | new, by turn"
for d in $BATCH_DESIGNS; do
    old=() new=()
    for _ in $(seq "$TURNS"); do
        for v in OLD NEW; do
            r=$(wall "$W/pairs" pin "${!v}" batch "$W/$v-$d" --input "$q" --format u64 \
                --out "$W/pairs" --quiet)
            if [ $v = OLD ]; then old+=("$r"); else new+=("$r"); fi
        done
    done
    echo "design $d | ${old[*]} | ${new[*]}"
done
for d in $DESIGNS; do rm -rf "$W/OLD-$d" "$W/NEW-$d"; done

STORE_PAIRS=$((STORE_PAIRS < N ? STORE_PAIRS : N))
echo "## store of $STORE_PAIRS pairs (design 4, compacted), 100k queries, whole process, s"
head -c $((STORE_PAIRS * 8)) "$W/fps.u64" > "$W/pairs.u64"
"$py" - "$W/pairs.u64" "$W/pairs.txt" <<'PY'
import sys
import numpy as np
keys = np.fromfile(sys.argv[1], dtype="<u8")
with open(sys.argv[2], "w") as f:
    for i, k in enumerate(keys.tolist()):
        f.write(f"{k:016x} {i}\n")
PY
for v in OLD NEW; do
    "${!v}" insert "$W/$v-store" --input "$W/pairs.txt" --expected "$STORE_PAIRS" --design 4 \
        --quiet > /dev/null
    "${!v}" compact "$W/$v-store" --quiet > /dev/null
done
old=() new=()
for _ in $(seq "$TURNS"); do
    for v in OLD NEW; do
        r=$(wall "$W/ans" sh -c "RAYON_NUM_THREADS=1 taskset -c $CORE ${!v} query $W/$v-store \
            --input $q --format u64 > $W/ans")
        if [ $v = OLD ]; then old+=("$r"); else new+=("$r"); fi
    done
done
echo "store | ${old[*]} | ${new[*]}"
