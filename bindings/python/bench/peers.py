"""simdex beside the Python peers on the same data, in one run (opt-in, not in CI).

    .venv/bin/pip install faiss-cpu simhash
    .venv/bin/python bindings/python/bench/peers.py [--n 1000000] [--queries 10000] [--simhash-n 1000000]

Uniform random 64-bit fingerprints; half the queries a stored fingerprint with 0-3 bits flipped,
half random; k = 3; one thread everywhere. Prints queries/s, matches found (all must agree:
every method is exact) and memory per fingerprint: simdex's bytes on disk and reader RAM, the
peers' resident memory growth while building (RSS from /proc).

Peers: faiss IndexBinaryMultiHash 2 x 32 bits with nflip = 1 (its fastest exact setting for
k = 3) and 4 x 16 bits; the `simhash` package's SimhashIndex (pure Python).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

import simdex


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def queries(fps: np.ndarray, m: int, rng: np.random.Generator) -> np.ndarray:
    q = rng.integers(0, 2**64, size=m, dtype=np.uint64)
    near = fps[rng.integers(0, len(fps), size=m // 2)].copy()
    for i in range(len(near)):
        for b in rng.choice(64, size=int(rng.integers(0, 4)), replace=False):
            near[i] ^= np.uint64(1) << np.uint64(b)
    q[: m // 2] = near
    return q


def run_simdex(fps: np.ndarray, q: np.ndarray, d: str) -> list[tuple]:
    idx = simdex.Index.build(Path(d) / "idx", fps, k=3, threads=1)
    st = idx.stats()
    t0 = time.perf_counter()
    qi, f, dist = idx.near_many(q, threads=1)
    many = time.perf_counter() - t0
    t0 = time.perf_counter()
    found = sum(len(idx.near(int(x))[0]) for x in q)
    single = time.perf_counter() - t0
    mem = f"{st['disk_bytes'] / len(fps):.1f} on disk, {st['memory_bytes'] / len(fps):.2f} reader RAM"
    return [
        (f"simdex Index.near_many (design {st['design']})", len(fps), len(q) / many, len(f), mem),
        ("simdex Index.near, one Python call per query", len(fps), len(q) / single, found, "(same index)"),
    ]


def run_faiss(fps: np.ndarray, q: np.ndarray, nhash: int, b: int, nflip: int) -> list[tuple]:
    import faiss

    faiss.omp_set_num_threads(1)
    r0 = rss()
    ix = faiss.IndexBinaryMultiHash(64, nhash, b)
    ix.nflip = nflip
    ix.add(fps.view(np.uint8).reshape(-1, 8))
    mem = (rss() - r0) / len(fps)
    t0 = time.perf_counter()
    lims, _, _ = ix.range_search(q.view(np.uint8).reshape(-1, 8), 4)  # distance < 4
    el = time.perf_counter() - t0
    return [(f"faiss IndexBinaryMultiHash {nhash}x{b}, nflip {nflip}", len(fps), len(q) / el, int(lims[-1]),
             f"{mem:.0f} RSS")]


def run_simhash(fps: np.ndarray, q: np.ndarray) -> list[tuple]:
    from simhash import Simhash, SimhashIndex

    r0 = rss()
    sx = SimhashIndex([(str(i), Simhash(int(v))) for i, v in enumerate(fps)], k=3)
    mem = (rss() - r0) / len(fps)
    sub = q[:2000]
    t0 = time.perf_counter()
    found = sum(len(sx.get_near_dups(Simhash(int(x)))) for x in sub)
    el = time.perf_counter() - t0
    return [(f"simhash SimhashIndex ({len(sub)} queries)", len(fps), len(sub) / el, found, f"{mem:.0f} RSS")]


def isolated(fn, *args) -> list[tuple]:
    """Run `fn` in a fresh process, so that resident-memory growth is its own."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    with ctx.Pool(1) as pool:
        try:
            return pool.apply(fn, args)
        except ImportError as e:
            print(f"skipped: {e}")
            return []


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--simhash-n", type=int, default=1_000_000)
    a = ap.parse_args()
    rng = np.random.default_rng(7)
    fps = rng.integers(0, 2**64, size=a.n, dtype=np.uint64)
    q = queries(fps, a.queries, rng)
    with tempfile.TemporaryDirectory() as d:
        rows = isolated(run_simdex, fps, q, d)
    rows += isolated(run_faiss, fps, q, 2, 32, 1)
    rows += isolated(run_faiss, fps, q, 4, 16, 0)
    rows += isolated(run_simhash, fps[: a.simhash_n], q)
    print("| method | n | queries/s (1 thread) | matches | bytes per fingerprint |")
    print("|---|---|---|---|---|")
    for name, n, qps, found, mem in rows:
        print(f"| {name} | {n} | {qps:,.0f} | {found} | {mem} |")


if __name__ == "__main__":
    main()
