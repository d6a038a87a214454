"""simdex: exact near-duplicate search over 64-bit simhash fingerprints.

Documents become fingerprints with :func:`hash`; :class:`Index` (read-only, built once) and
:class:`Store` (writable, durable) answer "which stored fingerprints are within k bits of F?"
exactly; :func:`dedup` clusters a corpus. Fingerprints are ``numpy.ndarray[uint64]`` in and out,
read in place; every heavy call releases the GIL and runs on all cores (``threads=`` to limit).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from . import _simdex
from ._errors import (
    CancelledError,
    CorruptError,
    Error,
    InvalidArgument,
    IoError,
    LockedError,
    PoisonedError,
    UnsupportedError,
)
from ._simdex import Idf, Index, Store

__version__: str = _simdex.__version__

__all__ = [
    "hash",
    "dedup",
    "Idf",
    "Index",
    "Store",
    "Error",
    "CorruptError",
    "UnsupportedError",
    "InvalidArgument",
    "LockedError",
    "IoError",
    "PoisonedError",
    "CancelledError",
]


def _arrow_chunks(texts: Any) -> list[Any] | None:
    """The chunks of a pyarrow string array or chunked array, or None if `texts` is not one."""
    mod = type(texts).__module__
    if not mod.startswith("pyarrow"):
        return None
    import pyarrow as pa

    chunks = texts.chunks if isinstance(texts, pa.ChunkedArray) else [texts]
    for c in chunks:
        if not (pa.types.is_string(c.type) or pa.types.is_large_string(c.type)):
            raise TypeError(f"texts must be a string array, got Arrow type {c.type}")
    return chunks


def _arrow_spec(c: Any) -> tuple[int, int, int, int, int, int, bool]:
    """The buffers of one Arrow string array, as the compiled module reads them in place (the
    caller keeps ``c`` alive for the call)."""
    import pyarrow as pa

    validity, offsets, data = c.buffers()[:3]
    return (
        offsets.address,
        data.address if data is not None else 0,
        data.size if data is not None else 0,
        validity.address if validity is not None else 0,
        c.offset,
        len(c),
        pa.types.is_large_string(c.type),
    )


def _hash(
    texts: Any, shingle: int, idf: Idf | None, html: bool, threads: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """(fingerprints, no_features) for texts: a list of str or a pyarrow string array."""
    chunks = _arrow_chunks(texts)
    kw = dict(shingle=shingle, idf=idf, html=html, threads=threads)
    if chunks is None:
        if isinstance(texts, (str, bytes)):
            raise TypeError("texts must be a sequence of str, not a single string")
        return _simdex.hash_texts(list(texts), **kw)
    parts = [_simdex.hash_arrow(_arrow_spec(c), **kw) for c in chunks]
    if not parts:
        return np.zeros(0, np.uint64), np.zeros(0, bool)
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def hash(
    texts: Sequence[str] | Any,
    *,
    shingle: int = 2,
    idf: Idf | None = None,
    html: bool = False,
    threads: int | None = None,
) -> np.ndarray:
    """The 64-bit simhash of each text, as ``numpy.ndarray[uint64]`` (one per input row).

    ``texts`` is a list of str or a pyarrow string array (read in place, nulls as empty text).
    Features are word ``shingle``-shingles after NFKC, lowercasing and Unicode word splitting
    (character bigrams for scripts without spaces), weighted by count, times ``idf`` weights if
    given; ``html=True`` hashes a page's visible text. Equal to ``simdex hash`` on the same text
    (specified in format-spec/simhash.md).
    """
    return _hash(texts, shingle, idf, html, threads)[0]


def dedup(
    data: Sequence[str] | np.ndarray | Any,
    *,
    k: int = 3,
    shingle: int = 2,
    idf: Idf | None = None,
    html: bool = False,
    return_pairs: bool = False,
    verify: float | None = None,
    candidate_k: int = 11,
    weights: str = "auto",
    mem_bytes: int = 1 << 30,
    tmp: str | None = None,
    threads: int | None = None,
) -> Any:
    """Cluster near-duplicates: rows whose fingerprints are within ``k`` bits, transitively.

    ``data`` is texts (as for :func:`hash`) or a ``uint64`` fingerprint array. Returns
    ``clusters``, an int64 array giving each row the smallest row number of its cluster (so
    ``clusters == arange(n)`` marks the rows to keep); with ``return_pairs=True`` returns
    ``(clusters, (row_a, row_b, distance))`` with every near-duplicate pair once, row_a < row_b.
    For texts, ``weights="auto"`` (the default) weights shingles by IDF learned from ``data``
    itself, so that what many pages share (navigation, boilerplate) does not make them look
    alike; ``weights="count"`` uses counts only (the fingerprints of :func:`hash`).
    Texts without any feature (empty or punctuation-only) pair with nothing. The join runs in
    bounded memory (``mem_bytes``, spilling under ``tmp``) on all cores.

    ``verify=T`` (texts only) gives exact answers: candidate rows within ``candidate_k`` bits
    (default 11; above 7 an all-pairs scan of the fingerprints, at most 500 000 rows) are kept
    only if their word 3-shingle sets have Jaccard >= T, and clusters come from kept pairs;
    pairs are then ``(row_a, row_b, distance, jaccard)``. Fingerprints for verification use
    count weights (the widest candidate net), as ``simdex dedup --verify`` does.
    """
    if verify is not None:
        if isinstance(data, np.ndarray):
            raise TypeError("verify needs the texts, not fingerprints")
        texts = data.to_pylist() if _arrow_chunks(data) is not None else list(data)
        texts = [t or "" for t in texts]
        fps, _ = _hash(texts, shingle, idf, html, threads)
        clusters, pairs = _simdex.verify_texts(
            texts, fps, float(verify), candidate_k, html=html, mem_bytes=mem_bytes, tmp=tmp,
            threads=threads,
        )
        return (clusters, pairs) if return_pairs else clusters
    skip = None
    if weights not in ("auto", "count", "idf"):
        raise InvalidArgument(f"weights must be auto, count or idf, not {weights!r}")
    if isinstance(data, np.ndarray):
        fps = data
    else:
        if idf is None and weights in ("auto", "idf"):
            # The whole corpus is at hand: discount what many documents share (templates,
            # boilerplate), as `simdex dedup` does by default.
            texts = data.to_pylist() if _arrow_chunks(data) is not None else list(data)
            data = [t or "" for t in texts]
            idf = Idf.learn(data, shingle=shingle, html=html, threads=threads)
        fps, skip = _hash(data, shingle, idf, html, threads)
    clusters, pairs = _simdex.dedup_fingerprints(
        fps, k, skip, return_pairs=return_pairs, mem_bytes=mem_bytes, tmp=tmp, threads=threads
    )
    return (clusters, pairs) if return_pairs else clusters
