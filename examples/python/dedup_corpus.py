"""Deduplicate a corpus with simdex: JSON Lines or Parquet in, the rows to keep out.

    python examples/python/dedup_corpus.py crawl.jsonl --text-column text --out kept.parquet
    python examples/python/dedup_corpus.py crawl.parquet --k 3 --out kept.parquet

Reads the file with pyarrow (the text column stays in Arrow memory: simdex hashes it in place, on
all cores), clusters near-duplicates with simdex.dedup's defaults (IDF weights learned from the
corpus, fingerprints within k bits, transitively; `--verify 0.9` keeps only pairs whose word
3-shingle Jaccard is at least 0.9), keeps the first row of every cluster, and writes the kept
rows with their cluster id and size. Needs `pip install ./bindings/python pyarrow`.
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
    ap.add_argument("--verify", type=float, default=None, help="Jaccard threshold (exact answers)")
    ap.add_argument("--out", required=True, help="Parquet file of the kept rows")
    a = ap.parse_args()

    t0 = time.perf_counter()
    if a.input.endswith(".parquet"):
        table = pq.read_table(a.input)
    else:
        # Blocks as large as the longest line (pyarrow's default of 1 MB refuses longer lines).
        longest = max((len(line) for line in open(a.input, "rb")), default=0)
        opts = pj.ReadOptions(block_size=max(1 << 20, 2 * longest))
        table = pj.read_json(a.input, read_options=opts)
    texts = table.column(a.text_column)
    # The same defaults as `simdex dedup` (IDF weights learned from the corpus itself).
    clusters = simdex.dedup(texts, k=a.k, shingle=a.shingle, html=a.html, verify=a.verify)
    keep = clusters == np.arange(len(clusters))
    sizes = np.bincount(clusters, minlength=len(clusters))[clusters]
    out = table.append_column("cluster_id", pa.array(clusters)).append_column(
        "cluster_size", pa.array(sizes)
    )
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
