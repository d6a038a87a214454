"""simdex.spark in local[2] mode against `simdex dedup`, the Python package and brute force.

Needs pyspark (``pip install ./bindings/python[spark]``) and Java 17+; skipped without them
unless SIMDEX_REQUIRE_SPARK=1 (as .ci/test sets), which turns a missing pyspark into a failure.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

import simdex
from simdex import distributed as dist

from test_simdex import popcount, simdex_cli

if os.environ.get("SIMDEX_REQUIRE_SPARK") != "1":
    pytest.importorskip("pyspark")
import simdex.spark as ss  # noqa: E402


def corpus(n: int, seed: int) -> list[str]:
    """JSON Lines: random documents, near-duplicates (0-3 words changed), exact copies,
    integer ids, and four bad lines plus one document without any word."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(5000)]
    docs: list[list[str]] = []
    lines = []
    for i in range(n):
        r = rng.random()
        if docs and r < 0.25:
            words = list(rng.choice(docs))
            for _ in range(rng.randint(0, 3)):
                words[rng.randrange(len(words))] = rng.choice(vocab)
        elif docs and r < 0.3:
            words = list(rng.choice(docs))
        else:
            words = [rng.choice(vocab) for _ in range(rng.randint(30, 120))]
        docs.append(words)
        lines.append(json.dumps({"id": f"d{i}" if i % 7 else i, "text": " ".join(words)}))
    lines.insert(5, json.dumps({"id": "empty", "text": "... !"}))
    lines.insert(9, json.dumps({"id": "nulltext", "text": None}))
    lines.insert(11, "{not json")
    lines.insert(13, json.dumps({"text": "no id here"}))
    return lines


@pytest.fixture(scope="module")
def spark():
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    s = (
        SparkSession.builder.master("local[2]")
        .appName("simdex-test")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        # Headroom for the 25M-character document of test_bad_rows_follow_the_cli_rule: two
        # tasks each copy it a few times (UTF-8 row, Arrow batch) within Spark's default 1g.
        .config("spark.driver.memory", "2g")
        # The suite's jobs are small and many: the JVM's quick compiler alone, and one GC
        # thread, leave the second core to the Python workers (the suite alone on two cores,
        # one run each: 102 s; 94 s so; 88 s with two shuffle partitions as well).
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        .getOrCreate()
    )
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


