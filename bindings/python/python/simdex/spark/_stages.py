"""The stages of the :mod:`simdex.spark` job, each a function of DataFrames: reading
fingerprint columns, the distributed IDF count, hashing on the executors, the bucket join,
connected components (driver or Spark), and verification of candidate pairs."""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from .. import Idf, InvalidArgument, _hash, _simdex
from .. import distributed as dist

# Rounds of large-star / small-star before giving up (it converges in O(log² n) rounds).
_MAX_STAR_ROUNDS = 100


def _fp_column(col: Any, dtype: Any) -> Any:
    """A fingerprint column as a signed 64-bit long (the bits of the unsigned fingerprint): long
    and int columns as they are, strings as 16 hex digits (null if malformed)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if isinstance(dtype, (T.LongType, T.IntegerType, T.ShortType)):
        return col.cast("long")
    if isinstance(dtype, T.StringType):
        s = F.lower(F.regexp_replace(F.trim(col), "^0x", ""))
        ok = s.rlike("^[0-9a-f]{1,16}$")
        # Two 32-bit halves, so the top bit lands in the long's sign (conv() alone saturates).
        s16 = F.lpad(s, 16, "0")
        hi = F.conv(F.substring(s16, 1, 8), 16, 10).cast("long")
        lo = F.conv(F.substring(s16, 9, 8), 16, 10).cast("long")
        signed = F.shiftleft(hi, 32).bitwiseOR(lo)
        return F.when(ok, signed)
    raise InvalidArgument(
        f"fingerprint column has type {dtype.simpleString()}: give a long or a hex string"
    )


def _name_stage(spark: Any, what: str) -> None:
    spark.sparkContext.setJobDescription(f"simdex: {what}")


def _learn_idf(spark: Any, texts: Any, shingle: int, html: bool) -> Idf:
    """IDF weights from the corpus's sample, as on one machine: every batch's smallest
    ``IDF_SAMPLE_DOCS`` distinct text digests go to the driver, which takes the sample's bound;
    then each batch's document frequencies over the texts at or below it, summed per shingle (a
    null shingle carries the document count); only shingles in 2+ documents travel to the
    driver (the rest weigh the default)."""
    from pyspark.sql import functions as F

    import pyarrow as pa

    cap = _simdex.IDF_SAMPLE_DOCS

    def digests(batches: Iterator[Any]) -> Iterator[Any]:
        for b in batches:
            d = np.unique(dist.text_digests(b.column(0), html=html, threads=1))[:cap]
            # The batch's smallest digests, then a null digest carrying its document count.
            yield pa.RecordBatch.from_arrays(
                [pa.array(np.append(d.view(np.int64), 0), mask=np.arange(len(d) + 1) == len(d)),
                 pa.array(np.append(np.zeros(len(d), np.int64), b.num_rows))],
                ["digest", "docs"],
            )

    _name_stage(spark, "idf: the sample's digests")
    rows = texts.mapInArrow(digests, "digest long, docs long").toArrow()
    is_count = rows.column("digest").is_null().to_numpy(zero_copy_only=False)
    corpus = int(rows.column("docs").to_numpy()[is_count].sum())
    bound = dist.sample_bound(
        rows.column("digest").drop_null().to_numpy().astype(np.int64).view(np.uint64)
    )

    def count(batches: Iterator[Any]) -> Iterator[Any]:
        for b in batches:
            f, c, docs = dist.doc_freqs(
                b.column(0), shingle=shingle, html=html, threads=1, bound=bound
            )
            yield pa.RecordBatch.from_arrays(
                [pa.array(np.append(f.view(np.int64), 0), mask=np.arange(len(f) + 1) == len(f)),
                 pa.array(np.append(c.view(np.int64), docs))],
                ["feature", "count"],
            )

    _name_stage(spark, "idf: distributed document-frequency count")
    common = (
        texts.mapInArrow(count, "feature long, count long")
        .groupBy("feature")
        .agg(F.sum("count").alias("df"))
        .where((F.col("df") > 1) | F.col("feature").isNull())
    )
    table = common.toArrow()
    feature, df = table.column("feature"), table.column("df").to_numpy()
    is_docs = feature.is_null().to_numpy(zero_copy_only=False)
    docs = int(df[is_docs].sum())
    feats = feature.drop_null().to_numpy().astype(np.int64).view(np.uint64)
    counts = df[~is_docs].astype(np.int64).view(np.uint64)
    return Idf.from_counts(np.ascontiguousarray(feats), np.ascontiguousarray(counts), docs,
                           shingle=shingle, corpus=corpus)


def _hash_rows(rows: Any, id_type: Any, shingle: int, idf_bc: Any, html: bool) -> Any:
    """(row, id, fp, empty, bad_reason) for every (row, id, text, bad_reason) row: the good
    rows hashed on the executors a batch at a time, the bad ones passed through (fp null)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark.sql import types as T

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        idf = idf_bc.value if idf_bc is not None else None
        for b in batches:
            good = pc.is_null(b.column(3)).to_numpy(zero_copy_only=False)
            texts = pc.if_else(pa.array(good), b.column(2), pa.scalar("", b.column(2).type))
            fps, empty = _hash(texts, shingle, idf, html, 1)
            yield pa.RecordBatch.from_arrays(
                [b.column(0), b.column(1), pa.array(fps.view(np.int64), mask=~good),
                 pa.array(empty & good), b.column(3)],
                ["row", "id", "fp", "empty", "bad_reason"],
            )

    schema = T.StructType([
        T.StructField("row", T.LongType()),
        T.StructField("id", id_type),
        T.StructField("fp", T.LongType()),
        T.StructField("empty", T.BooleanType()),
        T.StructField("bad_reason", T.StringType()),
    ])
    return rows.mapInArrow(run, schema)


