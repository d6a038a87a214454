"""Building blocks for deduplication on a cluster engine (Spark, Ray, Dask): the paper's tables
without files.

A self-join of n fingerprints at distance k runs as one shuffle:

1. :func:`join_design` names a design whose tables all probe with radius 0, so that two
   fingerprints are a candidate pair in table t exactly when they share table t's *bucket*
   (permuted prefix).
2. Each fingerprint goes out once per table, keyed by ``(t, bucket_keys(...)[i])``; the engine
   brings equal keys together.
3. Wherever a table's buckets land, :func:`bucket_pairs` lists their pairs within k, keeping only
   those that no earlier table covers: over all tables every pair comes out exactly once, the
   same pairs as ``Index.batch`` / ``simdex dedup`` on one machine.
4. :func:`components` clusters the pairs when they fit one process.

IDF weights are counted the same way, over the corpus's IDF sample (the
``simdex._simdex.IDF_SAMPLE_DOCS`` texts with the smallest digests): :func:`text_digests` on each
partition, :func:`sample_bound` of them all, then :func:`doc_freqs` with that bound on each
partition, summed per feature, and :meth:`simdex.Idf.from_counts` with the corpus's size.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from . import _simdex
from ._simdex import Idf

__all__ = [
    "join_design",
    "bucket_keys",
    "bucket_pairs",
    "components",
    "doc_freqs",
    "text_digests",
    "sample_bound",
    "Idf",
]


def join_design(n: int, k: int, name: str | None = None) -> tuple[str, int]:
    """(design name, number of tables) for a distributed self-join of ``n`` fingerprints within
    ``k`` bits: the radius-0 design with the least modelled cost, per fingerprint, of one
    shuffle per table plus the bucket's pairs (design ``4`` at a million for k = 3, ``10`` at a
    billion). With ``name``, that design instead (an error unless it probes with radius 0)."""
    return _simdex.join_design(n, k, name)


def bucket_keys(fingerprints: np.ndarray, design: str, k: int, table: int) -> np.ndarray:
    """The bucket of each fingerprint in table ``table`` of ``design`` (its permuted prefix, as
    ``uint64``): the shuffle key, together with ``table``."""
    return _simdex.bucket_keys(fingerprints, design, k, table)


def bucket_pairs(
    fingerprints: np.ndarray, design: str, k: int, table: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Table ``table``'s share of the self-join of ``fingerprints`` (which may mix several of its
    buckets): ``(i, j, distance)`` index arrays, ``fingerprints[i] < fingerprints[j]``, for every
    pair within ``k`` sharing a bucket that no earlier table covers. Equal fingerprints pair at
    distance 0 in table 0; pass distinct fingerprints to keep groups of copies linear."""
    return _simdex.bucket_pairs(fingerprints, design, k, table)


def components(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Connected components of the edges ``a[i] - b[i]`` (``uint64`` node labels):
    ``(nodes, roots)``, the distinct nodes ascending and the smallest node of each one's
    component."""
    return _simdex.components(a, b)


def doc_freqs(
    texts: Sequence[str] | Any,
    *,
    shingle: int = 2,
    html: bool = False,
    threads: int | None = None,
    bound: int | None = None,
) -> tuple[np.ndarray, np.ndarray, int]:
    """One partition's document frequencies: ``(features, counts, docs)``, the feature hashes
    ascending, how many of the texts hold each, and how many texts were counted (with
    ``bound``, only the texts whose :func:`text_digests` are at most ``bound``). Sum the counts
    per feature over all partitions and pass them to :meth:`simdex.Idf.from_counts` (with
    ``corpus=`` the corpus's size): with the bound of :func:`sample_bound`, the result equals
    :meth:`simdex.Idf.learn` on the whole corpus. ``texts`` as for :func:`simdex.hash`."""
    from . import _texts

    return _simdex.doc_freqs(
        _texts(texts), shingle=shingle, html=html, threads=threads, bound=bound
    )


def text_digests(
    texts: Sequence[str] | Any, *, html: bool = False, threads: int | None = None
) -> np.ndarray:
    """Each text's IDF sample digest (``uint64``): xxh3-64 of the text that is tokenized."""
    from . import _texts

    return _simdex.text_digests(_texts(texts), html=html, threads=threads)


def sample_bound(digests: np.ndarray) -> int | None:
    """The IDF sample's bound for a corpus with these digests (each partition may pass only its
    ``IDF_SAMPLE_DOCS`` smallest distinct ones): the largest of the ``IDF_SAMPLE_DOCS``
    smallest distinct digests, or ``None`` when there are no more than that (every text is in
    the sample)."""
    d = np.unique(np.asarray(digests, dtype=np.uint64))
    n = _simdex.IDF_SAMPLE_DOCS
    return int(d[n - 1]) if len(d) > n else None