@pytest.fixture(autouse=True)
def _release_cached(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each test's cached DataFrames are dropped after it: the suite shares one driver JVM, and
    the one with a 25M-character document needs the heap that earlier results would still hold."""
    yield
    if "spark" in request.fixturenames:
        request.getfixturevalue("spark").catalog.clearCache()


@pytest.fixture(scope="module")
def jsonl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("spark") / "corpus.jsonl"
    p.write_text("\n".join(corpus(3000, 7)) + "\n")
    return p


def cli(*args: str) -> str:
    exe = simdex_cli()
    assert exe, "the simdex binary (cargo build --release -p simdex-cli)"
    return subprocess.run([exe, *args], check=True, capture_output=True, text=True).stdout


@pytest.mark.parametrize("components", ["driver", "spark"])
def test_dedup_equals_the_cli(spark, jsonl: Path, components: str) -> None:
    r = ss.dedup(ss.read_corpus(spark, str(jsonl)), pairs=True, components=components)
    want_pairs = cli("dedup", "--jsonl", "--quiet", str(jsonl))
    got_pairs = "".join(f"{p.id_a}\t{p.id_b}\t{p.distance}\n" for p in r.pairs.collect())
    assert got_pairs == want_pairs  # the same pairs, in the same order
    assert r.stats["pairs"] == len(want_pairs.splitlines())

    want = [line.split("\t") for line in cli("dedup", "--jsonl", "--clusters", "--quiet", str(jsonl)).splitlines()]
    docs = r.docs.collect()
    members: dict[str, list[str]] = defaultdict(list)
    for d in docs:
        members[d.cluster_id].append(d.id)
    got = {frozenset(m) for m in members.values() if len(m) > 1}
    assert got == {frozenset(m) for m in want}
    # The kept row is the cluster's first in input order (the CLI's first column).
    first = {m[0] for m in want}
    for d in docs:
        assert d.cluster_size == len(members[d.cluster_id])
        assert d.keep == (d.id == d.cluster_id)
        if d.cluster_size > 1:
            assert (d.cluster_id in first) and (d.keep or d.id not in first)
    assert sum(not d.keep for d in docs) == r.stats["removed"] == sum(len(m) - 1 for m in want)
    assert r.stats["bad"] == 3 and r.stats["featureless"] == 1
    assert r.stats["components"].startswith(components)
    reasons = sorted(b.reason for b in r.bad.collect())
    assert reasons == [
        '"text" is not a string', "no \"id\" field", "not JSON: key must be a string at line 1 column 2"
    ]


def test_verified_dedup_equals_the_cli(spark, jsonl: Path) -> None:
    r = ss.dedup(ss.read_corpus(spark, str(jsonl)), pairs=True, verify=0.5, candidate_k=7)
    want = cli("dedup", "--jsonl", "--quiet", "--verify", "jaccard:0.5", "--candidate-k", "7", str(jsonl))
    got = "".join(f"{p.id_a}\t{p.id_b}\t{p.distance}\t{p.jaccard:.4f}\n" for p in r.pairs.collect())
    assert got == want and r.stats["verified_pairs"] == len(want.splitlines()) > 0
    assert r.stats["candidate_pairs"] >= r.stats["verified_pairs"]
    clusters = cli("dedup", "--jsonl", "--quiet", "--clusters", "--verify", "jaccard:0.5", "--candidate-k", "7", str(jsonl))
    members: dict[str, list[str]] = defaultdict(list)
    for d in r.docs.collect():
        members[d.cluster_id].append(d.id)
    got_sets = {frozenset(m) for m in members.values() if len(m) > 1}
    assert got_sets == {frozenset(line.split("\t")) for line in clusters.splitlines()}
    with pytest.raises(simdex.InvalidArgument, match="candidate_k"):
        ss.dedup(ss.read_corpus(spark, str(jsonl)), verify=0.5, candidate_k=17)


def test_verified_dedup_defaults_equal_the_cli(spark, jsonl: Path) -> None:
    """The default candidate distance (11, beyond the index: the block join, split over the
    executors) and its answers are the CLI's (Spark capped it at 7 and found fewer pairs)."""
    r = ss.dedup(ss.read_corpus(spark, str(jsonl)), pairs=True, verify=0.5)
    want = cli("dedup", "--jsonl", "--quiet", "--verify", "jaccard:0.5", str(jsonl))
    got = "".join(f"{p.id_a}\t{p.id_b}\t{p.distance}\t{p.jaccard:.4f}\n" for p in r.pairs.collect())
    assert got == want
    assert max(p.distance for p in r.pairs.collect()) <= simdex._simdex.DEFAULT_CANDIDATE_K == 11
    assert r.stats["design"] == "blocks"


def test_spark_components_match_union_find(spark) -> None:
    """Large/small-star against union-find on a graph with long chains (diameter ~300)."""
    rng = np.random.default_rng(3)
    labels = rng.permutation(np.arange(1, 2001, dtype=np.int64) * 7919)
    a, b = [], []
    for start in range(0, 2000, 400):  # five chains of 300, in random label order
        for i in range(start, start + 299):
            a.append(labels[i])
            b.append(labels[i + 1])
    for _ in range(300):  # plus random edges among the rest
        i, j = rng.integers(1500, 2000, 2)
        a.append(labels[i])
        b.append(labels[j])
    edges = spark.createDataFrame([(int(x), int(y)) for x, y in zip(a, b)], "a long, b long")
    got, rounds = ss._spark_components(spark, edges)
    got = {r.node: r.root for r in got.collect()}
    nodes, roots = dist.components(np.array(a, np.uint64), np.array(b, np.uint64))
    assert got == dict(zip(nodes.astype(np.int64).tolist(), roots.astype(np.int64).tolist()))
    assert rounds < 30


def test_fingerprint_column_and_bad_hex(spark, tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    base = rng.integers(0, 2**64, 3000, dtype=np.uint64)
    near = base[:400] ^ (np.uint64(1) << rng.integers(0, 64, 400).astype(np.uint64))
    fps = np.concatenate([base, near, base[:50]])
    rows = [(f"r{i}", f"{int(f):016x}") for i, f in enumerate(fps)] + [("bad", "xyz")]
    df = spark.createDataFrame(rows, "id string, fp string")
    r = ss.dedup(df, text_column=None, fingerprint_column="fp", k=2, pairs=True)
    clusters, (ra, rb, d) = simdex.dedup(fps, k=2, return_pairs=True)
    want = [(f"r{x}", f"r{y}", int(z)) for x, y, z in zip(ra, rb, d)]
    assert [(p.id_a, p.id_b, p.distance) for p in r.pairs.collect()] == want
    assert r.stats["bad"] == 1 and [b.reason for b in r.bad.collect()] == ["'fp' is not a 64-bit fingerprint"]
    keep = {d.id: d.keep for d in r.docs.collect()}
    assert keep == {f"r{i}": bool(c == i) for i, c in enumerate(clusters)}
    # Longs work too (the fingerprint's bits as a signed long).
    df = spark.createDataFrame([(f"r{i}", int(v)) for i, v in enumerate(fps.view(np.int64))], "id string, fp long")
    assert ss.dedup(df, text_column=None, fingerprint_column="fp", k=2).stats["pairs"] == len(want)


def test_batch_against_an_index(spark, tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    stored = rng.integers(0, 2**64, 20_000, dtype=np.uint64)
    idx = simdex.Index.build(tmp_path / "idx", stored, k=3)
    batch = np.concatenate([stored[:300] ^ np.uint64(0b101), rng.integers(0, 2**64, 300, dtype=np.uint64)])
    df = spark.createDataFrame([(i, int(v)) for i, v in enumerate(batch.view(np.int64))], "id long, fp long")
    got = ss.batch_against(df, str(tmp_path / "idx"), text_column=None, fingerprint_column="fp", shards=3)
    got = sorted((r.id, r.distance, r.stored) for r in got.collect())
    want = []
    for i, f in enumerate(batch):
        d = popcount(stored ^ f)
        want += [(i, int(x), int(s.astype(np.int64))) for s, x in zip(stored[d <= 3], d[d <= 3])]
    assert got == sorted(want) and len(got) >= 300
    bf, st, dd = idx.batch(np.unique(batch))
    assert len(bf) == len(got)


def test_batch_against_a_store(spark, tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    stored = rng.integers(0, 2**64, 5_000, dtype=np.uint64)
    with simdex.Store(tmp_path / "st", create=True, k=3) as st:
        st.insert(stored, np.arange(5_000, dtype=np.uint64) + 100)
    texts = [f"doc {i} " + " ".join(f"w{j}" for j in range(i, i + 40)) for i in range(50)]
    with simdex.Store(tmp_path / "st") as st:  # documents too: hash them as the job will
        st.insert(simdex.hash(texts[:20]), np.arange(20, dtype=np.uint64) + 1_000_000)
    batch = stored[:200] ^ np.uint64(1 << 63)
    df = spark.createDataFrame([(i, int(v)) for i, v in enumerate(batch.view(np.int64))], "id long, fp long")
    got = ss.batch_against(df, str(tmp_path / "st"), text_column=None, fingerprint_column="fp")
    assert [(r.id, r.distance, r.stored_id) for r in got.collect()] == [(i, 1, i + 100) for i in range(200)]
    docs = spark.createDataFrame([(f"t{i}", t) for i, t in enumerate(texts)], "id string, text string")
    got = ss.batch_against(docs, str(tmp_path / "st"))
    hits = {(r.id, r.stored_id) for r in got.collect() if r.distance == 0}
    assert {(f"t{i}", 1_000_000 + i) for i in range(20)} <= hits


@pytest.mark.parametrize("exact", [None, 0.9])
def test_batch_against_a_document_store(spark, tmp_path: Path, exact: float | None) -> None:
    """Sketch estimates, or (exact=0.9) the store's shingle sets: the same answers here."""
    rng = np.random.default_rng(4)
    template = " ".join(f"t{x}" for x in rng.integers(0, 3000, size=300))
    stored = [template + " " + " ".join(f"w{x}" for x in rng.integers(0, 5000, size=200)) for _ in range(60)]
    path = tmp_path / "docs"
    with simdex.Store(path, create=True, documents=True, k=7, exact=exact) as st:
        st.ingest([f"s{i}" for i in range(60)], stored)
    batch, want = [], {}
    for i in range(40):
        words = stored[i].split()
        if i % 2 == 0:  # an edited copy of stored page i
            words[-5] = "changed"
            want[f"b{i}"] = f"s{i}"
        else:  # a new page on the same template
            words = words[:300] + [f"n{x}" for x in rng.integers(0, 5000, size=200)]
        batch.append((f"b{i}", " ".join(words)))
    batch.append(("b40", batch[0][1]))  # a copy of another batch row: not stored, not reported
    df = spark.createDataFrame(batch, "id string, text string").repartition(3)
    got = ss.batch_against(df, str(path), verify=0.9)
    rows = got.collect()
    assert {r.id: r.stored_id for r in rows} == {**want, "b40": "s0"}
    assert all(r.similarity >= 0.9 for r in rows)
    # The same answers as the Python package's check against the store alone.
    with simdex.Store(path, read_only=True) as st:
        r = st.ingest([b[0] for b in batch], [b[1] for b in batch], verify=0.9, check_only=True, store_only=True)
    assert {batch[i][0]: m for i, m in enumerate(r["matched"]) if m is not None} == {**want, "b40": "s0"}
    sims = {batch[i][0]: r["similarity"][i] for i in range(len(batch))}
    assert all(row.similarity == sims[row.id] for row in rows)
    fps = spark.createDataFrame([(1, 5)], "id long, fp long")
    with pytest.raises(simdex.InvalidArgument, match="needs a document store"):
        ss.batch_against(fps, str(path), text_column=None, fingerprint_column="fp", verify=0.9)


def test_bad_options_are_refused(spark, jsonl: Path) -> None:
    df = ss.read_corpus(spark, str(jsonl))
    with pytest.raises(simdex.InvalidArgument, match="radius 0"):
        ss.dedup(df, design="m2c1r1")
    with pytest.raises(simdex.InvalidArgument, match="no column 'body'"):
        ss.dedup(df, text_column="body")
    with pytest.raises(simdex.InvalidArgument, match="k = 9"):
        ss.dedup(df, k=9)


def test_doc_freqs_sum_to_the_learned_idf() -> None:
    texts = [" ".join(random.Random(i).choices(["a", "b", "c", "d", "e", "f"], k=20)) for i in range(200)]
    parts = [dist.doc_freqs(texts[:70]), dist.doc_freqs(texts[70:])]
    f = np.concatenate([p[0] for p in parts])
    c = np.concatenate([p[1] for p in parts])
    u, inv = np.unique(f, return_inverse=True)
    s = np.zeros(len(u), np.uint64)
    np.add.at(s, inv, c)
    idf = simdex.Idf.from_counts(u, s, sum(p[2] for p in parts))
    assert idf == simdex.Idf.learn(texts)
    import pickle

    assert pickle.loads(pickle.dumps(idf)) == idf
    assert (simdex.hash(texts, idf=idf) == simdex.hash(texts, idf=simdex.Idf.learn(texts))).all()


@pytest.mark.parametrize(
    "verify, tokens", [(None, "unicode"), (0.5, "unicode"), (0.5, "whitespace")]
)
def test_one_set_of_defaults_cli_python_spark(spark, jsonl: Path, verify, tokens) -> None:
    """`simdex dedup`, `simdex.dedup` and the Spark job, each with its defaults (plus the
    threshold and the token rule), give the same pairs and the same clusters."""
    rows = []
    for line in jsonl.read_text().splitlines():
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            continue  # bad lines: every reader skips them
        if isinstance(r.get("text"), str) and "id" in r:
            rows.append(r)
    ids = [str(r["id"]) for r in rows]
    args = ["dedup", "--jsonl", "--quiet", str(jsonl)]
    if verify is not None:
        args += ["--verify", f"jaccard:{verify}", "--verify-tokens", tokens]
    want = {tuple(line.split("\t")[:2]) for line in cli(*args).splitlines()}
    assert len(want) >= 10
    kw = {} if verify is None else {"verify": verify, "verify_tokens": tokens}
    clusters, pairs = simdex.dedup([r["text"] for r in rows], return_pairs=True, **kw)
    got = {(ids[a], ids[b]) for a, b in zip(pairs[0], pairs[1])}
    assert got == want
    r = ss.dedup(ss.read_corpus(spark, str(jsonl)), pairs=True, **kw)
    assert {(p.id_a, p.id_b) for p in r.pairs.collect()} == want
    # Clusters: the CLI's lines, Python's labels and Spark's groups are one partition.
    lines = cli(*args, "--clusters").splitlines()
    cli_groups = {frozenset(line.split("\t")) for line in lines}
    py_groups: dict[int, set[str]] = defaultdict(set)
    for i, c in enumerate(clusters):
        py_groups[int(c)].add(ids[i])
    assert {frozenset(g) for g in py_groups.values() if len(g) > 1} == cli_groups


def test_one_idf_table_from_the_cli_python_and_spark(spark, tmp_path: Path) -> None:
    """A corpus larger than the IDF sample: the sample is the same texts everywhere (chosen by
    digest, not by order or partition), so the three learn one table, scaled to the corpus."""
    n = simdex._simdex.IDF_SAMPLE_DOCS + 3000
    rng = random.Random(5)
    words = [f"w{i}" for i in range(300)]
    texts = [
        ("site header menu " if i % 4 == 0 else "") + " ".join(rng.choices(words, k=8)) + f" doc{i}"
        for i in range(n)
    ]
    texts += texts[:50]  # copies count together
    learned = simdex.Idf.learn(texts)
    assert learned.docs == len(texts)
    shuffled = texts[::-1]
    assert simdex.Idf.learn(shuffled) == learned
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(shuffled)))
    cli("idf", "--jsonl", "--quiet", "--out", str(tmp_path / "t.idf"), str(path))
    assert simdex.Idf.load(tmp_path / "t.idf") == learned
    from simdex.spark._stages import _learn_idf

    df = spark.createDataFrame([(t,) for t in texts], "text string").repartition(3)
    assert _learn_idf(spark, df, 2, False) == learned


# -- Hardening: hostile inputs and interrupts ----------------------------------------------------


def _cli_bad(path: Path, *args: str) -> list[str]:
    """The reasons `simdex dedup` gives for the bad lines of `path` (its warnings)."""
    exe = simdex_cli()
    p = subprocess.run([exe, "dedup", "--jsonl", *args, str(path)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return sorted(
        line.split(": line ", 1)[1].split(": ", 1)[1]
        for line in p.stderr.splitlines()
        if line.startswith("simdex: warning: skipped")
    )


def test_bad_rows_follow_the_cli_rule(spark, tmp_path: Path) -> None:
    """Ids 5.5, true and objects, numbers and lists as text, a top-level array, NaN and a 25M
    character text: the same documents, pairs and bad-row reasons as `simdex dedup` (Spark's
    JSON reader made 40 pairs of what the CLI saw as 5, and lost the long text's id)."""
    lines = corpus(300, 11)
    lines += [
        '{"id": 5.5, "text": "a b c"}',
        '{"id": true, "text": "a b c"}',
        '{"id": {"x": 1}, "text": "a b c"}',
        '{"id": "num", "text": 12345}',
        '{"id": "list", "text": ["a", "b"]}',
        '[{"id": "arr", "text": "a b c"}]',
        '{"id": "nan", "text": NaN}',
        '   ',
        json.dumps({"id": 100000, "text": "w1 w2 w3 w4 w5 w6 w7 w8 w9"}),
        json.dumps({"id": "100000b", "text": "w1 w2 w3 w4 w5 w6 w7 w8 w9"}),
        json.dumps({"id": "long", "text": "w1 " * 8_400_000}),
    ]
    p = tmp_path / "bad.jsonl"
    p.write_text("\n".join(lines) + "\n")
    r = ss.dedup(ss.read_corpus(spark, str(p)), pairs=True)
    want = cli("dedup", "--jsonl", "--quiet", str(p))
    got = "".join(f"{x.id_a}\t{x.id_b}\t{x.distance}\n" for x in r.pairs.collect())
    assert got == want and "100000\t100000b\t0" in want
    assert sorted(b.reason for b in r.bad.collect()) == _cli_bad(p)
    assert r.stats["bad"] == len(_cli_bad(p)) == 10
    assert "long" in {d.id for d in r.docs.collect()}


def test_remove_list_is_parquet_ids_are_unique_and_overwrite_clears(spark, tmp_path: Path) -> None:
    docs = [("a\nb", "the same text here for both rows"), ("c", "the same text here for both rows"),
            ("d", "something else entirely different")]
    df = spark.createDataFrame(docs, "id string, text string")
    out = tmp_path / "out"
    ss.dedup(df, pairs=True, weights="count").write(str(out))
    import pyarrow.parquet as pq

    assert pq.read_table(out / "remove").column("id").to_pylist() == ["c"]
    # A second run without pairs, overwriting: no stale out/pairs of the first.
    ss.dedup(df, weights="count").write(str(out), mode="overwrite")
    assert not (out / "pairs").exists()
    assert pq.read_table(out / "remove").column("id").to_pylist() == ["c"]
    dup = spark.createDataFrame(docs + [("c", "a unique text")], "id string, text string")
    with pytest.raises(simdex.InvalidArgument, match="1 ids appear on more than one row.*'c'"):
        ss.dedup(dup, weights="count")


def test_executor_errors_are_the_engines(spark, jsonl: Path) -> None:
    """An engine error raised inside a task reaches the caller as the engine's exception and
    message, not as "An exception was thrown from the Python worker"."""
    with pytest.raises(simdex.InvalidArgument) as e:
        ss.dedup(ss.read_corpus(spark, str(jsonl)), weights="count", shingle=0)
    assert "Python worker" not in str(e.value) and "shingle" in str(e.value)


def test_a_result_releases_its_cache(spark) -> None:
    """`dedup` caches its fingerprints and pairs on the executors; `unpersist` (or leaving a
    `with` block) releases every one of them, and the outputs stay computable."""
    df = spark.createDataFrame(
        [(str(i), f"shared words of a page number {i % 5} and more") for i in range(40)],
        "id string, text string",
    )

    def cached() -> int:
        return spark.sparkContext._jsc.getPersistentRDDs().size()

    before = cached()
    for verify in (None, 0.9):
        with ss.dedup(df, pairs=True, verify=verify) as r:
            assert cached() > before
            removed = r.stats["removed"]
        assert cached() == before
        assert sum(not d.keep for d in r.docs.collect()) == removed == 35


def test_the_command_line_job(jsonl: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The job's main() in this process, on the module's session where earlier tests made one
    # (a second process would start a second JVM: half a minute of the suite). It stops the
    # session when it ends, so this test comes last.
    from simdex.spark.__main__ import main

    out = tmp_path / "out"
    assert main([str(jsonl), "--out", str(out), "--master", "local[2]", "--pairs"]) == 0
    summary = json.loads(capsys.readouterr().err.split("simdex spark: ")[-1])
    import pyarrow.parquet as pq

    removed = pq.read_table(out / "remove").column("id").to_pylist()
    assert len(removed) == summary["removed"] > 0

    docs = pq.read_table(out / "docs")
    assert docs.column_names == ["id", "cluster_id", "cluster_size", "keep"]
    assert docs.num_rows == summary["documents"] - summary["bad"]
    assert pq.read_table(out / "pairs").num_rows == summary["pairs"]
    # The script file, refusing an existing output before Spark starts.
    script = Path(__file__).resolve().parents[3] / "examples" / "spark" / "dedup.py"
    again = subprocess.run(
        [sys.executable, str(script), str(jsonl), "--out", str(out), "--master", "local[2]"],
        capture_output=True, text=True,
    )
    assert again.returncode != 0 and "already exists" in again.stderr
