"""Near-duplicate dedup on Apache Spark: documents in, clusters out, the paper's tables as one
shuffle.

The job, stage by stage (each named in Spark's UI as ``simdex: ...``):

1. **read**: a DataFrame with an id column and a text column (or a fingerprint column). Rows whose
   id or text is null, or that Spark's JSON reader could not parse, are *bad*: reported in
   ``bad`` with a reason, counted, and left out, as ``simdex dedup`` skips bad lines.
2. **idf** (texts, ``weights="auto"``): every partition counts its documents' distinct shingles
   (:func:`simdex.distributed.doc_freqs`), the counts are summed per shingle, and the table is
   broadcast: the same weights ``simdex dedup`` learns in its first pass.
3. **hash**: ``mapInArrow`` hashes each Arrow batch of texts in place (no per-row Python).
   Texts without any word take no part (counted), as in ``simdex dedup``.
4. **join**: each distinct fingerprint goes out once per table of a radius-0 design, keyed by its
   bucket (permuted prefix); after the shuffle each partition lists its buckets' pairs within k
   with the engine's own code, each pair once (the first covering table).
5. **components**: union-find on the driver when the pairs fit (``driver_edge_limit``), else the
   alternating large-star / small-star algorithm in Spark (Kiveris et al., 2014).
6. **output**: every good row with ``id, cluster_id, cluster_size, keep``. The kept row of a
   cluster is its first in input order (the row position Spark reads it at:
   ``monotonically_increasing_id``, file by file, line by line); ``cluster_id`` is the kept
   row's id, so ``keep`` is ``id == cluster_id`` for unique ids. Optionally the pairs
   ``id_a, id_b, distance`` (``id_a`` first in input order), as ``simdex dedup`` prints them.

:func:`batch_against` checks a new batch against a stored index by the shard mechanism of
``simdex batch --shard``. Run ``python -m simdex.spark --help`` for the command-line job.
"""

from __future__ import annotations

import math
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from .. import Idf, Index, InvalidArgument, _errors, _simdex
from .. import distributed as dist
from ._stages import (
    _driver_components,
    _fp_column,
    _hash_rows,
    _join,
    _learn_idf,
    _name_stage,
    _row_pairs,
    _wide_join,
    _spark_components,
    _verify,
)

__all__ = ["DedupResult", "dedup", "batch_against", "read_corpus"]

# Rows of one partition the join stage holds at once (16 bytes each): the partition count is
# chosen so that no partition's share of the shuffle exceeds it.
_ROWS_PER_JOIN_PARTITION = 4_000_000


@dataclass
class DedupResult:
    """What :func:`dedup` produced. DataFrames are lazy until written or collected, except that
    the pairs and labels behind them are computed (and cached) by :func:`dedup` itself."""

    docs: Any
    """Every good row: ``id, cluster_id, cluster_size, keep``."""
    pairs: Any
    """``id_a, id_b, distance`` for every near-duplicate pair (None unless ``pairs=True``)."""
    bad: Any
    """Rows left out: ``id, reason``."""
    stats: dict[str, Any] = field(default_factory=dict)
    """Counts: documents, bad, featureless, distinct fingerprints, the design, pairs (of rows),
    fingerprint pairs, clusters (2+ rows), removed, and the component method used."""
    _cached: list[Any] = field(default_factory=list, repr=False)

    def unpersist(self) -> None:
        """Release the executors' cached fingerprints and pairs behind the DataFrames. Spark
        keeps them until told (they are what makes ``docs`` and ``pairs`` cheap to write), so a
        session that runs many jobs should call this (or use the result in a ``with`` block)
        once the outputs are written; the DataFrames stay usable but are recomputed."""
        for df in self._cached:
            df.unpersist()
        self._cached.clear()

    def __enter__(self) -> "DedupResult":
        return self

    def __exit__(self, *exc: object) -> None:
        self.unpersist()

    def write(self, out: str, *, mode: str = "error") -> None:
        """Write ``out/docs`` (Parquet), ``out/pairs`` (Parquet, if computed), ``out/remove``
        (Parquet, one column ``id``: the rows ``keep`` is false for; an id holding a newline
        stays one id) and ``out/bad`` (Parquet). ``mode="overwrite"`` first deletes all four,
        so that no output of an earlier run (say its pairs) is left beside the new ones."""
        from pyspark.sql import functions as F

        spark = self.docs.sparkSession
        sc = spark.sparkContext
        with _engine_errors():
            if mode == "overwrite":
                _delete_outputs(spark, out, _OUTPUTS)
            sc.setJobDescription("simdex: write")
            self.docs.write.mode(mode).parquet(f"{out}/docs")
            if self.pairs is not None:
                self.pairs.write.mode(mode).parquet(f"{out}/pairs")
            removed = self.docs.where(~F.col("keep")).select("id")
            removed.write.mode(mode).parquet(f"{out}/remove")
            self.bad.write.mode(mode).parquet(f"{out}/bad")
            sc.setJobDescription(None)


