#!/usr/bin/env python3
"""Run the shards of one `simdex batch` job under Apache Spark.

An RDD of shard specs ("0/N" .. "N-1/N"), one per partition, is piped through
`simdex batch --shard`: every worker scans its slice of every stored table against the whole
batch, and the union of the shard outputs is exactly the unsharded output. The index directory,
the batch file and the simdex binary must be readable at the same paths on every worker (a shared
file system, or local mode as here).

    pip install pyspark          # Spark runs on the JVM (Java 17+)
    python3 examples/spark/batch_shards.py --simdex target/release/simdex \
        --index idx --batch batch.hex --shards 8 --out pairs.tsv [--master local[2]]
"""
import argparse
import os
import shlex
import sys

from pyspark import SparkContext


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--simdex", required=True, help="path to the simdex binary")
    ap.add_argument("--index", required=True, help="index directory (the stored set)")
    ap.add_argument("--batch", required=True, help="batch file (hex, one fingerprint per line)")
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--out", required=True, help="where to write the merged, sorted pairs")
    ap.add_argument("--master", default="local[2]")
    a = ap.parse_args()

    simdex, index, batch = (os.path.abspath(p) for p in (a.simdex, a.index, a.batch))
    # Each partition holds one shard spec; `pipe` feeds it on stdin to this command.
    inner = (
        f"read shard; exec {shlex.quote(simdex)} batch {shlex.quote(index)} "
        f"--input {shlex.quote(batch)} --k {a.k} --shard \"$shard\" --quiet"
    )
    command = f"sh -c {shlex.quote(inner)}"

    if a.master.startswith("local"):
        # Local mode: keep Spark's driver sockets on loopback.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    sc = SparkContext(master=a.master, appName="simdex-batch")
    sc.setLogLevel("ERROR")
    try:
        specs = sc.parallelize([f"{i}/{a.shards}" for i in range(a.shards)], a.shards)
        lines = specs.pipe(command, checkCode=True)
        # Each shard's output is sorted; the global sort is the `sort -m` of the shards.
        pairs = lines.sortBy(lambda line: line).collect()
    finally:
        sc.stop()
    with open(a.out, "w") as f:
        for line in pairs:
            f.write(line + "\n")
    print(f"{len(pairs)} pairs from {a.shards} shards -> {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