def _join(spark: Any, distinct: Any, design: str, tables: int, k: int, parts: int) -> Any:
    """Pairs (a, b, distance) of distinct fingerprints within k: one shuffle of every
    fingerprint once per table, keyed by (table, bucket); each pair once."""
    import pyarrow as pa

    def explode(batches: Iterator[Any]) -> Iterator[Any]:
        for b in batches:
            fps = np.ascontiguousarray(b.column(0).to_numpy().view(np.uint64))
            for t in range(tables):
                keys = dist.bucket_keys(fps, design, k, t)
                yield pa.RecordBatch.from_arrays(
                    [pa.array(np.full(len(fps), t, np.int32)), pa.array(keys.view(np.int64)),
                     pa.array(fps.view(np.int64))],
                    ["t", "bucket", "fp"],
                )

    def pairs(batches: Iterator[Any]) -> Iterator[Any]:
        got = [b for b in batches if b.num_rows]
        if not got:
            return
        t_all = np.concatenate([b.column(0).to_numpy() for b in got])
        fp_all = np.concatenate([b.column(2).to_numpy() for b in got]).view(np.uint64)
        for t in np.unique(t_all):
            fps = np.ascontiguousarray(fp_all[t_all == t])
            i, j, d = dist.bucket_pairs(fps, design, k, int(t))
            if len(i):
                yield pa.RecordBatch.from_arrays(
                    [pa.array(fps[i].view(np.int64)), pa.array(fps[j].view(np.int64)),
                     pa.array(d.astype(np.int32))],
                    ["a", "b", "distance"],
                )

    keyed = distinct.select("fp").mapInArrow(explode, "t int, bucket long, fp long")
    return keyed.repartition(parts, "t", "bucket").mapInArrow(
        pairs, "a long, b long, distance int"
    )


def _wide_join(spark: Any, distinct: Any, k: int, parts: int) -> Any:
    """Pairs (a, b, distance) of distinct fingerprints within k beyond an index's 7: the block
    join of ``simdex.dedup.wide`` (as ``simdex dedup --verify`` runs it), split over ``parts``
    tasks. The distinct fingerprints (8 bytes each) go to the driver and back as a broadcast;
    task s reports the pairs whose smaller fingerprint is at a position s modulo ``parts``."""
    import pyarrow as pa

    from .. import _simdex

    fps = distinct.select("fp").toArrow().column("fp").to_numpy()
    fps = np.ascontiguousarray(np.sort(fps.astype(np.int64).view(np.uint64)))
    bc = spark.sparkContext.broadcast(fps)

    def scan(batches: Iterator[Any]) -> Iterator[Any]:
        f = bc.value
        for b in batches:
            for s in b.column(0).to_numpy():
                a, c, d = _simdex.wide_pairs(f, k, int(s), parts)
                yield pa.RecordBatch.from_arrays(
                    [pa.array(a.view(np.int64)), pa.array(c.view(np.int64)),
                     pa.array(d.astype(np.int32))],
                    ["a", "b", "distance"],
                )

    tasks = spark.range(parts).repartition(parts)
    return tasks.mapInArrow(scan, "a long, b long, distance int")