# What `DedupResult.write` writes under its output directory.
_OUTPUTS = ("docs", "pairs", "remove", "bad")


def _delete_outputs(spark: Any, out: str, names: tuple[str, ...]) -> None:
    """Delete ``out/<name>`` for each name, on whatever file system ``out`` is (Hadoop's API)."""
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    for name in names:
        p = jvm.org.apache.hadoop.fs.Path(f"{out}/{name}")
        fs = p.getFileSystem(conf)
        if fs.exists(p):
            fs.delete(p, True)


@contextmanager
def _engine_errors() -> Iterator[None]:
    """An engine error raised on an executor reaches the driver as pyspark's PythonException
    ("An exception was thrown from the Python worker: ..." and a traceback); re-raise it as
    the engine's own class and message, as the same call on one machine would."""
    try:
        yield
    except Exception as e:
        if type(e).__name__ != "PythonException":
            raise
        found = re.findall(r"simdex\._errors\.(\w+): ([^\n]*)", str(e))
        if not found:
            raise
        cls, msg = found[-1]
        raise getattr(_errors, cls, _errors.Error)(msg) from None


def read_corpus(spark: Any, path: str, *, format: str | None = None, id_column: str = "id",
                text_column: str | None = "text", fingerprint_column: str | None = None) -> Any:
    """Read Parquet or JSON Lines (by ``format``, or by the path's suffix: ``.parquet`` /
    ``.jsonl`` / ``.json``).

    JSON Lines of documents are read as lines of text and parsed on the executors by the rule
    ``simdex dedup --jsonl`` applies (format-spec/simhash.md, "JSON Lines input"): the same
    documents, the same ids (an integer id is kept as its decimal text), and every bad line in
    a ``_bad`` column with the CLI's reason, which :func:`dedup` reports in ``bad``. Blank lines
    are skipped. JSON Lines of fingerprints (``fingerprint_column``) are read by Spark's JSON
    reader with a fixed schema (every column a string) and a ``_corrupt_record`` column."""
    from pyspark.sql import types as T

    fmt = format or ("parquet" if path.rstrip("/").endswith(".parquet") else "json")
    if fmt == "parquet":
        return spark.read.parquet(path)
    if fmt not in ("json", "jsonl"):
        raise InvalidArgument(f"format must be parquet or jsonl, not {fmt!r}")
    if fingerprint_column is None:
        if (id_column, text_column) != ("id", "text"):
            raise InvalidArgument(
                'JSON Lines documents have the fields "id" and "text" (the CLI\'s rule); '
                "rename the columns after reading, or give Parquet"
            )
        return _read_jsonl_docs(spark, path)
    cols = [c for c in (id_column, text_column, fingerprint_column) if c]
    schema = T.StructType(
        [T.StructField(c, T.StringType()) for c in cols]
        + [T.StructField("_corrupt_record", T.StringType())]
    )
    return (
        spark.read.schema(schema)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", "_corrupt_record")
        .json(path)
    )


def _read_jsonl_docs(spark: Any, path: str) -> Any:
    """``id, text, _bad`` of every non-blank line, parsed by the engine (see
    :func:`read_corpus`); lines end at ``\\n`` only, as the CLI splits them."""
    import pyarrow as pa

    from .. import _simdex

    def parse(batches: Iterator[Any]) -> Iterator[Any]:
        for b in batches:
            ids, texts, why, blank = _simdex.parse_jsonl(b.column(0))
            yield pa.RecordBatch.from_arrays(
                [pa.array(ids, pa.string()), pa.array(texts, pa.large_string()),
                 pa.array(why, pa.string())],
                ["id", "text", "_bad"],
            ).filter(pa.array([not x for x in blank], pa.bool_()))

    lines = spark.read.option("lineSep", "\n").text(path)
    return lines.mapInArrow(parse, "id string, text string, _bad string")


