"""Dedup of a generated corpus: simdex (Python and CLI, plain and verified) beside rensa and
datasketch on the same file, in one run (opt-in, not in CI).

    .venv/bin/pip install rensa datasketch
    .venv/bin/python bindings/python/bench/dedup.py --n 100000 [--methods simdex,simdex-verify,cli,cli-verify,rensa,datasketch]
    .venv/bin/python bindings/python/bench/dedup.py --n 10000000 --methods cli,cli-verify --cli-mem 8G

The corpus: `--n` documents of 200 words drawn from a Zipfian vocabulary of 50 000 words
(exponent 1.1), 5% of them planted near-duplicates of an earlier document with 0-5% of their
words substituted (uniform). Written once to Parquet (id, text) and JSON Lines under `--dir`.
Each method runs in its own process; the table gives documents per second (wall time, reading
the file included), the process's peak RSS, precision (the share of reported pairs whose word
3-shingle sets, whitespace tokens, have Jaccard >= 0.9) and recall (the share of planted pairs
with Jaccard >= 0.9 that the method puts together: same cluster, or a reported pair).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

VOCAB = 50_000
WORDS = 200
PLANTED = 0.05
MAX_SUB = 0.05
THRESHOLD = 0.9


def generate(n: int, out: Path, seed: int = 7) -> None:
    """The corpus as Parquet (id, text), JSON Lines and the planted pairs (npy).

    Word ids are held as uint16 (400 bytes a document: 4 GB at 10M) and drawn, planted and
    written in chunks, so that memory stays far below the texts' size at any `n`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab = np.array(
        ["".join(rng.choice(letters, size=int(rng.integers(2, 10)))) for _ in range(VOCAB)]
    )
    ranks = np.arange(1, VOCAB + 1, dtype=np.float64)
    p = ranks**-1.1
    p /= p.sum()
    chunk = 1 << 16
    words = np.empty((n, WORDS), dtype=np.uint16)
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        words[lo:hi] = rng.choice(VOCAB, size=(hi - lo, WORDS), p=p)
    planted = []
    for i in np.flatnonzero(rng.random(n) < PLANTED):
        if i == 0:
            continue
        src = int(rng.integers(0, i))
        row = words[src].copy()
        subs = int(rng.integers(0, int(WORDS * MAX_SUB) + 1))
        at = rng.choice(WORDS, size=subs, replace=False)
        row[at] = rng.choice(VOCAB, size=subs, p=p)
        words[i] = row
        planted.append((src, int(i)))
    schema = pa.schema([("id", pa.int64()), ("text", pa.string())])
    # Row groups of 64k rows, as writers commonly cut them (a reader decodes one at a time).
    with pq.ParquetWriter(out / "corpus.parquet", schema) as pw, open(out / "corpus.jsonl", "w") as f:
        for lo in range(0, n, chunk):
            hi = min(n, lo + chunk)
            texts = [" ".join(vocab[w]) for w in words[lo:hi]]
            ids = np.arange(lo, hi, dtype=np.int64)
            pw.write_table(pa.table({"id": ids, "text": texts}, schema=schema))
            f.writelines(json.dumps({"id": int(i), "text": t}) + "\n" for i, t in zip(ids, texts))
    np.save(out / "planted.npy", np.array(planted, dtype=np.int64).reshape(-1, 2))


def texts_of(path: Path, rows: set[int]) -> dict[int, str]:
    """The texts of the given rows only, one row group at a time (the corpus may not fit)."""
    import pyarrow.parquet as pq

    f = pq.ParquetFile(path)
    want = np.array(sorted(rows), dtype=np.int64)
    got: dict[int, str] = {}
    lo = 0
    for g in range(f.num_row_groups):
        hi = lo + f.metadata.row_group(g).num_rows
        sel = want[(want >= lo) & (want < hi)]
        if len(sel):
            col = f.read_row_group(g, columns=["text"]).column("text")
            for r in sel:
                got[int(r)] = col[int(r - lo)].as_py()
        lo = hi
    return got


def shingles(text: str) -> set[int]:
    w = text.split()
    return {hash(" ".join(w[i : i + 3])) for i in range(max(len(w) - 2, 1))}


def jaccard(a: str, b: str) -> float:
    x, y = shingles(a), shingles(b)
    return len(x & y) / len(x | y) if x or y else 0.0


def read_texts(path: Path):
    """The text column, read the way that peaks lowest (one thread, no pre-buffering: 1.8 GB
    for the 1.46 GB of texts at 1M, against 2.4 GB with the defaults), for every method alike."""
    import pyarrow.parquet as pq

    return pq.read_table(path, columns=["text"], use_threads=False, pre_buffer=False).column("text")


# Each method: read the Parquet file, return (pairs as an (m, 2) int array, cluster labels or None).
def m_simdex(path: Path, verify: bool):
    import simdex

    texts = read_texts(path)
    if verify:
        clusters, pairs = simdex.dedup(texts, verify=THRESHOLD, return_pairs=True)
    else:
        clusters, pairs = simdex.dedup(texts, return_pairs=True)
    return np.stack([pairs[0], pairs[1]], axis=1), clusters


def m_cli(path: Path, verify: bool):
    jsonl = path.with_suffix(".jsonl")
    cmd = [os.environ.get("SIMDEX", "target/release/simdex"), "dedup", "--jsonl", "--quiet", str(jsonl)]
    if CLI_MEM:
        cmd += ["--mem", CLI_MEM]
    if verify:
        cmd += ["--verify", f"jaccard:{THRESHOLD}"]
    r = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], check=True, capture_output=True, text=True)
    global CLI_RSS_KB
    CLI_RSS_KB = int(r.stderr.strip().splitlines()[-1])
    out = r.stdout
    pairs = [tuple(int(x) for x in line.split("\t")[:2]) for line in out.splitlines() if line]
    return np.array(pairs, dtype=np.int64).reshape(-1, 2), None


