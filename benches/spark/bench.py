#!/usr/bin/env python3
"""Spark dedup (simdex.spark, local mode) against single-machine `simdex dedup` on the same
generated corpus: documents per second, pairs found, and the bytes each stage shuffles.

Opt-in, not in CI. Needs the package with its Spark extra and the CLI built:

    cargo build --release
    python3 -m venv .venv && .venv/bin/pip install "./bindings/python[spark]"
    .venv/bin/python benches/spark/bench.py --docs 100000 --master 'local[2]'

The corpus: documents of 30-120 words drawn from 50 000, a quarter of them near-duplicates
(0-3 words changed) of an earlier one and 5% exact copies. Both sides use the default weights
(IDF learned from the corpus) and k = 3, and must find the same pairs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def generate(path: Path, n: int, seed: int) -> None:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(50_000)]
    docs: list[list[str]] = []
    with path.open("w") as f:
        for i in range(n):
            r = rng.random()
            if docs and r < 0.25:
                words = list(docs[rng.randrange(len(docs))])
                for _ in range(rng.randint(0, 3)):
                    words[rng.randrange(len(words))] = rng.choice(vocab)
            elif docs and r < 0.30:
                words = list(docs[rng.randrange(len(docs))])
            else:
                words = rng.choices(vocab, k=rng.randint(30, 120))
            if len(docs) < 200_000:
                docs.append(words)
            else:
                docs[rng.randrange(len(docs))] = words
            f.write(json.dumps({"id": f"d{i}", "text": " ".join(words)}) + "\n")


def stage_bytes(ui: str, app: str) -> list[tuple[str, int, int]]:
    """(job description, shuffle bytes written, records written) per stage, from the UI."""
    with urllib.request.urlopen(f"{ui}/api/v1/applications/{app}/stages") as r:
        stages = json.load(r)
    out = []
    for s in stages:
        if s.get("shuffleWriteBytes", 0) > 0:
            desc = s.get("description") or s.get("name", "")
            out.append((desc, s["shuffleWriteBytes"], s["shuffleWriteRecords"]))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--dir", default="target/spark-bench", help="where the corpus and outputs go")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()

    d = REPO / a.dir
    d.mkdir(parents=True, exist_ok=True)
    corpus = d / f"corpus-{a.docs}-{a.seed}.jsonl"
    if not corpus.exists():
        t = time.time()
        generate(corpus, a.docs, a.seed)
        print(f"generated {corpus} ({corpus.stat().st_size / 1e6:.0f} MB) in {time.time() - t:.0f} s", file=sys.stderr)
    mb = corpus.stat().st_size / 1e6

    exe = REPO / "target" / "release" / "simdex"
    t = time.time()
    cli = subprocess.run([str(exe), "dedup", "--jsonl", "--quiet", str(corpus)], check=True,
                         capture_output=True, text=True).stdout
    t_cli = time.time() - t
    cli_pairs = len(cli.splitlines())

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import simdex.spark as ss

    cores = os.cpu_count() or 2
    spark = (
        SparkSession.builder.master(a.master).appName("simdex-bench")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(4 * cores))
        .config("spark.driver.memory", "8g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    out = d / f"out-{a.docs}"
    t = time.time()
    r = ss.dedup(ss.read_corpus(spark, str(corpus)))
    r.write(str(out), mode="overwrite")
    t_spark = time.time() - t
    stages = stage_bytes(spark.sparkContext.uiWebUrl, spark.sparkContext.applicationId)
    spark.stop()

    s = r.stats
    assert s["pairs"] == cli_pairs, (s["pairs"], cli_pairs)
    print(f"\n{a.docs} documents ({mb:.0f} MB JSONL), k = 3, default weights, {cores} cores, master {a.master}")
    print("| run | seconds | documents/s | pairs |")
    print("|---|---|---|---|")
    print(f"| simdex dedup (one process) | {t_cli:.1f} | {a.docs / t_cli:,.0f} | {cli_pairs} |")
    print(f"| simdex.spark ({a.master}) | {t_spark:.1f} | {a.docs / t_spark:,.0f} | {s['pairs']} |")
    print(f"\njoin: design {s['design']} ({s['tables']} tables), {s['distinct']} distinct fingerprints, "
          f"{s['fingerprint_pairs']} fingerprint pairs, components {s['components']}")
    print("\n| stage (job) | shuffle bytes | records | bytes per record |")
    print("|---|---|---|---|")
    for desc, b, n in stages:
        print(f"| {desc} | {b:,} | {n:,} | {b / max(n, 1):.1f} |")
    join = [(b, n) for desc, b, n in stages if "bucket shuffle" in desc]
    if join:
        b = sum(x[0] for x in join)
        print(f"\nbucket shuffle: {b / max(s['distinct'], 1):.1f} bytes per distinct fingerprint "
              f"({b / max(s['distinct'] * s['tables'], 1):.1f} per fingerprint per table)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