def dedup(
    df: Any,
    *,
    id_column: str = "id",
    text_column: str | None = "text",
    fingerprint_column: str | None = None,
    k: int = 3,
    shingle: int = 2,
    weights: str = "auto",
    idf: Idf | None = None,
    html: bool = False,
    design: str | None = None,
    partitions: int | None = None,
    pairs: bool = False,
    components: str = "auto",
    driver_edge_limit: int = 20_000_000,
    verify: float | None = None,
    candidate_k: int | None = None,
    verify_tokens: str = "unicode",
) -> DedupResult:
    """Cluster the near-duplicates of a DataFrame of documents (see the module docs).

    Give ``text_column`` (hashed on the executors; ``weights="auto"`` learns IDF weights from
    the corpus by a distributed count, ``"count"`` uses counts, ``idf=`` a table of your own) or
    ``fingerprint_column`` (longs, or hex strings). ``k`` in 0..=7. ``design`` overrides the join
    design (radius 0 only; default :func:`simdex.distributed.join_design` of the distinct
    fingerprints). ``partitions`` sets the join's shuffle partitions. ``components`` is
    ``"auto"`` (driver when at most ``driver_edge_limit`` fingerprint pairs), ``"driver"`` or
    ``"spark"``. ``pairs=True`` also lists every pair of rows.

    ``verify=T`` (texts only) gives exact answers, as ``simdex dedup --verify jaccard:T`` with
    the same defaults and the same answers: the candidate pairs within ``candidate_k`` bits
    (0..=16, default 11; count weights unless ``weights="idf"`` or ``idf=``) are kept only if
    their word 3-shingle sets have Jaccard >= T, clusters come from kept pairs only, and pairs
    carry a ``jaccard`` column; ``verify_tokens`` as ``simdex dedup --verify-tokens``
    (``"unicode"`` or ``"whitespace"``). Up to 7 bits the candidates come from the bucket join; above,
    from the block join of the distinct fingerprints (``simdex.dedup.wide`` in the Rust
    library, as the CLI runs it), split over the executors. The texts of the candidate pairs
    are read again and joined to them.

    Ids must be unique among the good rows (``out/remove`` names rows by id): repeated ids are
    refused with their count and an example. An engine error on an executor is raised as the
    engine's exception (``simdex.InvalidArgument``...), not as Spark's wrapper.
    """
    with _engine_errors():
        return _dedup(
            df, id_column=id_column, text_column=text_column,
            fingerprint_column=fingerprint_column, k=k, shingle=shingle, weights=weights,
            idf=idf, html=html, design=design, partitions=partitions, pairs=pairs,
            components=components, driver_edge_limit=driver_edge_limit, verify=verify,
            candidate_k=candidate_k, verify_tokens=verify_tokens,
        )