def _driver_components(spark: Any, edges: Any) -> Any:
    """(node, root) for every node of the edges, by union-find on the driver."""
    import pyarrow as pa

    table = edges.select("a", "b").toArrow()
    a = np.ascontiguousarray(table.column("a").to_numpy().view(np.uint64))
    b = np.ascontiguousarray(table.column("b").to_numpy().view(np.uint64))
    nodes, roots = dist.components(a, b)
    labels = pa.table({"node": nodes.view(np.int64), "root": roots.view(np.int64)})
    return spark.createDataFrame(labels)


def _spark_components(spark: Any, edges: Any) -> tuple[Any, int]:
    """(node, root) for every node of the edges by alternating large-star and small-star
    (Kiveris, Lattanzi, Mirrokni, Rastogi, Vassilvitskii, SoCC 2014), and the rounds taken.
    Stops when the edges form stars: every child has one parent, and no parent is a child."""
    from pyspark.sql import functions as F

    e = edges.select(F.col("a").alias("u"), F.col("b").alias("v")).where("u != v")
    for rounds in range(1, _MAX_STAR_ROUNDS + 1):
        # Large-star: link every larger neighbour of u to the least of u's neighbourhood.
        both = e.union(e.select(F.col("v").alias("u"), F.col("u").alias("v"))).distinct()
        m = both.groupBy("u").agg(F.least(F.min("v"), F.first("u")).alias("m"))
        e = both.where("v > u").join(m, "u").select(F.col("v").alias("u"), F.col("m").alias("v"))
        # Small-star: link u and its smaller neighbours to the least of them.
        hl = e.select(F.greatest("u", "v").alias("hi"), F.least("u", "v").alias("lo")).distinct()
        m = hl.groupBy("hi").agg(F.min("lo").alias("m"))
        e = (
            hl.join(m, "hi").select(F.col("lo").alias("u"), F.col("m").alias("v"))
            .union(m.select(F.col("hi").alias("u"), F.col("m").alias("v")))
            .where("u != v").distinct()
        ).localCheckpoint(eager=True)
        multi = e.groupBy("u").count().where("count > 1").limit(1).count()
        chained = e.select(F.col("v").alias("u")).join(e.select("u"), "u", "left_semi").limit(1)
        if multi == 0 and chained.count() == 0:
            roots = e.select(F.col("v").alias("node"), F.col("v").alias("root")).distinct()
            return e.select(F.col("u").alias("node"), F.col("v").alias("root")).union(roots), rounds
    raise RuntimeError(f"connected components did not converge in {_MAX_STAR_ROUNDS} rounds")


def _row_pairs(live: Any, fp_pairs: Any) -> Any:
    """(ra, rb, distance), ra < rb, for every pair of rows within k: rows of one fingerprint
    pair at distance 0, rows of two joined fingerprints at theirs."""
    from pyspark.sql import functions as F

    g1 = live.select(F.col("fp").alias("a"), F.col("row").alias("ra"))
    g2 = live.select(F.col("fp").alias("b"), F.col("row").alias("rb"))
    within = g1.join(g2, g1.a == g2.b).where("ra < rb").select(
        "ra", "rb", F.lit(0).alias("distance")
    )
    across = fp_pairs.join(g1, "a").join(g2, "b").select(
        F.least("ra", "rb").alias("ra"), F.greatest("ra", "rb").alias("rb"), "distance"
    )
    return within.union(across)


def _verify(candidates: Any, texts: Any, t: float, html: bool, tokens: str = "unicode") -> Any:
    """(ra, rb, distance, jaccard) of the candidate row pairs whose texts' word 3-shingle
    Jaccard is at least ``t`` (the rule of ``simdex dedup --verify``), computed on the
    executors from each Arrow batch of text pairs."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    from .. import _simdex

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        for b in batches:
            jac = _simdex.jaccard_pairs(
                b.column(3), b.column(4), t=t, html=html, threads=1, tokens=tokens,
            )
            keep = pa.array(~np.isnan(jac))
            yield pa.RecordBatch.from_arrays(
                [b.column(0).filter(keep), b.column(1).filter(keep), b.column(2).filter(keep),
                 pa.array(jac).filter(keep)],
                ["ra", "rb", "distance", "jaccard"],
            )

    ta = texts.select(F.col("row").alias("ra"), F.col("text").alias("text_a"))
    tb = texts.select(F.col("row").alias("rb"), F.col("text").alias("text_b"))
    pairs = candidates.join(ta, "ra").join(tb, "rb").select(
        "ra", "rb", "distance", "text_a", "text_b"
    )
    return pairs.mapInArrow(run, "ra long, rb long, distance int, jaccard double")
