"""Fingerprints and queries exactly as benches/compare/compare.py makes them (its make_data,
seed 7): n uniform keys; m queries, the first half a stored key with 0-3 bits flipped, the rest
random. Writes fps.u64, q.u64 (all m) and q100k.u64 (100k of them in random order)."""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "compare"))
from compare import make_data  # noqa: E402

n, m, d = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
fps, q = make_data(n, m)
fps.tofile(f"{d}/fps.u64")
del fps
q.tofile(f"{d}/q.u64")
sub = np.random.default_rng(8).permutation(m)[: min(m, 100_000)]
q[sub].tofile(f"{d}/q100k.u64")