def _dedup(
    df: Any, *, id_column: str, text_column: str | None, fingerprint_column: str | None, k: int,
    shingle: int, weights: str, idf: Idf | None, html: bool, design: str | None,
    partitions: int | None, pairs: bool, components: str, driver_edge_limit: int,
    verify: float | None, candidate_k: int | None, verify_tokens: str = "unicode",
) -> DedupResult:
    """:func:`dedup`, whose errors :func:`_engine_errors` translates."""
    from pyspark import StorageLevel
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    spark = df.sparkSession
    if not 0 <= k <= 7:
        raise InvalidArgument(f"k = {k} is not in 0..=7")
    if components not in ("auto", "driver", "spark"):
        raise InvalidArgument(f"components must be auto, driver or spark, not {components!r}")
    if weights not in ("auto", "count", "idf"):
        raise InvalidArgument(f"weights must be auto, count or idf, not {weights!r}")
    if verify_tokens not in ("unicode", "whitespace"):
        raise InvalidArgument(f"verify_tokens must be unicode or whitespace, not {verify_tokens!r}")
    if (text_column is None) == (fingerprint_column is None):
        raise InvalidArgument("give exactly one of text_column and fingerprint_column")
    for c in (id_column, text_column or fingerprint_column):
        if c not in df.columns:
            raise InvalidArgument(f"no column {c!r} in the input (columns: {df.columns})")
    src = text_column or fingerprint_column
    if verify is not None:
        if text_column is None:
            raise InvalidArgument("verify needs the texts (text_column), not fingerprints")
        if not 0 < verify <= 1:
            raise InvalidArgument(f"verify = {verify} is not in (0, 1]")
        if candidate_k is None:
            candidate_k = _simdex.DEFAULT_CANDIDATE_K
        if not 0 <= candidate_k <= _simdex.MAX_CANDIDATE_K:
            raise InvalidArgument(
                f"candidate_k = {candidate_k} is not in 0..={_simdex.MAX_CANDIDATE_K}"
            )
        # The widest candidate net, as `simdex dedup --verify` casts it.
        k = candidate_k
        if weights == "auto":
            weights = "count"
    scan = k > 7  # verified candidates beyond the index's k: the block join
    if design is not None and not scan:
        dist.join_design(1, k, design)  # an unknown design, or one with radius > 0, fails here
    if text_column is not None and df.schema[text_column].dataType.simpleString() != "string":
        raise InvalidArgument(
            f"text column {text_column!r} has type {df.schema[text_column].dataType.simpleString()},"
            " not string"
        )

    # 1. Rows in input order, and the bad ones with their reason.
    rows = df.withColumn("row", F.monotonically_increasing_id())
    # (condition, reason) in order; a row's reason is the first that holds.
    checks = []
    if "_bad" in df.columns:  # JSON Lines read by `read_corpus`: the engine's reason
        checks.append((F.col("_bad").isNotNull(), F.col("_bad")))
    if "_corrupt_record" in df.columns:
        checks.append((F.col("_corrupt_record").isNotNull(), "not JSON"))
    checks.append((F.col(id_column).isNull(), f"no {id_column!r}"))
    if fingerprint_column is not None:
        fp = _fp_column(F.col(fingerprint_column), df.schema[fingerprint_column].dataType)
        rows = rows.withColumn("fp_in", fp)
        checks.append((F.col(src).isNull(), f"no {src!r}"))
        checks.append((F.col("fp_in").isNull(), f"{src!r} is not a 64-bit fingerprint"))
    else:
        checks.append((F.col(src).isNull(), f"no {src!r} string"))
    reason = F.coalesce(*[F.when(c, m if isinstance(m, Column) else F.lit(m)) for c, m in checks])
    rows = rows.withColumn("bad_reason", reason)
    id_type = df.schema[id_column].dataType

    # 2-3. Fingerprints on the executors (IDF first, when asked), kept with the ids and the bad
    # rows' reasons for every later stage: the input is read once more after the IDF pass.
    if text_column is not None:
        table = idf
        if table is None and weights in ("auto", "idf"):
            texts = rows.where(F.col("bad_reason").isNull()).select(text_column)
            table = _learn_idf(spark, texts, shingle, html)
        idf_bc = spark.sparkContext.broadcast(table) if table is not None else None
        _name_stage(spark, "hash (mapInArrow)")
        src_rows = rows.select("row", F.col(id_column).alias("id"), text_column, "bad_reason")
        hashed = _hash_rows(src_rows, id_type, shingle, idf_bc, html)
    else:
        hashed = rows.select(
            "row", F.col(id_column).alias("id"), F.col("fp_in").alias("fp"),
            F.lit(False).alias("empty"), "bad_reason",
        )
    hashed = hashed.persist(StorageLevel.MEMORY_AND_DISK)
    _name_stage(spark, "hash: count")
    c = hashed.agg(
        F.count("*").alias("n"),
        F.sum(F.col("empty").cast("long")).alias("e"),
        F.sum(F.col("bad_reason").isNotNull().cast("long")).alias("b"),
    ).collect()[0]
    n_all, featureless, n_bad = int(c["n"]), int(c["e"] or 0), int(c["b"] or 0)
    n_good = n_all - n_bad
    bad = hashed.where(F.col("bad_reason").isNotNull()).select(
        "id", F.col("bad_reason").alias("reason")
    )
    good = hashed.where(F.col("bad_reason").isNull()).select("row", "id", "fp", "empty")
    ids = good.select("row", "id")
    _name_stage(spark, "ids: unique")
    repeated = good.groupBy("id").count().where("count > 1")
    n_repeated = repeated.count()
    if n_repeated:
        example = repeated.orderBy("id").first()
        raise InvalidArgument(
            f"{n_repeated} ids appear on more than one row (e.g. {example['id']!r}, "
            f"{example['count']} rows): ids must be unique, since the remove list names rows "
            "by id (give each row a unique id, e.g. its position)"
        )

    # 4. Distinct fingerprints, joined by buckets.
    live = good.where(~F.col("empty")).select("row", "fp")
    groups = live.groupBy("fp").agg(F.count("*").alias("copies")).persist(
        StorageLevel.MEMORY_AND_DISK
    )
    _name_stage(spark, "distinct fingerprints")
    n_distinct = groups.count()
    if scan:
        design_name, tables = "blocks", 0
        parts = partitions or spark.sparkContext.defaultParallelism
        _name_stage(spark, f"candidates: block join within {k} bits, {parts} tasks")
        fp_pairs = _wide_join(spark, groups, k, parts)
    else:
        design_name, tables = dist.join_design(max(n_distinct, 1), k, design)
        parts = partitions or max(
            spark.sparkContext.defaultParallelism,
            math.ceil(n_distinct * tables / _ROWS_PER_JOIN_PARTITION),
        )
        _name_stage(spark, f"join: {tables} tables of design {design_name}, bucket shuffle")
        fp_pairs = _join(spark, groups, design_name, tables, k, parts)
    fp_pairs = fp_pairs.persist(StorageLevel.MEMORY_AND_DISK)
    n_fp_pairs = fp_pairs.count()

    # 5. Clusters: components over distinct fingerprints, then rows by their fingerprint; or,
    # verifying, components over the rows of the verified pairs.
    verified = None
    if verify is not None:
        _name_stage(spark, f"verify: word 3-shingle Jaccard >= {verify} of candidate pairs")
        candidates = _row_pairs(live, fp_pairs).persist(StorageLevel.MEMORY_AND_DISK)
        n_candidates = candidates.count()
        texts = rows.where(F.col("bad_reason").isNull()).select("row", F.col(text_column).alias("text"))
        verified = _verify(candidates, texts, verify, html, verify_tokens).persist(
            StorageLevel.MEMORY_AND_DISK
        )
        edges = verified.select(F.col("ra").alias("a"), F.col("rb").alias("b"))
        n_edges = edges.count()
        candidates.unpersist()  # counted into `verified`, which is cached itself
    else:
        edges, n_edges = fp_pairs, n_fp_pairs
    use_driver = components == "driver" or (
        components == "auto" and n_edges <= driver_edge_limit
    )
    _name_stage(spark, "components (" + ("driver union-find" if use_driver else "large/small-star") + ")")
    rounds = 0
    if use_driver:
        labels = _driver_components(spark, edges)
    else:
        labels, rounds = _spark_components(spark, edges)
    if verified is not None:
        labelled = good.join(labels.withColumnRenamed("node", "row"), "row", "left").select(
            "row", F.lit(False).alias("empty"), F.coalesce("root", "row").alias("ckey")
        )
    else:
        labelled = (
            good.join(labels.withColumnRenamed("node", "fp"), "fp", "left")
            .select(
                "row",
                "empty",
                # A featureless row is its own cluster: keyed by its row, apart from fingerprints.
                F.when(F.col("empty"), F.col("row")).otherwise(F.coalesce("root", "fp")).alias("ckey"),
            )
        )
    clusters = labelled.groupBy("empty", "ckey").agg(
        F.min("row").alias("keep_row"), F.count("*").alias("cluster_size")
    )
    keep_ids = ids.select(F.col("row").alias("keep_row"), F.col("id").alias("cluster_id"))
    docs_out = (
        labelled.join(clusters, ["empty", "ckey"])
        .join(ids, "row")
        .join(keep_ids, "keep_row")
        .select(
            "row",
            "id",
            "cluster_id",
            "cluster_size",
            (F.col("row") == F.col("keep_row")).alias("keep"),
        )
        .drop("row")
    )

    pairs_out = None
    if pairs:
        ida = ids.select(F.col("row").alias("ra"), F.col("id").alias("id_a"))
        idb = ids.select(F.col("row").alias("rb"), F.col("id").alias("id_b"))
        cols = ["id_a", "id_b", "distance"] + (["jaccard"] if verified is not None else [])
        found = verified if verified is not None else _row_pairs(live, fp_pairs)
        pairs_out = found.join(ida, "ra").join(idb, "rb").orderBy("ra", "rb").select(*cols)

    _name_stage(spark, "cluster sizes")
    sizes = clusters.where("cluster_size > 1").agg(
        F.count("*").alias("clusters"), F.sum(F.col("cluster_size") - 1).alias("removed")
    ).collect()[0]
    if verified is not None:
        n_pairs = n_edges
    else:
        # Row pairs without listing them: copies of one fingerprint, then joined fingerprints.
        row_pairs = groups.agg(F.sum(F.col("copies") * (F.col("copies") - 1) / 2)).collect()[0][0]
        ga = groups.select(F.col("fp").alias("a"), F.col("copies").alias("ca"))
        gb = groups.select(F.col("fp").alias("b"), F.col("copies").alias("cb"))
        cross = fp_pairs.join(ga, "a").join(gb, "b").agg(F.sum(F.col("ca") * F.col("cb")))
        n_pairs = int(row_pairs or 0) + int(cross.collect()[0][0] or 0)
    spark.sparkContext.setJobDescription(None)
    stats = {
        "documents": n_good + n_bad,
        "bad": n_bad,
        "featureless": featureless,
        "distinct": n_distinct,
        "design": design_name,
        "tables": tables,
        "join_partitions": parts,
        "fingerprint_pairs": n_fp_pairs,
        "pairs": n_pairs,
        "clusters": int(sizes["clusters"]),
        "removed": int(sizes["removed"] or 0),
        "components": "driver" if use_driver else f"spark ({rounds} rounds)",
    }
    if verified is not None:
        stats["candidate_pairs"] = n_candidates
        stats["verified_pairs"] = n_edges
    cached = [hashed, groups, fp_pairs] + ([verified] if verified is not None else [])
    return DedupResult(docs=docs_out, pairs=pairs_out, bad=bad, stats=stats, _cached=cached)


