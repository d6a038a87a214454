"""The Python package against brute force (numpy popcount), the CLI, and bad input."""

from __future__ import annotations

import datetime
import os
import shutil
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest

import simdex

REPO = Path(__file__).resolve().parents[3]


def popcount(x: np.ndarray) -> np.ndarray:
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x).astype(np.uint32)
    return np.array([bin(int(v)).count("1") for v in x], dtype=np.uint32)


def sample(n: int, seed: int) -> np.ndarray:
    """Random fingerprints plus near-duplicates of the first 200 at 1..4 bits."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    near = []
    for i in range(min(200, n)):
        f = int(base[i])
        for b in rng.choice(64, size=1 + i % 4, replace=False):
            f ^= 1 << int(b)
        near.append(f)
    return np.concatenate([base, np.array(near, dtype=np.uint64), base[:5]])


def brute(stored: np.ndarray, q: int, k: int) -> list[tuple[int, int]]:
    uniq = np.unique(stored)
    d = popcount(uniq ^ np.uint64(q))
    keep = d <= k
    return sorted(zip(d[keep].tolist(), uniq[keep].tolist()))


def simdex_cli() -> str | None:
    exe = REPO / "target" / "release" / "simdex"
    if exe.exists():
        return str(exe)
    return shutil.which("simdex")


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> tuple[simdex.Index, np.ndarray]:
    fps = sample(20_000, 1)
    path = tmp_path_factory.mktemp("ix") / "idx"
    return simdex.Index.build(path, fps, k=3, design="10", block_size=256), fps


@pytest.mark.parametrize(
    ("block_size", "segment_keys", "want"),
    [(None, None, (4096, 20)), (1024, 4, (1024, 4)), (4096, 0, (4096, 0))],
)
def test_segmented_layouts_match_brute_force(
    tmp_path: Path, block_size: int | None, segment_keys: int | None, want: tuple[int, int]
) -> None:
    fps = sample(20_000, 2)
    idx = simdex.Index.build(
        tmp_path / "idx", fps, design="4", block_size=block_size, segment_keys=segment_keys
    )
    st = idx.stats()
    assert (st["block_size"], st["segment_keys"]) == want
    queries = np.concatenate([fps[:100], fps[-3:], np.array([0, 2**64 - 1], dtype=np.uint64)])
    qi, f, d = idx.near_many(queries, 3)
    for i, q in enumerate(queries.tolist()):
        rows = qi == i
        assert sorted(zip(d[rows].tolist(), f[rows].tolist())) == brute(fps, q, 3)
    idx.verify()


def test_absurd_segment_lengths_are_refused(tmp_path: Path) -> None:
    fps = sample(100, 3)
    for block_size, segment_keys in ((1024, 1), (16384, 20), (None, 70_000)):
        with pytest.raises(simdex.InvalidArgument, match="segment length|8192"):
            simdex.Index.build(
                tmp_path / "bad", fps, block_size=block_size, segment_keys=segment_keys
            )
        assert not (tmp_path / "bad").exists()
    with pytest.raises(OverflowError):
        simdex.Index.build(tmp_path / "bad", fps, segment_keys=-1)


def test_near_and_near_many_match_brute_force(index: tuple[simdex.Index, np.ndarray]) -> None:
    idx, fps = index
    queries = np.concatenate([fps[:150], fps[-5:], np.array([0, 2**64 - 1], dtype=np.uint64)])
    qi, f, d = idx.near_many(queries)
    assert qi.dtype == np.int64 and f.dtype == np.uint64 and d.dtype == np.uint32
    assert np.all(np.diff(qi) >= 0), "rows sorted by query"
    for k in (0, 1, 3):
        qi, f, d = idx.near_many(queries, k)
        for i, q in enumerate(queries.tolist()):
            want = brute(fps, q, k)
            rows = qi == i
            assert sorted(zip(d[rows].tolist(), f[rows].tolist())) == want
            nf, nd = idx.near(q, k)
            assert list(zip(nd.tolist(), nf.tolist())) == want
            assert idx.has_near(q, k) == bool(want)
    assert len(idx) == len(np.unique(fps))
    assert idx.k == 3 and idx.design == "10"
    assert idx.stats()["tables"] == 10
    assert idx.verify()["tables"] == 10
    assert idx.counters()["queries"] > 0


def test_a_large_near_many_answers_as_near(index: tuple[simdex.Index, np.ndarray]) -> None:
    # 5 000 queries against 20 205 fingerprints: enough (4 096 and an eighth) for near_many to
    # answer by one scan of the tables; the rows are near's, query by query, in order.
    idx, fps = index
    queries = np.concatenate([fps[:2500], fps[:2500] ^ np.uint64(0b101)])
    before = idx.counters()["queries"]
    qi, f, d = idx.near_many(queries, 3)
    assert idx.counters()["queries"] - before == len(queries)
    starts = np.searchsorted(qi, np.arange(len(queries) + 1))
    for i, q in enumerate(queries.tolist()):
        nf, nd = idx.near(q, 3)
        lo, hi = starts[i], starts[i + 1]
        assert f[lo:hi].tolist() == nf.tolist() and d[lo:hi].tolist() == nd.tolist()


def test_batch_equals_brute_force(index: tuple[simdex.Index, np.ndarray]) -> None:
    idx, fps = index
    batch = np.concatenate([fps[:100] ^ np.uint64(1), sample(50, 9)[:50]])
    b, s, d = idx.batch(batch, 2)
    got = set(zip(b.tolist(), s.tolist(), d.tolist()))
    want = {(q, f, dist) for q in np.unique(batch).tolist() for dist, f in brute(fps, q, 2)}
    assert got == want
    (b2, s2, d2), (wb, ws, wd) = idx.batch(batch, 2, within=True)
    assert np.array_equal(b2, b) and all(x < y for x, y in zip(wb.tolist(), ws.tolist()))


def test_in_memory_open_and_threads(index: tuple[simdex.Index, np.ndarray]) -> None:
    idx, fps = index
    mem = simdex.Index.open(idx.path, in_memory=True)
    populated = simdex.Index.open(idx.path, populate=True)
    a = idx.near_many(fps[:500])
    b = mem.near_many(fps[:500], threads=1)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    c = populated.near_many(fps[:500])
    assert all(np.array_equal(x, y) for x, y in zip(a, c))
    with pytest.raises(simdex.InvalidArgument, match="exclude each other"):
        simdex.Index.open(idx.path, in_memory=True, populate=True)
    results: list[tuple] = []

    def worker() -> None:
        results.append(idx.near_many(fps[:2000]))

    ts = [threading.Thread(target=worker) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(results) == 4
    assert all(np.array_equal(r[1], results[0][1]) for r in results)


def test_bad_input_raises_clear_errors(tmp_path: Path, index: tuple[simdex.Index, np.ndarray]) -> None:
    idx, fps = index
    with pytest.raises(TypeError, match="uint64"):
        idx.near_many(np.arange(10))
    with pytest.raises(TypeError, match="uint64"):
        idx.near_many([1, 2, 3])
    with pytest.raises(TypeError, match="contiguous"):
        idx.near_many(fps[::2])
    with pytest.raises(TypeError, match="a 2-D array of dtype uint64"):
        idx.near_many(fps[:4].reshape(2, 2))
    with pytest.raises(simdex.InvalidArgument, match="exceeds"):
        idx.near(1, 4)
    with pytest.raises(ValueError):
        idx.near(1, 64)
    with pytest.raises(OverflowError):
        idx.near(-1)
    with pytest.raises(simdex.IoError, match="MANIFEST"):
        simdex.Index.open(tmp_path / "missing")
    with pytest.raises(simdex.InvalidArgument):
        simdex.Index.build(tmp_path / "x", fps[:10], design="nonsense")
    with pytest.raises(simdex.InvalidArgument):
        simdex.Index.build(tmp_path / "y", fps[:10], codec="zip")
    # A corrupt table: open or verify fails with CorruptError, never a crash.
    broken = tmp_path / "broken"
    simdex.Index.build(broken, fps[:3000], design="4", block_size=256)
    t0 = broken / "table-00.sxt"
    data = bytearray(t0.read_bytes())
    data[len(data) // 2] ^= 0xFF
    t0.write_bytes(bytes(data))
    with pytest.raises(simdex.CorruptError):
        simdex.Index.open(broken).verify()
    assert issubclass(simdex.CorruptError, simdex.Error)
    # Opened in memory or populated, every block is checked at open: the damage is found
    # there, not by whichever query first reads the block.
    for kw in ({"in_memory": True}, {"populate": True}):
        with pytest.raises(simdex.CorruptError, match=r"table-00\.sxt.*crc32|crc32.*table-00\.sxt"):
            simdex.Index.open(broken, **kw)


def test_store_round_trip_threads_and_errors(tmp_path: Path) -> None:
    fps = sample(2000, 3)
    ids = np.arange(len(fps), dtype=np.uint64)
    path = tmp_path / "st"
    with simdex.Store(path, create=True, k=3, design="4", sync="manual", max_delta=500) as s:
        s.insert(fps[:1000], ids[:1000])
        stop = threading.Event()
        seen: list[int] = []

        def reader() -> None:
            while not stop.is_set():
                q, f, d, i = s.near_many(fps[:50])
                seen.append(len(i))

        ts = [threading.Thread(target=reader) for _ in range(2)]
        for t in ts:
            t.start()
        s.insert(fps[1000:], ids[1000:])
        stop.set()
        for t in ts:
            t.join()
        assert seen
        s.delete(np.array([0, 1], dtype=np.uint64))
        assert s.compact() in (True, False)
        # One query answers as a batch does, row for row, at the default k and at each k.
        for k in (None, 0, 2, 3):
            bq, bf, bd, bi = s.near_many(fps[:30], k)
            for n in range(30):
                rows = bq == n
                one = s.near(int(fps[n]), k)
                assert [x.tolist() for x in one] == [bf[rows].tolist(), bd[rows].tolist(), bi[rows].tolist()]
        f, d, i = s.near(int(fps[2]))
        want_ids = {int(x) for x in ids[fps == fps[2]]}
        assert want_ids <= set(i.tolist())
        assert s.ids_of(int(fps[0])).tolist() == [x for x in ids[fps == fps[0]].tolist() if x > 1]
        q, f, d, i = s.near_many(fps[:20], 2)
        for n in range(20):
            rows = q == n
            assert sorted(set(f[rows].tolist())) == sorted({f for _, f in brute(fps, int(fps[n]), 2)} - (
                {int(fps[0])} if int(fps[0]) not in fps[2:].tolist() else set()
            ) - ({int(fps[1])} if int(fps[1]) not in fps[np.arange(len(fps)) != 1].tolist() else set()))
        with pytest.raises(simdex.LockedError):
            simdex.Store(path)
        st = s.stats()
        assert st["k"] == 3 and st["design"] == "4"
    with pytest.raises(simdex.Error, match="closed"):
        s.near(1)
    ro = simdex.Store(path, read_only=True, populate=True)
    assert ro.ids_of(int(fps[5])).size >= 1
    with pytest.raises(simdex.InvalidArgument):
        ro.insert(fps[:1], ids[:1])
    with pytest.raises(simdex.InvalidArgument, match="differ in length"):
        simdex.Store(tmp_path / "s2", create=True).insert(fps[:3], ids[:2])
    with pytest.raises(simdex.InvalidArgument, match="sync"):
        simdex.Store(tmp_path / "s3", create=True, sync="sometimes")
    a = simdex.Store(tmp_path / "a", create=True, design="4")
    b = simdex.Store(tmp_path / "b", create=True, design="4")
    a.insert(fps[:10], ids[:10])
    b.insert(fps[10:20], ids[10:20])
    simdex.Store.merge(a, b, tmp_path / "ab")
    a.close()
    b.close()
    with simdex.Store(tmp_path / "ab", read_only=True) as m:
        assert m.stats()["pairs"] == 20


def test_hash_dedup_and_idf(tmp_path: Path) -> None:
    base = " ".join(f"word{i}" for i in range(300))
    # Case and punctuation do not matter: the second text has the first one's features.
    texts = [base, base.upper().replace(" ", ", "), "something entirely different " * 20, "", "!!!"]
    fps = simdex.hash(texts)
    assert fps.dtype == np.uint64 and len(fps) == 5
    assert fps[0] == fps[1] and fps[3] == fps[4] == 0
    assert np.array_equal(simdex.hash(texts, threads=1), fps)
    clusters = simdex.dedup(texts)
    assert clusters.tolist() == [0, 0, 2, 3, 4], "empty and punctuation-only texts pair with nothing"
    clusters, (a, b, d) = simdex.dedup(texts, return_pairs=True)
    assert list(zip(a.tolist(), b.tolist())) == [(0, 1)]
    fp_clusters = simdex.dedup(np.array([5, 5, 7, 2**63], dtype=np.uint64), k=1)
    assert fp_clusters.tolist() == [0, 0, 0, 3]
    idf = simdex.Idf.learn(texts * 3)
    idf.save(tmp_path / "w.idf")
    back = simdex.Idf.load(tmp_path / "w.idf")
    assert back.docs == 15 and back.shingle == 2
    assert np.array_equal(simdex.hash(texts, idf=idf), simdex.hash(texts, idf=back))
    with pytest.raises(simdex.InvalidArgument, match="shingle"):
        simdex.hash(texts, idf=idf, shingle=3)
    html = "<html><head><title>x</title></head><body><nav>menu</nav><p>" + base + "</p></body></html>"
    assert simdex.hash([html], html=True)[0] == fps[0]
    with pytest.raises(TypeError):
        simdex.hash("not a list")


def test_dedup_verify_is_exact_on_template_pages() -> None:
    rng = np.random.default_rng(3)
    template = " ".join(f"t{x}" for x in rng.integers(0, 3000, size=300))
    texts, planted = [], set()
    for i in range(200):
        body = [f"w{x}" for x in rng.integers(0, 5000, size=int(rng.integers(30, 120)))]
        texts.append(template + " " + " ".join(body))
        if i % 4 == 0:
            body[3] = "changed"
            planted.add((len(texts) - 1, len(texts)))
            texts.append(template + " " + " ".join(body))

    def shingles(t: str) -> set:
        w = t.split()
        return {" ".join(w[i : i + 3]) for i in range(len(w) - 2)}

    sets = [shingles(t) for t in texts]
    truth = {
        (i, j)
        for i in range(len(texts))
        for j in range(i + 1, len(texts))
        if len(sets[i] & sets[j]) / len(sets[i] | sets[j]) >= 0.9
    }
    clusters, (a, b, d, jac) = simdex.dedup(texts, verify=0.9, return_pairs=True)
    got = set(zip(a.tolist(), b.tolist()))
    # Exactly the candidates (count-weighted fingerprints within the default candidate k 11)
    # at Jaccard >= 0.9: nearly every pair shares the template, so the prefix filter works here
    # and must drop none of them.
    fps = [int(f) for f in simdex.hash(texts)]
    within = {(i, j) for i, j in truth if bin(fps[i] ^ fps[j]).count("1") <= 11}
    assert got == within
    assert got <= truth, "verified pairs are near-duplicates"
    assert len(got) >= 0.95 * len(truth) and planted <= truth
    assert np.all(jac >= 0.9)
    for i, j in got:
        assert clusters[i] == clusters[j]
    with pytest.raises(TypeError):
        simdex.dedup(np.zeros(3, np.uint64), verify=0.9)


def test_arrow_input_in_place() -> None:
    pa = pytest.importorskip("pyarrow")
    texts = ["alpha beta gamma", None, "delta epsilon zeta eta", ""] * 50
    want = simdex.hash([t or "" for t in texts])
    arr = pa.array(texts)
    assert np.array_equal(simdex.hash(arr), want)
    assert np.array_equal(simdex.hash(arr.slice(3, 100)), want[3:103])
    assert np.array_equal(simdex.hash(pa.array(texts, pa.large_string())), want)
    chunked = pa.chunked_array([arr.slice(0, 77), arr.slice(77)])
    assert np.array_equal(simdex.hash(chunked), want)
    with pytest.raises(TypeError):
        simdex.hash(pa.array([1, 2]))


@pytest.mark.skipif(simdex_cli() is None, reason="simdex CLI not built (cargo build --release)")
def test_round_trip_with_the_cli(tmp_path: Path) -> None:
    cli = simdex_cli()
    assert cli is not None
    fps = sample(3000, 5)
    # Python builds, the CLI reads.
    simdex.Index.build(tmp_path / "py", fps, design="4")
    q = tmp_path / "q.hex"
    q.write_text("".join(f"{int(f):016x}\n" for f in fps[:30]))
    got = subprocess.run(
        [cli, "query", str(tmp_path / "py"), "--input", str(q)], capture_output=True, text=True, check=True
    ).stdout
    rows = {tuple(line.split("\t")) for line in got.splitlines()}
    qi, f, d = simdex.Index.open(tmp_path / "py").near_many(fps[:30])
    assert rows == {(f"{int(fps[a]):016x}", f"{int(b):016x}", str(c)) for a, b, c in zip(qi, f, d)}
    # The CLI builds, Python reads; the CLI's `hash` equals simdex.hash.
    src = tmp_path / "fps.hex"
    src.write_text("".join(f"{int(f):016x}\n" for f in fps))
    subprocess.run([cli, "build", "--input", str(src), "--out", str(tmp_path / "cli"), "--quiet"], check=True)
    assert len(simdex.Index.open(tmp_path / "cli")) == len(np.unique(fps))
    doc = tmp_path / "doc.txt"
    doc.write_text("a document about foxes and dogs, hashed twice")
    line = subprocess.run([cli, "hash", str(doc)], capture_output=True, text=True, check=True).stdout
    assert int(line.split("\t")[0], 16) == int(simdex.hash([doc.read_text()])[0])


def test_docstrings_and_stubs_ship() -> None:
    pkg = Path(simdex.__file__).parent
    assert (pkg / "py.typed").exists() and (pkg / "_simdex.pyi").exists()
    for obj in (simdex.hash, simdex.dedup, simdex.Index.build, simdex.Store.insert, simdex.Idf.learn):
        assert obj.__doc__, obj
    assert os.environ.get("PYTHONHASHSEED", "") != "never"


def test_the_dedup_example_runs(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    import json
    import sys

    rng = np.random.default_rng(7)
    rows = []
    for i in range(300):
        text = " ".join(f"w{x}" for x in rng.integers(0, 3000, size=120))
        rows.append({"id": i, "text": text})
        if i % 10 == 0:
            rows.append({"id": 10_000 + i, "text": text.upper() + " !"})
    # A line over pyarrow's default 1 MB block.
    rows.append({"id": 99_999, "text": " ".join(f"long{i}" for i in range(200_000))})
    src = tmp_path / "c.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "kept.parquet"
    subprocess.run(
        [sys.executable, str(REPO / "examples" / "python" / "dedup_corpus.py"), str(src), "--out", str(out)],
        check=True,
    )
    import pyarrow.parquet as pq

    kept = pq.read_table(out)
    assert kept.num_rows == 301
    assert sorted(kept.column("id").to_pylist()) == [*range(300), 99_999]


def test_verification_within_mem_bytes_gives_the_same_answer() -> None:
    """Shingle sets are held within ``mem_bytes``: a tiny budget takes more passes over the
    texts and gives the same pairs and clusters."""
    rng = np.random.default_rng(3)
    base = [" ".join(f"w{x}" for x in rng.integers(0, 500, size=60)) for _ in range(200)]
    texts = base + [t.replace("w1 ", "v1 ", 1) for t in base[:100]]
    want = simdex.dedup(texts, verify=0.8, return_pairs=True)
    # Below what the run needs: refused with the least that would do (a pass per row, else).
    # What a run holds grows with its budget: the least is found by asking again.
    least, got = 4096, None
    for _ in range(8):
        try:
            got = simdex.dedup(texts, verify=0.8, return_pairs=True, mem_bytes=least)
            break
        except simdex.InvalidArgument as e:
            assert "too small" in str(e)
            least = max(least + 1, int(str(e).split("at least ")[1].split(" ")[0]))
    assert got is not None and least > 4096
    assert len(want[1][0]) >= 90
    assert (want[0] == got[0]).all()
    for a, b in zip(want[1], got[1]):
        assert (a == b).all()


def test_document_store_ingest(tmp_path: Path) -> None:
    rng = np.random.default_rng(8)
    template = " ".join(f"t{x}" for x in rng.integers(0, 3000, size=300))
    texts, ids, planted = [], [], {}
    for i in range(300):
        body = [f"w{x}" for x in rng.integers(0, 5000, size=int(rng.integers(150, 300)))]
        if i % 5 == 4:
            body = texts[-1].split()[300:]
            body[7] = "changed"
            planted[f"https://x.org/{i}"] = f"https://x.org/{i - 1}"
        texts.append(template + " " + " ".join(body))
        ids.append(f"https://x.org/{i}")
    path = tmp_path / "docs"
    with simdex.Store(path, create=True, documents=True, k=7, sync="manual") as s:
        assert s.recipe == {
            "shingle": 2,
            "html": False,
            "weights": "count",
            "sketch_bins": 512,
            "sketch_bits": 2,
            "exact": None,
        }
        dry = s.ingest(ids, texts, verify=0.9, check_only=True)
        assert not dry["stored"].any() and s.stats()["delta_pairs"] == 0
        # Split into two calls, the second as an Arrow array: the same answers.
        first = s.ingest(ids[:123], texts[:123], verify=0.9)
        import pyarrow as pa

        second = s.ingest(pa.array(ids[123:]), pa.array(texts[123:]), verify=0.9)
        got = {ids[i]: m for i, m in enumerate(first["matched"] + second["matched"]) if m is not None}
        assert got == planted
        assert dry["matched"] == first["matched"] + second["matched"]
        dup = np.concatenate([first["duplicate"], second["duplicate"]])
        assert dup.sum() == len(planted) and np.all(np.concatenate([first["similarity"], second["similarity"]])[dup] >= 0.9)
        assert s.stats()["delta_pairs"] == 300 - len(planted)
        # Checked again: every stored page is already stored, every planted copy a duplicate.
        again = s.ingest(ids, texts, verify=0.9, check_only=True)
        assert again["already_stored"].sum() == 300 - len(planted)
        assert (again["already_stored"] | again["duplicate"]).all()
        # Raw fingerprints would bypass the recipe: refused.
        with pytest.raises(simdex.InvalidArgument, match="document store"):
            s.insert(np.array([0xFEED], dtype=np.uint64), np.array([7], dtype=np.uint64))
    # Reopened with another recipe setting: refused; numeric ids work too.
    with pytest.raises(simdex.InvalidArgument):
        simdex.Store(path, documents=True, shingle=3)
    with simdex.Store(tmp_path / "n", create=True, documents=True, learn_from=texts * 4) as s:
        assert s.recipe["weights"] == "idf"
        r = s.ingest(np.arange(len(texts), dtype=np.uint64), texts)
        # Fingerprints alone at the default k = 3: most planted copies, named by number.
        hits = [(i, m) for i, m in enumerate(r["matched"]) if m is not None]
        assert len(hits) >= len(planted) // 2 and all(m == i - 1 for i, m in hits)
    with simdex.Store(tmp_path / "raw", create=True) as s, pytest.raises(simdex.InvalidArgument):
        s.ingest([1], ["a b c"])


def test_exact_document_store_equals_brute_force(tmp_path: Path) -> None:
    """A store created with exact=T answers ingest(verify=T) as a brute-force oracle does:
    each page against every page stored before it, exact word 3-shingle Jaccard, the most
    similar (ties to the earliest stored) -- on a site whose siblings sit around T."""
    rng = np.random.default_rng(4)
    template = [f"t{x}" for x in rng.integers(0, 2000, size=120)]
    bases = [[f"w{x}" for x in rng.integers(0, 4000, size=40)] for _ in range(30)]
    texts, ids = [], []
    for i in range(400):
        words = list(bases[int(rng.integers(0, 30))])
        for _ in range(int(rng.integers(0, 5))):
            words[int(rng.integers(0, len(words)))] = f"w{int(rng.integers(0, 4000))}"
        texts.append(" ".join(template + words if i % 2 else words))
        ids.append(f"p{i}")

    def shingles(t: str) -> set[str]:
        w = t.split()
        return {" ".join(w[i : i + 3]) for i in range(len(w) - 2)}

    t = 0.85
    stored: list[tuple[str, set[str]]] = []
    want: list[tuple[str, float] | None] = []
    for i, text in zip(ids, texts):
        s = shingles(text)
        best = None
        for j, o in stored:
            sim = len(s & o) / len(s | o)
            if sim >= t and (best is None or sim > best[1]):
                best = (j, sim)
        want.append(best)
        if best is None:
            stored.append((i, s))
    assert sum(w is not None for w in want) > 100
    # (learn_from: IDF weights, and the shingle order of the prefixes.)
    with simdex.Store(tmp_path / "x", create=True, documents=True, exact=0.8, learn_from=texts * 3) as s:
        assert s.recipe["exact"] == 0.8
        dry = s.ingest(ids, texts, verify=t, check_only=True)
        got = s.ingest(ids[:150], texts[:150], verify=t)
        rest = s.ingest(ids[150:], texts[150:], verify=t)
        matched = got["matched"] + rest["matched"]
        sims = np.concatenate([got["similarity"], rest["similarity"]])
        assert matched == [w[0] if w else None for w in want]
        for w, sim in zip(want, sims):
            if w is not None:
                assert abs(sim - w[1]) < 1e-12
        assert dry["matched"] == matched
        # The sets are in the log until a compaction writes them to the generation's SETS.
        before = s.stats()["sets_bytes"]
        s.compact()
        assert s.stats()["sets_bytes"] > before + 8 * 30 * len(stored)
        # A reader warmed before its first check (its prefix index built) answers as the writer.
        with simdex.Store(tmp_path / "x", read_only=True) as r:
            r.warm()
            now = s.ingest(ids, texts, verify=t, check_only=True)["matched"]
            assert r.ingest(ids, texts, verify=t, check_only=True)["matched"] == now
            # A reader opened again sees what was written since; a writer has nothing to reopen.
            extra = [f"{texts[0]} again", "a page of words nobody has written before at all"]
            added = sum(s.ingest(["e1", "e2"], extra, verify=t)["stored"])
            assert r.stats()["delta_pairs"] < s.stats()["delta_pairs"]
            r.reopen()
            assert r.stats()["delta_pairs"] == s.stats()["delta_pairs"]
            assert r.ingest(ids, texts, verify=t, check_only=True)["matched"] == s.ingest(
                ids, texts, verify=t, check_only=True
            )["matched"]
            with pytest.raises(simdex.InvalidArgument, match="read-only"):
                s.reopen()
        with pytest.raises(simdex.InvalidArgument, match="below"):
            s.ingest(ids, texts, verify=0.7)
        # Expiry: the first call's pages by seq, then the rest by time; compaction reclaims.
        first = sum(m is None for m in got["matched"])
        assert s.expire(before_seq=first + 1) == first
        now_utc = datetime.datetime.now(datetime.timezone.utc)
        assert s.expire(before=now_utc) == len(stored) - first + added
        with pytest.raises(ValueError, match="one of"):
            s.expire()
        s.compact()
        st = s.stats()
        assert st["documents"] == 0 and st["sets_bytes"] == st["sets_live_bytes"] + 16
        assert st["max_seq"] == len(stored) + added
    # An existing store refuses another exact threshold; a raw store refuses exact=.
    with pytest.raises(simdex.InvalidArgument, match="exact"):
        simdex.Store(tmp_path / "x", documents=True, exact=0.9)
    with pytest.raises(simdex.InvalidArgument, match="documents=True"):
        simdex.Store(tmp_path / "y", create=True, exact=0.9)
