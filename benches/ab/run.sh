#!/usr/bin/env bash
# Two builds of the library timed in one process, in turns (opt-in, not in CI).
#
#   bash benches/ab/run.sh BASE INDEX QUERIES.u64 [BATCH] [ROUNDS] [many|near]
#
# A is the library at git revision BASE, B the working tree. Both are copied under
# target/ab/ as crates of their own (simdex_a, simdex_b), linked into one harness
# (harness.rs), and run on one pinned core with one thread: every round times A and B back to
# back on the same BATCH queries (default 10000, 20 rounds), through `near_many` (many, the
# default) or one `near` call per query (near), in an order that alternates round by round.
# It prints both medians and the median ratio B/A over pairs of rounds (the geometric mean of
# a pair's two ratios, one with each build first: the build timed second reads what the first
# left in the caches), which this VM's drifts (up to 2x between processes) move far less than
# the times themselves; then the median ratio of the rounds B ran first and of those A did.
# Two runs of one build against itself gave 0.95-1.00: read a B/A within 5% of 1 as level.
# Both must find the same number of matches in every round. INDEX may be DIR_A,DIR_B: the
# same keys built by A and by B (a layout only B reads).
set -euo pipefail
base=${1:?git revision of build A}
idx=${2:?index directory}
queries=${3:?query file (u64)}
root="$(cd "$(dirname "$0")/../.." && pwd)"
ab="$root/target/ab"
# A standalone copy of the library named simdex_$1 from a tree holding src/ and Cargo.toml.
copy() {
    rm -rf "${ab:?}/$1"
    mkdir -p "$ab/$1"
    if [ "$2" = "." ]; then
        cp -r "$root/src" "$root/Cargo.toml" "$ab/$1/"
    else
        git -C "$root" archive "$2" src Cargo.toml | tar -x -C "$ab/$1"
    fi
    python3 - "$ab/$1/Cargo.toml" "$1" <<'PY'
import re, sys
path, name = sys.argv[1], sys.argv[2]
s = open(path).read()
s = s.replace('name = "simdex"', f'name = "simdex_{name}"')
# The library alone: no workspace, targets, dev-dependencies or profiles of its own.
for section in (r"\[workspace\]", r"\[\[(bench|test|example)\]\]", r"\[dev-dependencies\]", r"\[profile\.[a-z]+\]"):
    s = re.sub(r"\n" + section + r".*?(?=\n\[|\Z)", "", s, flags=re.S)
s = s.replace('exclude = ["fuzz/"]', "")
open(path, "w").write(s)
PY
}
copy a "$base"
copy b .
mkdir -p "$ab/h/src"
cp "$root/benches/ab/harness.rs" "$ab/h/src/main.rs"
cat > "$ab/h/Cargo.toml" <<'TOML'
[package]
name = "ab-harness"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
simdex_a = { path = "../a" }
simdex_b = { path = "../b" }
libc = "0.2"
rayon = "1"

[profile.release]
debug = 1

[workspace]
TOML
cargo build --release --quiet --manifest-path "$ab/h/Cargo.toml" --target-dir "$ab/target"
RAYON_NUM_THREADS=1 taskset -c 1 "$ab/target/release/ab-harness" "$idx" "$queries" \
    "${4:-10000}" "${5:-20}" "${6:-many}"