def batch_against(
    df: Any,
    index: str,
    *,
    id_column: str = "id",
    text_column: str | None = "text",
    fingerprint_column: str | None = None,
    k: int | None = None,
    shingle: int = 2,
    idf: Idf | None = None,
    html: bool | None = None,
    shards: int | None = None,
    verify: float | None = None,
) -> Any:
    """Pairs of a new batch (a DataFrame of documents or fingerprints) against a stored index
    or store: ``id, fingerprint, stored, distance`` (fingerprints as longs; a store adds
    ``stored_id``), each pair once, rows without features or with a null id or text left out.

    Against a **document store** (one made by ``simdex ingest`` or ``Store(documents=True)``)
    with a text column: one row per document of the batch that is a near-duplicate of a stored
    one, ``id, stored_id, similarity, distance`` — its most similar stored document, hashed with
    the store's recipe and, with ``verify=T``, verified by the stored sketches (estimated word
    3-shingle Jaccard >= T). Each document is compared with the store only, so the answer does
    not depend on the partitioning; dedup the batch itself with :func:`dedup`.

    The batch is hashed on the executors (count weights, or ``idf=`` the table the stored
    fingerprints were hashed with). Against an index, its distinct fingerprints are broadcast and
    ``shards`` tasks each scan one slice of every stored table, as ``simdex batch --shard i/N``
    does. Against a store (a directory with ``CURRENT``), each partition of the batch queries
    the store opened read-only. Either must be readable at the same path on every worker."""
    from pyspark.sql import functions as F

    import pyarrow as pa

    from .. import Store

    spark = df.sparkSession
    sc = spark.sparkContext
    if (text_column is None) == (fingerprint_column is None):
        raise InvalidArgument("give exactly one of text_column and fingerprint_column")
    is_store = os.path.exists(os.path.join(index, "CURRENT"))
    # Fail early, on the driver, with the engine's message.
    recipe = None
    if is_store:
        with Store(index, read_only=True) as st:
            recipe = st.recipe
    else:
        Index.open(index)
    if recipe is not None and text_column is not None:
        return _against_documents(df, index, id_column, text_column, k, verify, html)
    if verify is not None:
        raise InvalidArgument(
            "verify= needs a document store (its sketches) and a text column: "
            f"{index} keeps fingerprints only"
        )
    rows = df.withColumn("row", F.monotonically_increasing_id())
    if text_column is not None:
        good = rows.where(F.col(id_column).isNotNull() & F.col(text_column).isNotNull())
        idf_bc = sc.broadcast(idf) if idf is not None else None
        src = good.select("row", F.col(id_column).alias("id"), text_column,
                          F.lit(None).cast("string").alias("bad_reason"))
        hashed = _hash_rows(src, df.schema[id_column].dataType, shingle, idf_bc, bool(html))
        hashed = hashed.where(~F.col("empty")).select("row", "id", "fp")
    else:
        fp = _fp_column(F.col(fingerprint_column), df.schema[fingerprint_column].dataType)
        hashed = rows.select("row", F.col(id_column).alias("id"), fp.alias("fp")).where(
            F.col("fp").isNotNull() & F.col("id").isNotNull()
        )

    if is_store:
        def query(batches: Iterator[Any]) -> Iterator[Any]:
            with Store(index, read_only=True) as st:
                for b in batches:
                    fps = np.ascontiguousarray(b.column(2).to_numpy().view(np.uint64))
                    q, f, d, sid = st.near_many(fps, k, threads=1)
                    yield pa.RecordBatch.from_arrays(
                        [b.column(0).take(pa.array(q)), pa.array(f.view(np.int64)),
                         pa.array(d.astype(np.int32)), pa.array(sid.view(np.int64))],
                        ["row", "stored", "distance", "stored_id"],
                    )

        _name_stage(spark, "against a store: each partition queries it")
        found = hashed.mapInArrow(query, "row long, stored long, distance int, stored_id long")
        out = found.join(hashed, "row")
        return out.orderBy("row", "stored", "stored_id").select(
            "id", F.col("fp").alias("fingerprint"), "stored", "distance", "stored_id"
        )

    _name_stage(spark, "batch: distinct fingerprints to the driver")
    batch = hashed.select("fp").distinct().toArrow().column("fp").to_numpy()
    batch = np.ascontiguousarray(np.sort(batch.astype(np.int64).view(np.uint64)))
    bc = sc.broadcast(batch)
    n = shards or sc.defaultParallelism

    def scan(batches: Iterator[Any]) -> Iterator[Any]:
        idx = Index.open(index)
        for b in batches:
            for s in b.column(0).to_numpy():
                bf, st, d = idx.batch(bc.value, k, shard=(int(s), n), threads=1)
                yield pa.RecordBatch.from_arrays(
                    [pa.array(bf.view(np.int64)), pa.array(st.view(np.int64)),
                     pa.array(d.astype(np.int32))],
                    ["fp", "stored", "distance"],
                )

    _name_stage(spark, f"batch: {n} shards of every stored table")
    found = (
        spark.range(n).repartition(n).mapInArrow(scan, "fp long, stored long, distance int")
    )
    out = found.join(hashed, "fp")
    return out.orderBy("row", "stored").select(
        "id", F.col("fp").alias("fingerprint"), "stored", "distance"
    )


