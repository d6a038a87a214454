"""The command-line Spark job: ``python -m simdex.spark`` (or ``spark-submit
examples/spark/dedup.py``). See :mod:`simdex.spark` for what each stage does."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time


def _jaccard(s: str) -> float:
    """`jaccard:T` with T in (0, 1]."""
    try:
        t = float(s.removeprefix("jaccard:")) if s.startswith("jaccard:") else None
    except ValueError:
        t = None
    if t is None or not 0 < t <= 1:
        raise argparse.ArgumentTypeError(f"{s!r} is not jaccard:T with T in (0, 1]")
    return t


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m simdex.spark",
        description="Near-duplicate dedup of a corpus on Apache Spark (simdex).",
        epilog="Writes OUT/docs (Parquet: id, cluster_id, cluster_size, keep), OUT/remove "
        "(Parquet: id, the rows to drop), OUT/bad (Parquet: id, reason) and, with --pairs, OUT/pairs "
        "(Parquet: id_a, id_b, distance). With --against INDEX: OUT/pairs of the input "
        "against a stored index (id, fingerprint, stored, distance).",
    )
    ap.add_argument("input", help="Parquet or JSON Lines file or directory (any Spark path)")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--format", choices=["parquet", "jsonl"], help="default: by the suffix")
    ap.add_argument("--id-column", default="id")
    ap.add_argument("--text-column", default="text")
    ap.add_argument("--fingerprint-column", help="fingerprints (long or hex), not texts")
    ap.add_argument("--k", type=int, default=3, help="largest distance of a pair (0..=7)")
    ap.add_argument("--shingle", type=int, default=2)
    ap.add_argument("--weights", choices=["auto", "count", "idf"], default="auto",
                    help="auto/idf: IDF learned from the corpus by a distributed count")
    ap.add_argument("--idf", help="a table from `simdex idf --out` (overrides --weights)")
    ap.add_argument("--html", action="store_true", help="texts are HTML: hash visible text")
    ap.add_argument("--design", help="join design (radius 0); default: chosen for the corpus")
    ap.add_argument("--partitions", type=int, help="shuffle partitions of the join")
    ap.add_argument("--pairs", action="store_true", help="also write every pair of rows")
    ap.add_argument("--components", choices=["auto", "driver", "spark"], default="auto")
    ap.add_argument("--driver-edge-limit", type=int, default=20_000_000)
    ap.add_argument("--verify", metavar="jaccard:T", type=_jaccard,
                    help="exact answers: keep candidate pairs whose word 3-shingle Jaccard >= T")
    ap.add_argument("--candidate-k", type=int,
                    help="with --verify: candidate distance (0..=16, default 11, as simdex "
                    "dedup --verify)")
    ap.add_argument("--verify-tokens", choices=["unicode", "whitespace"], default="unicode",
                    help="with --verify: how the shingles' words are cut (as simdex dedup)")
    ap.add_argument("--against", metavar="INDEX",
                    help="check the input against a stored index instead (shards of its tables); "
                    "against a document store, each document's most similar stored one, verified "
                    "by the stored sketches with --verify")
    ap.add_argument("--shards", type=int, help="with --against: tasks (default: parallelism)")
    ap.add_argument("--master", help="Spark master (default: spark-submit's, else local[*])")
    ap.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    ap.add_argument("--quiet", action="store_true", help="no summary on standard error")
    return ap


def main(argv: list[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    if not a.overwrite and "://" not in a.out and os.path.exists(a.out):
        # Fail before any work (Spark itself would fail only at the write, after the job).
        print(f"simdex spark: error: {a.out} already exists (--overwrite to replace it)",
              file=sys.stderr)
        return 1
    from pyspark.sql import SparkSession

    from .. import Idf
    from .. import spark as ss

    builder = SparkSession.builder.appName("simdex-dedup")
    if a.master:
        builder = builder.master(a.master)
        if a.master.startswith("local"):
            # Local mode: keep Spark's driver sockets on loopback, and run the Python workers
            # with this interpreter (where simdex is installed).
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # Spark's console progress bar on a terminal only, and never with --quiet.
    show = not a.quiet and sys.stderr.isatty()
    builder = builder.config("spark.ui.showConsoleProgress", str(show).lower())
    if a.master and a.master.startswith("local"):
        # One machine: a few shuffle partitions per core, not the cluster default of 200.
        builder = builder.config("spark.sql.shuffle.partitions", str(4 * (os.cpu_count() or 2)))
    session = builder.getOrCreate()
    if a.quiet:
        session.sparkContext.setLogLevel("ERROR")
    started = time.time()
    text = None if a.fingerprint_column else a.text_column
    try:
        with ss._engine_errors():
            df = ss.read_corpus(session, a.input, format=a.format, id_column=a.id_column,
                                text_column=text, fingerprint_column=a.fingerprint_column)
            idf = Idf.load(a.idf) if a.idf else None
            mode = "overwrite" if a.overwrite else "error"
            if a.against:
                found = ss.batch_against(
                    df, a.against, id_column=a.id_column, text_column=text,
                    fingerprint_column=a.fingerprint_column, k=a.k, shingle=a.shingle, idf=idf,
                    html=a.html, shards=a.shards, verify=a.verify,
                )
                if a.overwrite:
                    ss._delete_outputs(session, a.out, ss._OUTPUTS)
                found.write.mode(mode).parquet(f"{a.out}/pairs")
                summary = {"pairs": session.read.parquet(f"{a.out}/pairs").count()}
            else:
                r = ss.dedup(
                    df, id_column=a.id_column, text_column=text,
                    fingerprint_column=a.fingerprint_column, k=a.k, shingle=a.shingle,
                    weights=a.weights, idf=idf, html=a.html, design=a.design,
                    partitions=a.partitions, pairs=a.pairs, components=a.components,
                    driver_edge_limit=a.driver_edge_limit, verify=a.verify,
                    candidate_k=a.candidate_k, verify_tokens=a.verify_tokens,
                )
                r.write(a.out, mode=mode)
                summary = r.stats
        summary["seconds"] = round(time.time() - started, 1)
        if not a.quiet:
            print("simdex spark: " + json.dumps(summary), file=sys.stderr)
    except Exception as e:  # noqa: BLE001 - one clear line, not a JVM stack trace
        from pyspark.errors import PySparkException

        from .. import Error

        if not isinstance(e, (Error, PySparkException, OSError)):
            raise
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        print(f"simdex spark: error: {msg}", file=sys.stderr)
        return 1
    finally:
        session.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
