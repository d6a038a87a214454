"""Type stubs of the compiled module simdex._simdex (re-exported by simdex)."""

import datetime
from os import PathLike
from collections.abc import Sequence
from typing import Any, Literal, overload

import numpy as np
import numpy.typing as npt

_Path = str | PathLike[str]
_U64 = npt.NDArray[np.uint64]
_U32 = npt.NDArray[np.uint32]
_I64 = npt.NDArray[np.int64]
# A sequence of str (None = empty text), or any Arrow array or stream of strings: an object with
# ``__arrow_c_array__`` or ``__arrow_c_stream__`` (pyarrow, polars, DuckDB, nanoarrow...).
_Texts = Any

__version__: str

class Idf:
    """IDF weights learned from a corpus; pass as ``idf=`` to :func:`simdex.hash`."""

    @staticmethod
    def learn(
        texts: _Texts, *, shingle: int = 2, html: bool = False, threads: int | None = None
    ) -> Idf:
        """Learn weights from texts (each document's distinct shingles): from the corpus's IDF
        sample, the ``IDF_SAMPLE_DOCS`` texts with the smallest digests (all texts when there
        are fewer), scaled to the whole corpus; the table ``simdex dedup`` and the Spark job
        learn from the same texts (format-spec/simhash.md, "IDF weights")."""
    @staticmethod
    def from_counts(
        features: _U64, counts: _U64, docs: int, *, shingle: int = 2, corpus: int | None = None
    ) -> Idf:
        """Weights from document frequencies counted elsewhere (per feature, summed over
        partitions: see :func:`simdex.distributed.doc_freqs`) over ``docs`` documents, the
        sample of a corpus of ``corpus`` documents (default ``docs``); equal to :meth:`learn`
        on the whole corpus when the counted documents are its sample."""
    @staticmethod
    def from_text(text: str) -> Idf:
        """A table from its text form (:meth:`to_text`)."""
    def to_text(self) -> str:
        """The text form :meth:`save` writes. Tables also pickle (e.g. to Spark executors)."""
    @staticmethod
    def load(path: _Path) -> Idf:
        """Read a table written by :meth:`save` or ``simdex idf --out``."""
    def save(self, path: _Path) -> None:
        """Write the table in the text format ``simdex hash --idf`` reads."""
    @property
    def shingle(self) -> int:
        """The shingle size the weights were learned with."""
    @property
    def docs(self) -> int:
        """Documents learned from."""
    def __len__(self) -> int: ...

