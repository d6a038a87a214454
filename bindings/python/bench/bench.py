"""Python-side numbers for BENCHMARKS.md (opt-in, not in CI).

    .venv/bin/python bindings/python/bench/bench.py [--n 1000000] [--queries 1000000]

Prints, in one run: `Index.near_many` from Python (1 thread) against the same queries through
`simdex query` (the Rust API inside the CLI, whole process, one thread via RAYON_NUM_THREADS=1);
two Python threads querying at once against one (the GIL is released); `simdex.hash` of
generated text against `simdex hash` over the same text as JSON Lines.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

import simdex

REPO = Path(__file__).resolve().parents[3]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=1_000_000)
    ap.add_argument("--docs", type=int, default=20_000)
    ap.add_argument("--cli", default=str(REPO / "target" / "release" / "simdex"))
    a = ap.parse_args()
    rng = np.random.default_rng(1)
    fps = rng.integers(0, 2**64, size=a.n, dtype=np.uint64)
    q = fps[rng.integers(0, a.n, size=a.queries)] ^ (np.uint64(1) << rng.integers(0, 64, size=a.queries).astype(np.uint64))
    q[::2] = rng.integers(0, 2**64, size=len(q[::2]), dtype=np.uint64)
    with tempfile.TemporaryDirectory() as d:
        idx = simdex.Index.build(Path(d) / "idx", fps)
        print(f"index: n = {a.n}, design {idx.design}, {idx.stats()['disk_bytes'] / a.n:.1f} B/fp on disk")
        t0 = time.perf_counter()
        r = idx.near_many(q, threads=1)
        py = time.perf_counter() - t0
        qf = Path(d) / "q.u64"
        q.tofile(qf)
        env = dict(os.environ, RAYON_NUM_THREADS="1")
        t0 = time.perf_counter()
        subprocess.run(
            [a.cli, "query", str(Path(d) / "idx"), "--input", str(qf), "--format", "u64"],
            stdout=subprocess.DEVNULL, check=True, env=env,
        )
        cli = time.perf_counter() - t0
        print(f"near_many, 1 thread: Python {a.queries / py:,.0f} q/s ({py:.2f} s, {len(r[0])} matches); "
              f"`simdex query` process {a.queries / cli:,.0f} q/s ({cli:.2f} s, includes printing)")
        half = q[: len(q) // 2]
        t0 = time.perf_counter()
        idx.near_many(half, threads=1)
        idx.near_many(half, threads=1)
        one = time.perf_counter() - t0
        ts = [threading.Thread(target=idx.near_many, args=(half,), kwargs={"threads": 1}) for _ in range(2)]
        t0 = time.perf_counter()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        two = time.perf_counter() - t0
        print(f"two Python threads vs one doing both halves: {one / two:.2f}x")
        words = [f"w{i}" for i in range(20_000)]
        docs = [" ".join(words[j] for j in rng.integers(0, len(words), size=400)) for _ in range(a.docs)]
        mb = sum(len(x) for x in docs) / 1e6
        t0 = time.perf_counter()
        simdex.hash(docs)
        ph = time.perf_counter() - t0
        jf = Path(d) / "docs.jsonl"
        jf.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(docs)))
        t0 = time.perf_counter()
        subprocess.run([a.cli, "hash", "--jsonl", str(jf), "--quiet"], stdout=subprocess.DEVNULL, check=True)
        ch = time.perf_counter() - t0
        print(f"hash of {mb:.0f} MB, all cores: Python {mb / ph:.1f} MB/s; `simdex hash --jsonl` {mb / ch:.1f} MB/s")


if __name__ == "__main__":
    main()