def _against_documents(
    df: Any, store: str, id_column: str, text_column: str, k: int | None,
    verify: float | None, html: bool | None,
) -> Any:
    """:func:`batch_against` for a document store: each partition checks its documents with
    ``Store.ingest(check_only=True, store_only=True)``."""
    from pyspark.sql import functions as F

    import pyarrow as pa

    from .. import Store

    spark = df.sparkSession
    # The recipe decides the hashing; naming another input kind is refused on the driver.
    Store(store, read_only=True, documents=True, html=html).close()
    rows = df.where(F.col(id_column).isNotNull() & F.col(text_column).isNotNull())
    src = rows.select(F.col(id_column).cast("string").alias("id"),
                      F.col(text_column).cast("string").alias("text"))

    def check(batches: Iterator[Any]) -> Iterator[Any]:
        with Store(store, read_only=True) as st:
            for b in batches:
                ids = b.column(0).to_pylist()
                r = st.ingest(ids, b.column(1), verify=verify, k=k, check_only=True,
                              store_only=True, threads=1)
                hit = np.flatnonzero(r["duplicate"])
                yield pa.RecordBatch.from_arrays(
                    [pa.array([ids[i] for i in hit], pa.string()),
                     pa.array([str(r["matched"][i]) for i in hit], pa.string()),
                     pa.array(r["similarity"][hit]), pa.array(r["distance"][hit])],
                    ["id", "stored_id", "similarity", "distance"],
                )

    _name_stage(spark, "against a document store: each partition checks its documents")
    out = src.mapInArrow(check, "id string, stored_id string, similarity double, distance int")
    return out.orderBy("id")