class Index:
    """A read-only index of fingerprints: t permuted, compressed, sorted tables on disk.

    Safe to share between threads; every query method releases the GIL.
    """

    @staticmethod
    def build(
        path: _Path,
        fingerprints: _U64,
        *,
        k: int = 3,
        design: str = "auto",
        codec: Literal["h-delta", "gap"] = "h-delta",
        block_size: int | None = None,
        segment_keys: int | None = None,
        mem_bytes: int = 1 << 30,
        threads: int | None = None,
    ) -> Index:
        """Build an index at ``path`` (which must not exist) and open it. Duplicates and any
        order are fine; ``k`` is the largest distance it must answer exactly. ``block_size``
        and ``segment_keys`` (keys per skip entry of a block, 0 for none) default to the
        automatic layout: blocks in segments of 20 keys, of 4096 bytes for an index of up to
        1 GiB and 1024 above (larger at billions of fingerprints)."""
    @staticmethod
    def open(path: _Path, *, in_memory: bool = False, populate: bool = False) -> Index:
        """Open an index (memory-mapped; ``in_memory=True`` reads it into RAM instead).

        In memory, every block's checksum is checked at open and the tables are held in huge
        pages where the kernel allows, safe from files changed underneath and from the page
        cache's evictions, at the cost of its size in RAM and the read time. Its queries are
        as fast as ``populate=True``'s where the kernel maps the files in 2 MiB pages (a fresh
        build, docs/log/benchmarks.md, “the 1B, 100M, 10M and 1M rows on 16 cores”) and faster where it cannot.

        ``populate=True`` reads every table into the page cache and maps all its pages now
        (Linux; ignored elsewhere) and checks every block's checksum: no page faults or
        first-read checks while querying, latency flat from the first query, at the cost of
        open time. For services that open once and query for long."""
    def near(self, fingerprint: int, k: int | None = None) -> tuple[_U64, _U32]:
        """(fingerprints, distances) within ``k`` (default: the index's k), by distance."""
    def has_near(self, fingerprint: int, k: int | None = None) -> bool:
        """True if some stored fingerprint is within ``k``."""
    def near_many(
        self, fingerprints: _U64, k: int | None = None, *, threads: int | None = None
    ) -> tuple[_I64, _U64, _U32]:
        """(query_index, fingerprint, distance) of every match of every query, by query.

        A batch of at least 4096 queries whose probes of each table number an eighth of
        the stored fingerprints (an eighth as many queries as stored where a design probes
        each table once; far fewer with a probe radius, the designs of k >= 5) is
        answered by one scan of the tables, as ``batch`` does: the same answers, faster.
        Ctrl-C stops a long call soon (KeyboardInterrupt)."""
    @overload
    def batch(
        self,
        fingerprints: _U64,
        k: int | None = None,
        *,
        within: Literal[False] = False,
        shard: tuple[int, int] | None = None,
        threads: int | None = None,
    ) -> tuple[_U64, _U64, _U32]: ...
    @overload
    def batch(
        self,
        fingerprints: _U64,
        k: int | None = None,
        *,
        within: Literal[True],
        shard: tuple[int, int] | None = None,
        threads: int | None = None,
    ) -> tuple[tuple[_U64, _U64, _U32], tuple[_U64, _U64, _U32]]: ...
    def __len__(self) -> int: ...
    @property
    def k(self) -> int:
        """The largest k answered exactly."""
    @property
    def design(self) -> str:
        """The design's name."""
    @property
    def path(self) -> str:
        """The index directory."""
    def stats(self) -> dict[str, Any]:
        """Sizes: keys, design, k, tables, block_size, segment_keys, aligned_tables,
        disk_bytes, bits_per_key_per_table, memory_bytes, probes_per_query."""
    def counters(self) -> dict[str, int]:
        """queries, probes, blocks_decoded, keys_decoded, candidates since opening."""
    def verify(self, *, threads: int | None = None) -> dict[str, int]:
        """Check every checksum and structure; raises CorruptError."""

