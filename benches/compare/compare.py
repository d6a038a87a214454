#!/usr/bin/env python3
"""simdex against faiss IndexBinaryMultiHash (the strongest exact peer) on the same data.

Data (numpy, seeded): n uniform random 64-bit fingerprints; queries half a stored fingerprint
with 0-3 random bits flipped, half random; k = 3. Rows:

- simdex, library: `simdex query --timing` (the index opened, then `near_many` timed inside
  the process: no input parsing, no output), on 1 thread and on all (RAYON_NUM_THREADS);
- simdex, library, populated: the same with `--populate` (every table page mapped at open, as
  in a long-running service: no page faults while querying);
- simdex, library, in memory: the same with `--in-memory` (the tables read into memory, in
  huge pages where the kernel allows, every block's checksum checked at open), as faiss holds
  its index;
- simdex, whole process: wall time of `simdex query` from start to exit, output to /dev/null;
- faiss IndexBinaryMultiHash 2x32 with nflip 1 and 4x16 (both exact for k = 3), `range_search`
  with radius 4 (distance < 4), on 1 thread and on all (omp_set_num_threads).

Each method's matches are counted and must agree (all are exact). Memory per fingerprint:
simdex's table bytes on disk and reader RAM, faiss's resident-memory growth while adding.

With `--turns R`, the whole `simdex query` process (one thread) and faiss's first setting (one
thread) then take R turns, timed back to back with their order alternating, and the ratio is
printed turn by turn: on a shared VM whose speed drifts between the rows above, the ratio of
two rows timed minutes apart moves with it.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import time
from pathlib import Path

import numpy as np


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def make_data(n: int, m: int, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    fps = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    q = rng.integers(0, 2**64, size=m, dtype=np.uint64)
    half = m // 2
    near = fps[rng.integers(0, n, size=half)]
    flips = rng.integers(0, 4, size=half)
    for j in range(3):
        bit = rng.integers(0, 64, size=half).astype(np.uint64)
        near = np.where(flips > j, near ^ (np.uint64(1) << bit), near)
    q[:half] = near
    return fps, q


def simdex_rows(exe: str, d: Path, fps: np.ndarray, q: np.ndarray, mem: str) -> tuple[list, str]:
    idx = d / f"idx-{len(fps)}"
    raw = d / f"fps-{len(fps)}.u64"
    qf = d / f"q-{len(fps)}-{len(q)}.u64"
    if not idx.exists():
        fps.tofile(raw)
        subprocess.run([exe, "build", "--input", str(raw), "--format", "u64", "--out", str(idx),
                        "--k", "3", "--mem", mem, "--quiet"], check=True)
        raw.unlink()
    q.tofile(qf)
    stats = subprocess.run([exe, "stats", str(idx)], check=True, capture_output=True, text=True).stdout
    disk = sum(f.stat().st_size for f in idx.iterdir())
    design = re.search(r"design\s*[:=]?\s*(\S+)", stats)
    rows = []
    for threads in (1, os.cpu_count() or 1):
        env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
        # Warm the page cache, then time.
        subprocess.run([exe, "query", str(idx), "--input", str(qf), "--format", "u64"], env=env,
                       check=True, stdout=subprocess.DEVNULL)
        t0 = time.perf_counter()
        p = subprocess.run([exe, "query", str(idx), "--input", str(qf), "--format", "u64", "--timing"],
                           env=env, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        whole = time.perf_counter() - t0
        matches = p.stdout.count("\n")
        lib = re.search(r"([\d.]+) µs/query", p.stderr)
        lib_qps = 1e6 / float(lib.group(1)) if lib else float("nan")
        mem = f"{disk / len(fps):.1f} on disk"
        # A service's steady state: every page already mapped (`--populate` at open).
        p2 = subprocess.run([exe, "query", str(idx), "--input", str(qf), "--format", "u64", "--timing",
                             "--populate"], env=env, check=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
        pop = re.search(r"([\d.]+) µs/query", p2.stderr)
        pop_qps = 1e6 / float(pop.group(1)) if pop else float("nan")
        # As faiss holds its index: read into memory (huge pages), every block checked at open.
        p3 = subprocess.run([exe, "query", str(idx), "--input", str(qf), "--format", "u64", "--timing",
                             "--in-memory"], env=env, check=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
        mm = re.search(r"([\d.]+) µs/query", p3.stderr)
        mem_qps = 1e6 / float(mm.group(1)) if mm else float("nan")
        rows.append((f"simdex, library (near_many)", threads, lib_qps, matches, mem))
        rows.append((f"simdex, library, populated", threads, pop_qps, p2.stdout.count("\n"), mem))
        rows.append((f"simdex, library, in memory", threads, mem_qps, p3.stdout.count("\n"), mem))
        rows.append((f"simdex, whole `simdex query` process", threads, len(q) / whole, matches, mem))
    return rows, (design.group(1) if design else "?")


def faiss_rows(fps: np.ndarray, q: np.ndarray, nhash: int, b: int, nflip: int) -> list:
    import faiss

    r0 = rss()
    ix = faiss.IndexBinaryMultiHash(64, nhash, b)
    ix.nflip = nflip
    ix.add(fps.view(np.uint8).reshape(-1, 8))
    mem = (rss() - r0) / len(fps)
    rows = []
    for threads in (1, os.cpu_count() or 1):
        faiss.omp_set_num_threads(threads)
        t0 = time.perf_counter()
        lims, _, _ = ix.range_search(q.view(np.uint8).reshape(-1, 8), 4)
        el = time.perf_counter() - t0
        rows.append((f"faiss MultiHash {nhash}x{b}, nflip {nflip}", threads, len(q) / el,
                     int(lims[-1]), f"{mem:.0f} RSS"))
    del ix
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--simdex", required=True)
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--queries", type=int, default=100_000)
    ap.add_argument("--dir", default="target/compare")
    ap.add_argument("--build-mem", default="4G", help="simdex build --mem (sort budget)")
    ap.add_argument("--faiss", default="2x32n1,4x16n0",
                    help="faiss MultiHash configurations, NHASHxBITSnNFLIP, comma-separated "
                         "(at 100M each takes ~18 GB: run one at a time where memory is short)")
    ap.add_argument("--turns", type=int, default=0,
                    help="then time the whole simdex process and the first faiss setting in turns, "
                         "one thread each, this many times (see above)")
    a = ap.parse_args()
    d = Path(a.dir)
    d.mkdir(parents=True, exist_ok=True)
    fps, q = make_data(a.n, a.queries)
    rows, design = simdex_rows(a.simdex, d, fps, q, a.build_mem)
    import multiprocessing as mp

    configs = [tuple(map(int, re.fullmatch(r"(\d+)x(\d+)n(\d+)", c).groups()))
               for c in a.faiss.split(",") if c]
    for nhash, b, nflip in configs:
        # Each in a fresh process, so that its resident-memory growth is its own.
        with mp.get_context("fork").Pool(1) as pool:
            rows += pool.apply(faiss_rows, (fps, q, nhash, b, nflip))
    print(f"\nn = {a.n:,} uniform random fingerprints, {a.queries:,} queries (half near a stored one), "
          f"k = 3, {os.cpu_count()} cores; simdex design {design}")
    print("| method | threads | queries/s | matches | bytes per fingerprint |")
    print("|---|---|---|---|---|")
    for name, t, qps, found, mem in rows:
        print(f"| {name} | {t} | {qps:,.0f} | {found} | {mem} |")
    counts = {r[3] for r in rows}
    print(f"\nmatches agree: {len(counts) == 1}")
    best = {t: max(r[2] for r in rows if r[0].startswith("faiss") and r[1] == t) for t in {r[1] for r in rows}}
    for t in sorted(best):
        lib = next(r[2] for r in rows if r[0] == "simdex, library (near_many)" and r[1] == t)
        pop = next(r[2] for r in rows if r[0] == "simdex, library, populated" and r[1] == t)
        inm = next(r[2] for r in rows if r[0] == "simdex, library, in memory" and r[1] == t)
        proc = next(r[2] for r in rows if r[0].startswith("simdex, whole") and r[1] == t)
        print(f"{t} thread(s): simdex / best faiss: library {lib / best[t]:.2f}x, "
              f"library populated {pop / best[t]:.2f}x, library in memory {inm / best[t]:.2f}x, "
              f"whole process {proc / best[t]:.2f}x")
    if a.turns > 0 and configs:
        turns(a.simdex, d / f"idx-{a.n}", d / f"q-{a.n}-{a.queries}.u64", fps, q, configs[0], a.turns)
    return 0 if len(counts) == 1 else 1


def turns(exe: str, idx: Path, qf: Path, fps: np.ndarray, q: np.ndarray, config: tuple, n: int) -> None:
    """The whole `simdex query` process against faiss `config`'s `range_search`, one thread
    each, timed back to back `n` times (order alternating): queries/s and their ratio per turn."""
    import faiss

    nhash, b, nflip = config
    ix = faiss.IndexBinaryMultiHash(64, nhash, b)
    ix.nflip = nflip
    ix.add(fps.view(np.uint8).reshape(-1, 8))
    faiss.omp_set_num_threads(1)
    env = dict(os.environ, RAYON_NUM_THREADS="1")
    cmd = [exe, "query", str(idx), "--input", str(qf), "--format", "u64"]
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)  # warm the page cache

    def simdex_qps() -> float:
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        return len(q) / (time.perf_counter() - t0)

    def faiss_qps() -> float:
        t0 = time.perf_counter()
        ix.range_search(q.view(np.uint8).reshape(-1, 8), 4)
        return len(q) / (time.perf_counter() - t0)

    ratios = []
    print(f"\nturns, one thread: whole `simdex query` process against faiss MultiHash {nhash}x{b}, nflip {nflip}")
    for i in range(n):
        if i % 2 == 0:
            s, f = simdex_qps(), faiss_qps()
        else:
            f, s = faiss_qps(), simdex_qps()
        ratios.append(s / f)
        print(f"turn {i + 1}: simdex {s:,.0f} q/s, faiss {f:,.0f} q/s, ratio {s / f:.2f}x")
    print(f"median ratio {sorted(ratios)[len(ratios) // 2]:.2f}x over {n} turns")


if __name__ == "__main__":
    raise SystemExit(main())
