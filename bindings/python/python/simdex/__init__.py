"""simdex: exact near-duplicate search over 64-bit simhash fingerprints.

Documents become fingerprints with :func:`hash`; :class:`Index` (read-only, built once) and
:class:`Store` (writable, durable) answer "which stored fingerprints are within k bits of F?"
exactly; :func:`dedup` clusters a corpus. Fingerprints are ``numpy.ndarray[uint64]`` in and out,
read in place; every heavy call releases the GIL and runs on all cores (``threads=`` to limit:
at least 1, and more than the machine's cores is lowered to them). Long calls (``Index.build``,
``Store.insert``/``delete``) stop on Ctrl-C; a build stopped so publishes nothing.

Processes: an :class:`Index` is read-only and safe to use from forked children
(``multiprocessing`` with fork); parallel calls in a child run on thread pools of its own. A
:class:`Store` opened for writing may be queried from a forked child but written only by the
process that opened it (:class:`ForkError` otherwise).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from . import _simdex
from ._errors import (
    CancelledError,
    CorruptError,
    Error,
    ForkError,
    InvalidArgument,
    IoError,
    LockedError,
    PoisonedError,
    RecoveryWarning,
    UnsupportedError,
)
from ._simdex import Idf, Index, Store
from .client import Client, ServerError

__version__: str = _simdex.__version__

__all__ = [
    "hash",
    "dedup",
    "Idf",
    "Index",
    "Store",
    "Client",
    "ServerError",
    "Error",
    "CorruptError",
    "UnsupportedError",
    "InvalidArgument",
    "LockedError",
    "IoError",
    "PoisonedError",
    "CancelledError",
    "ForkError",
    "RecoveryWarning",
]


def _is_arrow(x: Any) -> bool:
    """True for any Arrow producer (the PyCapsule interface: pyarrow, polars, DuckDB...)."""
    return hasattr(x, "__arrow_c_stream__") or hasattr(x, "__arrow_c_array__")


def _texts(texts: Any) -> Any:
    """``texts`` as the compiled module takes them: an Arrow producer as it is, anything else
    as a sequence (a generator is consumed once into a list)."""
    if _is_arrow(texts) or isinstance(texts, (str, bytes, np.ndarray, list, tuple)):
        return texts
    return list(texts)


def _hash(
    texts: Any, shingle: int, idf: Idf | None, html: bool, threads: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """(fingerprints, no_features) for texts: a sequence of str or any Arrow string array."""
    return _simdex.hash_texts(_texts(texts), shingle=shingle, idf=idf, html=html, threads=threads)


def hash(
    texts: Sequence[str] | Any,
    *,
    shingle: int = 2,
    idf: Idf | None = None,
    html: bool = False,
    threads: int | None = None,
) -> np.ndarray:
    """The 64-bit simhash of each text, as ``numpy.ndarray[uint64]`` (one per input row).

    ``texts`` is a sequence of str (None is empty text) or any Arrow array or stream of strings
    (pyarrow, polars, DuckDB... through the Arrow PyCapsule interface: ``string``,
    ``large_string``, ``string_view`` or dictionary-encoded; read in place, nulls as empty text).
    One str is a TypeError (it would hash its characters).
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
    verify_tokens: str = "unicode",
    weights: str = "auto",
    mem_bytes: int = 1 << 30,
    tmp: str | None = None,
    threads: int | None = None,
) -> Any:
    """Cluster near-duplicates: rows whose fingerprints are within ``k`` bits, transitively.

    ``data`` is texts (as for :func:`hash`; a numpy array of str included) or a numpy array of
    fingerprints (``uint64``). Returns
    ``clusters``, an int64 array giving each row the smallest row number of its cluster (so
    ``clusters == arange(n)`` marks the rows to keep); with ``return_pairs=True`` returns
    ``(clusters, (row_a, row_b, distance))`` with every near-duplicate pair once, row_a < row_b.
    For texts, ``weights="auto"`` (the default) weights shingles by IDF learned from ``data``
    itself, so that what many pages share (navigation, boilerplate) does not make them look
    alike; ``weights="count"`` uses counts only (the fingerprints of :func:`hash`).
    Texts without any feature (empty or punctuation-only) pair with nothing. The join runs in
    bounded memory (``mem_bytes``, spilling under ``tmp``) on all cores.

    ``verify=T`` (texts only) gives exact answers: candidate rows within ``candidate_k`` bits
    (default 11) are kept only if their word 3-shingle sets have Jaccard >= T, and clusters
    come from kept pairs. Above 7, each text's prefix (the rarest tenth of its shingles at
    T = 0.9) is computed first, and the candidates are the pairs within ``candidate_k`` whose
    prefixes share a shingle (two sets at Jaccard >= T always do): the same answers as
    comparing every pair within ``candidate_k``, without comparing most of them. Within ``mem_bytes``, the candidate pairs take at most half (a join
    with more is verified a part at a time) and the shingle sets held at once the rest (more
    take more passes over the texts);
    pairs are then ``(row_a, row_b, distance, jaccard)``. ``verify_tokens`` is how the
    shingles' words are cut: ``"unicode"`` (the fingerprint's tokens) or ``"whitespace"`` (split
    at white space, as written), as ``simdex dedup --verify-tokens``. Fingerprints for verification use
    count weights (the widest candidate net), as ``simdex dedup --verify`` does.
    """
    if isinstance(data, (str, bytes)):
        raise TypeError("data must be a sequence of texts or a uint64 array, not a single string")
    fingerprints = isinstance(data, np.ndarray) and data.dtype.kind not in "UO"
    if not fingerprints:
        data = _texts(data)
    if verify is not None:
        if fingerprints:
            raise TypeError("verify needs the texts, not fingerprints")
        texts = data
        fps, _ = _hash(texts, shingle, idf, html, threads)
        clusters, pairs = _simdex.verify_texts(
            texts, fps, float(verify), candidate_k, html=html, mem_bytes=mem_bytes, tmp=tmp,
            threads=threads, tokens=verify_tokens,
        )
        return (clusters, pairs) if return_pairs else clusters
    skip = None
    if weights not in ("auto", "count", "idf"):
        raise InvalidArgument(f"weights must be auto, count or idf, not {weights!r}")
    if fingerprints:
        fps = data
    else:
        if idf is None and weights in ("auto", "idf"):
            # The whole corpus is at hand: discount what many documents share (templates,
            # boilerplate), as `simdex dedup` does by default.
            idf = Idf.learn(data, shingle=shingle, html=html, threads=threads)
        fps, skip = _hash(data, shingle, idf, html, threads)
    clusters, pairs = _simdex.dedup_fingerprints(
        fps, k, skip, return_pairs=return_pairs, mem_bytes=mem_bytes, tmp=tmp, threads=threads
    )
    return (clusters, pairs) if return_pairs else clusters
