"""Deduplicate a corpus with simdex: JSON Lines or Parquet in, the rows to keep out.

    python examples/python/dedup_corpus.py crawl.jsonl --text-column text --out kept.parquet
    python examples/python/dedup_corpus.py crawl.parquet --k 3 --out kept.parquet

Reads the file with pyarrow (the text column stays in Arrow memory: simdex hashes it in place, on
all cores), clusters near-duplicates (fingerprints within k bits, transitively), keeps the first
row of every cluster, and writes the kept rows with their cluster id and size. Needs
`pip install ./bindings/python pyarrow`.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj
import pyarrow.parquet as pq

import simdex


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("input", help="a .jsonl or .parquet file")
    ap.add_argument("--text-column", default="text")
    ap.add_argument("--k", type=int, default=3, help="largest Hamming distance of near-duplicates")
    ap.add_argument("--shingle", type=int, default=2)
    ap.add_argument("--html", action="store_true", help="hash the visible text of HTML pages")
    ap.add_argument("--out", required=True, help="Parquet file of the kept rows")
    a = ap.parse_args()

    t0 = time.perf_counter()
    table = pq.read_table(a.input) if a.input.endswith(".parquet") else pj.read_json(a.input)
    texts = table.column(a.text_column)
    fps = simdex.hash(texts, shingle=a.shingle, html=a.html)
    clusters = simdex.dedup(fps, k=a.k)
    keep = clusters == np.arange(len(clusters))
    sizes = np.bincount(clusters, minlength=len(clusters))[clusters]
    out = table.append_column("fingerprint", pa.array(fps)).append_column(
        "cluster_id", pa.array(clusters)
    ).append_column("cluster_size", pa.array(sizes))
    pq.write_table(out.filter(pa.array(keep)), a.out)
    dropped = int(pc.sum(pa.array(~keep)).as_py() or 0)
    print(
        f"{len(keep)} rows, {dropped} near-duplicates dropped, {int(keep.sum())} kept "
        f"-> {a.out} ({time.perf_counter() - t0:.2f} s)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
