#!/usr/bin/env bash
# Opt-in check (not in CI): the Spark run of N shards equals the unsharded `simdex batch` output.
#   pip install pyspark && bash examples/spark/check.sh [SHARDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
shards=${1:-4}
export SPARK_LOCAL_IP=${SPARK_LOCAL_IP:-127.0.0.1}
cargo build --release --quiet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bin=target/release/simdex
$bin gen --n 200000 --planted 2000 --out "$work/stored.hex"
$bin build --input "$work/stored.hex" --out "$work/idx" --quiet
{ head -n 2000 "$work/stored.hex"; $bin gen --n 20000 --planted 0 --seed 9; } > "$work/batch.hex"
$bin batch "$work/idx" --input "$work/batch.hex" --out "$work/unsharded.tsv" --quiet
python3 examples/spark/batch_shards.py --simdex $bin --index "$work/idx" --batch "$work/batch.hex" \
    --shards "$shards" --out "$work/spark.tsv"
cmp "$work/unsharded.tsv" "$work/spark.tsv"
echo "spark ($shards shards) == unsharded: $(wc -l < "$work/spark.tsv") pairs"