class Store:
    """A writable, crash-safe store of (fingerprint, document id) pairs.

    Use as a context manager (``with simdex.Store(p, create=True) as s:``). Safe to share
    between threads: queries run in parallel, writes serialize.
    """

    def __init__(
        self,
        path: _Path,
        *,
        create: bool = False,
        k: int | None = None,
        design: str | None = None,
        codec: Literal["h-delta", "gap"] | None = None,
        block_size: int | None = None,
        expected: int = 10_000_000,
        sync: str = "per-write",
        max_delta: int = 1 << 20,
        mem_bytes: int = 1 << 30,
        read_only: bool = False,
        populate: bool = False,
        documents: bool = False,
        html: bool | None = None,
        shingle: int | None = None,
        learn_from: _Texts | None = None,
        exact: float | None = None,
    ) -> None:
        """Open the store at ``path``, creating it first if ``create`` and it does not exist
        (a new store gets k 3, design auto, codec h-delta and block size auto unless given).

        **Document stores.** With ``documents=True`` a new store is created with a *recipe*
        (how documents become fingerprints: ``shingle`` words per feature, default 2; ``html``
        pages or plain text; count weights, or IDF learned from every text of ``learn_from``
        (read only when the store is created), then frozen) and keeps per document a 128-byte
        sketch and its id for :meth:`ingest`. With ``exact=T`` it also keeps each document's
        word 3-shingle set (about 8 bytes per distinct shingle; the sketch is then 8 bytes and
        decides nothing), so that ``ingest(verify=T2)`` for ``T2 >= T`` compares exact
        Jaccard similarities; without it ``verify`` compares
        the sketches' estimate (for stores too large for exact data). Use
        ``k=7`` for verified ingest (near-duplicates at Jaccard 0.95 lie up to 7 bits apart on
        template-heavy pages). Opening an existing document store with ``shingle`` or ``html``
        other than its recipe's raises InvalidArgument.
        ``k``, ``design``, ``codec`` and ``block_size`` given for a store that exists must match
        it (InvalidArgument otherwise: they are never silently ignored). ``sync`` is
        ``"per-write"``, ``"group:<ms>"`` or ``"manual"``; ``populate=True`` maps every table
        page of each generation as it is opened (see ``Index.open``). A torn log tail found
        on opening is reported as a :class:`simdex.RecoveryWarning` (see :attr:`recovery`).

        **fork().** A process forked after the store was opened for writing may query through
        the inherited object but not write, flush or compact (:class:`simdex.ForkError`):
        two processes appending to one log would lose each other's acknowledged writes. Open
        the store in the child after the parent has closed it, or send writes to the parent."""
    @property
    def recovery(self) -> dict[str, Any]:
        """What opening found and did: ``logs`` and ``records`` replayed, ``torn`` (a list of
        ``(log path, offset of the valid end, bytes dropped)``), ``removed`` leftovers."""
    def insert(self, fingerprints: _U64, ids: _U64) -> None:
        """Store ``fingerprints[i]`` for document ``ids[i]``; durable per ``sync``. ``ids``
        may be int64 if none is negative. Ctrl-C stops a long call between steps of 65 536
        pairs (KeyboardInterrupt); the steps before it stay applied. A document store refuses
        raw fingerprints (InvalidArgument): use ``ingest``."""
    def ingest(
        self,
        ids: _U64 | Sequence[int] | Sequence[str] | Any,
        texts: _Texts,
        *,
        verify: float | None = None,
        k: int | None = None,
        check_only: bool = False,
        store_only: bool = False,
        threads: int | None = None,
    ) -> dict[str, Any]:
        """Check each document against everything stored before it — including the earlier
        documents of this call — and store the new ones (a document store only). The answers
        are those of feeding the documents one by one, however the input is split into calls.

        ``ids``: a uint64/int64 array or list of ints, or strings (a list, or an Arrow string
        array: URLs, dataset keys), returned in answers. One id rule everywhere: a str that is
        a canonical decimal ("5", not "05") is the numeric id 5, as in the CLI's JSON Lines;
        None or an Arrow null is an error naming its position. ``texts``: str sequence or Arrow
        strings. A duplicate is a stored document whose fingerprint is within ``k`` (default:
        the store's k) and, with ``verify=T``, whose word 3-shingle Jaccard is at least T:
        exact in a store created with ``exact=``, else estimated from the stored sketches. ``check_only=True`` stores nothing;
        ``store_only=True`` compares with the stored documents alone, not with the earlier
        documents of the call.

        Returns ``{"duplicate": bool[n], "matched": list (the most similar stored document's
        id, or None), "similarity": float64[n] (NaN if none), "distance": int32[n] (-1 if
        none), "stored": bool[n], "already_stored": bool[n]}``. A document whose id is already
        stored with the same fingerprint and sketch (and, in a store created with ``exact=``,
        the same shingle set) is ``already_stored`` (a retry), never a duplicate of itself; a
        changed document under a stored id replaces it. Documents
        without words are neither duplicates nor stored. The GIL is released; Ctrl-C stops
        between steps of 4096 documents (the steps before it stay stored)."""
    @property
    def recipe(self) -> dict[str, Any] | None:
        """A document store's recipe (``shingle``, ``html``, ``weights``, ``sketch_bins``,
        ``sketch_bits``, ``exact``: the threshold its shingle sets were kept for, or None when
        its similarities are sketch estimates); None for a store of raw fingerprints."""
    def delete(self, ids: _U64 | Sequence[int] | Sequence[str] | Any) -> None:
        """Delete every pair of each document id (Ctrl-C as for :meth:`insert`): numbers, or a
        document store's ids as given to :meth:`ingest` (str such as URLs, or ints; a list or
        an Arrow string array). Ids with no stored document are passed over."""
    def expire(
        self, *, before: float | datetime.datetime | None = None, before_seq: int | None = None
    ) -> int:
        """Delete every document stored before ``before`` (Unix seconds, or a datetime) or
        numbered below ``before_seq`` (see ``stats()['max_seq']``); how many. Only a store
        created with ``exact=`` knows when its documents were stored. :meth:`compact` then
        reclaims their space."""
    def doc_id(self, id: int | str) -> int | None:
        """The store's numeric id of a document id (under the id rule of :meth:`ingest`), if
        a document of that id is stored."""
    def near(self, fingerprint: int, k: int | None = None) -> tuple[_U64, _U32, _U64]:
        """(fingerprint, distance, id) rows within ``k``, by distance, fingerprint, id."""
    def near_many(
        self, fingerprints: _U64, k: int | None = None, *, threads: int | None = None
    ) -> tuple[_I64, _U64, _U32, _U64]:
        """(query_index, fingerprint, distance, id) rows of every query, by query.

        The batch is answered as one: the tables as ``Index.near_many`` answers them, the
        ids of every fingerprint found looked up once. Ctrl-C stops a long call soon
        (KeyboardInterrupt)."""
    def ids_of(self, fingerprint: int) -> _U64:
        """Ids stored with exactly ``fingerprint``."""
    def compact(self) -> bool:
        """Fold the write-ahead log into a new generation; False if there was nothing."""
    def flush(self) -> None:
        """Sync every acknowledged write to stable storage; raises simdex.Error for a failed
        background compaction not reported yet (the writes are in the log either way)."""
    def reopen(self) -> None:
        """A store open read-only: open it again to see what its writer logged since (only
        those records are read; the generation, and an exact store's prefix index, are kept
        while no compaction has replaced them). Raises simdex.InvalidArgument for a store open
        for writing, which sees its own writes."""
    def warm(self) -> None:
        """Build now what the first document check would build: an exact store's prefix
        index, read from every stored set (seconds per million documents), so that a service's
        first answer does not wait for it. Answers are the same either way."""
    def close(self) -> None:
        """Sync and close; later calls raise simdex.Error. Idempotent."""
    def stats(self) -> dict[str, Any]:
        """generation, design, k, fingerprints, pairs, delta_pairs, delta_deletes, table_bytes,
        id_map_bytes, log_bytes, documents, doc_map_bytes, sets_bytes (the shingle sets of a
        store created with ``exact=``), sets_live_bytes (of those, live documents'; compaction
        reclaims the rest), max_seq (documents are numbered 1, 2, ... as they are stored)."""
    def verify(self) -> None:
        """Check every checksum of the live generation; raises CorruptError."""
    @property
    def path(self) -> str:
        """The store directory."""
    @staticmethod
    def merge(a: Store, b: Store, out: _Path) -> None:
        """Write a new store at ``out`` holding the union of ``a`` and ``b``."""
    def __enter__(self) -> Store: ...
    def __exit__(self, *args: object) -> bool: ...

