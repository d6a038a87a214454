"""Fingerprints and queries exactly as benches/compare/compare.py's make_data (seed 7):
n uniform keys; m queries, the first half a stored key with 0-3 bits flipped, the rest random.
Writes fps.u64, q.u64 (all m) and q100k.u64 (100k of them in random order)."""
import sys
import numpy as np

n, m, d = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rng = np.random.default_rng(7)
fps = rng.integers(0, 2**64, size=n, dtype=np.uint64)
q = rng.integers(0, 2**64, size=m, dtype=np.uint64)
half = m // 2
near = fps[rng.integers(0, n, size=half)]
flips = rng.integers(0, 4, size=half)
for j in range(3):
    bit = rng.integers(0, 64, size=half).astype(np.uint64)
    near = np.where(flips > j, near ^ (np.uint64(1) << bit), near)
q[:half] = near
fps.tofile(f"{d}/fps.u64")
del fps
q.tofile(f"{d}/q.u64")
sub = np.random.default_rng(8).permutation(m)[: min(m, 100_000)]
q[sub].tofile(f"{d}/q100k.u64")