def m_rensa(path: Path):
    from rensa import RMinHash, RMinHashLSH

    texts = read_texts(path).to_pylist()
    lsh = RMinHashLSH(threshold=THRESHOLD, num_perm=128, num_bands=16)
    hashes = []
    for i, t in enumerate(texts):
        w = t.split()
        m = RMinHash(num_perm=128, seed=42)
        m.update([" ".join(w[j : j + 3]) for j in range(max(len(w) - 2, 1))])
        lsh.insert(i, m)
        hashes.append(m)
    pairs = {(min(i, j), max(i, j)) for i, m in enumerate(hashes) for j in lsh.query(m) if j != i}
    return np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2), None


def m_datasketch(path: Path):
    from datasketch import MinHash, MinHashLSH

    texts = read_texts(path).to_pylist()
    lsh = MinHashLSH(threshold=THRESHOLD, num_perm=128)
    pairs = set()
    for i, t in enumerate(texts):
        w = t.split()
        m = MinHash(num_perm=128)
        m.update_batch([" ".join(w[j : j + 3]).encode() for j in range(max(len(w) - 2, 1))])
        for j in lsh.query(m):
            pairs.add((j, i))
        lsh.insert(i, m)
    return np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2), None


def m_read(path: Path):
    """Only the read of the texts: the floor under every Python method's time and memory."""
    read_texts(path)
    return np.zeros((0, 2), dtype=np.int64), None


METHODS = {
    "read": m_read,
    "simdex": lambda p: m_simdex(p, False),
    "simdex-verify": lambda p: m_simdex(p, True),
    "cli": lambda p: m_cli(p, False),
    "cli-verify": lambda p: m_cli(p, True),
    "rensa": m_rensa,
    "datasketch": m_datasketch,
}


CLI_RSS_KB = 0
CLI_MEM = ""  # `--cli-mem`: the command line's --mem (its default when empty)


def child(method: str, path: Path, out: Path) -> None:
    t0 = time.perf_counter()
    pairs, clusters = METHODS[method](path)
    wall = time.perf_counter() - t0
    np.save(out / f"{method}.pairs.npy", pairs)
    if clusters is not None:
        np.save(out / f"{method}.clusters.npy", np.asarray(clusters))
    # The command line's own peak (the Python process that runs it is not the method).
    rss = CLI_RSS_KB or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"wall": wall, "rss_kb": rss}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--methods", default="read,simdex,simdex-verify,cli,cli-verify,rensa,datasketch")
    ap.add_argument("--cli-mem", default="", help="--mem for the command line (e.g. 8G)")
    ap.add_argument("--child", default=None)
    a = ap.parse_args()
    global CLI_MEM
    CLI_MEM = a.cli_mem
    d = a.dir or Path(f"/tmp/simdex-dedup-{a.n}")
    if a.child:
        child(a.child, d / "corpus.parquet", d)
        return
    d.mkdir(parents=True, exist_ok=True)
    if not (d / "corpus.parquet").exists():
        t0 = time.perf_counter()
        generate(a.n, d)
        print(f"generated {a.n} documents in {time.perf_counter() - t0:.1f} s under {d}", file=sys.stderr)
    planted = np.load(d / "planted.npy")
    texts = texts_of(d / "corpus.parquet", {int(x) for x in planted.ravel()})
    truth = {(int(a), int(b)) for a, b in planted if jaccard(texts[a], texts[b]) >= THRESHOLD}
    print(f"## Dedup of {a.n} generated documents ({len(truth)} planted pairs at Jaccard >= {THRESHOLD}), "
          f"{os.cpu_count()} cores\n")
    print("| method | docs/s | peak RSS | pairs | precision | recall |")
    print("|---|---:|---:|---:|---:|---:|")
    for m in a.methods.split(","):
        r = subprocess.run([sys.executable, __file__, "--n", str(a.n), "--dir", str(d), "--cli-mem", a.cli_mem,
                            "--child", m],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"| {m} | failed: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode} | | | | |")
            continue
        stats = json.loads(r.stdout.strip().splitlines()[-1])
        pairs = np.load(d / f"{m}.pairs.npy")
        found = {(int(min(x, y)), int(max(x, y))) for x, y in pairs}
        texts.update(texts_of(d / "corpus.parquet", {r for p in found for r in p} - texts.keys()))
        good = sum(jaccard(texts[x], texts[y]) >= THRESHOLD for x, y in found)
        cpath = d / f"{m}.clusters.npy"
        if cpath.exists():
            c = np.load(cpath)
            hit = sum(c[x] == c[y] for x, y in truth)
        else:
            hit = len(truth & found)
        if m == "read":
            print(f"| read the texts only | {a.n / stats['wall']:,.0f} | {stats['rss_kb'] / 1024**2:.2f} GB | | | |")
            continue
        prec = good / len(found) if found else 1.0
        rec = hit / len(truth) if truth else 1.0
        print(f"| {m} | {a.n / stats['wall']:,.0f} | {stats['rss_kb'] / 1024**2:.2f} GB | {len(found):,} | "
              f"{prec:.3f} | {rec:.3f} |", flush=True)


if __name__ == "__main__":
    main()