def hash_texts(
    texts: _Texts,
    *,
    shingle: int = 2,
    idf: Idf | None = None,
    html: bool = False,
    threads: int | None = None,
) -> tuple[_U64, npt.NDArray[np.bool_]]: ...
def doc_freqs(
    texts: _Texts,
    *,
    shingle: int = 2,
    html: bool = False,
    threads: int | None = None,
    bound: int | None = None,
) -> tuple[_U64, _U64, int]: ...
def text_digests(texts: _Texts, *, html: bool = False, threads: int | None = None) -> _U64: ...

IDF_SAMPLE_DOCS: int
def jaccard_pairs(
    a: _Texts,
    b: _Texts,
    *,
    t: float,
    html: bool = False,
    threads: int | None = None,
    tokens: str = "unicode",
) -> npt.NDArray[np.float64]: ...
def join_design(n: int, k: int, name: str | None = None) -> tuple[str, int]: ...
def bucket_keys(fingerprints: _U64, design: str, k: int, table: int) -> _U64: ...
def bucket_pairs(
    fingerprints: _U64, design: str, k: int, table: int
) -> tuple[_U32, _U32, _U32]: ...
def components(a: _U64, b: _U64) -> tuple[_U64, _U64]: ...
def dedup_fingerprints(
    fingerprints: _U64,
    k: int,
    skip: npt.NDArray[np.bool_] | None = None,
    *,
    return_pairs: bool = False,
    mem_bytes: int = 1 << 30,
    tmp: _Path | None = None,
    threads: int | None = None,
) -> tuple[_I64, tuple[_I64, _I64, _U32] | None]: ...
def verify_texts(
    texts: _Texts,
    fingerprints: _U64,
    t: float,
    k: int,
    *,
    html: bool = False,
    mem_bytes: int = 1 << 30,
    tmp: _Path | None = None,
    threads: int | None = None,
    tokens: str = "unicode",
) -> tuple[_I64, tuple[_I64, _I64, _U32, npt.NDArray[np.float64]]]: ...
