"""simdex.Client against `simdex serve`: the same answers and types as simdex.Store on the same
data, writes that the store then holds, the server's errors as this package's exceptions, and
retries after 503 (against a scripted server)."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import ssl
import subprocess
import threading
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

import simdex

ROOT = Path(__file__).resolve().parents[3]


def _binary() -> str | None:
    b = os.environ.get("SIMDEX_BIN") or str(ROOT / "target" / "release" / "simdex")
    if Path(b).exists():
        return b
    if os.environ.get("SIMDEX_REQUIRE_SERVER") == "1":
        pytest.fail(f"{b} is missing (cargo build --release -p simdex-cli)")
    return None


BIN = _binary()
needs_server = pytest.mark.skipif(BIN is None, reason="the simdex binary is not built")


class Server:
    def __init__(self, store: Path, *extra: str, env: dict[str, str] | None = None) -> None:
        assert BIN is not None
        self.proc = subprocess.Popen(
            [BIN, "serve", str(store), "--listen", "127.0.0.1:0", *extra],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
        )
        assert self.proc.stderr is not None
        line = json.loads(self.proc.stderr.readline())
        assert line["msg"] == "listening", line
        self.url = "http://" + line["addr"]
        # Drain the log so that the server never blocks on a full pipe.
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()

    def stop(self) -> None:
        self.proc.terminate()
        assert self.proc.wait(timeout=30) == 0


@pytest.fixture
def raw(tmp_path: Path) -> Iterator[tuple[Path, np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(5)
    fps = rng.integers(0, 2**63, size=3000, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    ids = np.arange(3000, dtype=np.uint64)
    path = tmp_path / "s"
    with simdex.Store(path, create=True, k=3, sync="manual") as s:
        s.insert(fps, ids)
    yield path, fps, ids


def _same(a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype, (x.dtype, y.dtype)
        np.testing.assert_array_equal(x, y)


@needs_server
def test_queries_answer_as_the_store_does(raw: tuple[Path, np.ndarray, np.ndarray]) -> None:
    path, fps, _ = raw
    queries = fps[:400] ^ (np.uint64(1) << (np.arange(400, dtype=np.uint64) % np.uint64(64)))
    with simdex.Store(path, read_only=True) as s:
        want_many = [s.near_many(queries, k) for k in (0, 2, 3)]
        want_one = [s.near(int(q), 3) for q in queries[:50]]
        want_ids = s.ids_of(int(fps[7]))
    srv = Server(path)
    try:
        with simdex.Client(srv.url) as c:
            for k, want in zip((0, 2, 3), want_many):
                _same(c.near_many(queries, k), want)
            for q, want in zip(queries[:50], want_one):
                _same(c.near(int(q), 3), want)
            _same((c.ids_of(int(fps[7])),), (want_ids,))
            _same(c.near_many(np.array([], dtype=np.uint64)), s_empty())
            assert c.health()["status"] == "ok"
            st = c.stats()
            assert st["pairs"] + st["delta_pairs"] == 3000
            assert c.recipe is None
            with pytest.raises(simdex.InvalidArgument, match="above the store's k"):
                c.near(5, 9)
            with pytest.raises(simdex.InvalidArgument):
                c.near_many(np.zeros((2, 2), dtype=np.uint64))
    finally:
        srv.stop()


def s_empty() -> tuple[np.ndarray, ...]:
    return (
        np.array([], dtype=np.int64),
        np.array([], dtype=np.uint64),
        np.array([], dtype=np.uint32),
        np.array([], dtype=np.uint64),
    )


@needs_server
def test_writes_through_the_client_are_in_the_store(
    raw: tuple[Path, np.ndarray, np.ndarray],
) -> None:
    path, fps, ids = raw
    srv = Server(path)
    try:
        with simdex.Client(srv.url) as c:
            new = np.arange(1, 501, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
            c.insert(new, np.arange(10_000, 10_500, dtype=np.uint64))
            c.insert(new[:10], np.arange(10_000, 10_010))  # again: nothing changes
            c.delete(ids[:100])
            c.flush()
            assert c.compact() is True
            st = c.stats()
            assert st["pairs"] == 3000 - 100 + 500
    finally:
        srv.stop()
    with simdex.Store(path, read_only=True) as s:
        assert s.stats()["pairs"] == 3400
        assert list(s.ids_of(int(new[3]))) == [10_003]
        assert len(s.ids_of(int(fps[0]))) == 0


@needs_server
def test_documents_answer_as_the_store_does(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    texts: list[str] = []
    for i in range(600):
        if i % 5 == 4:
            w = texts[-1].split()
            w[int(rng.integers(len(w)))] = "changed"
            texts.append(" ".join(w))
        else:
            texts.append(" ".join(f"w{x}" for x in rng.integers(0, 4000, size=150)))
    ids = [f"https://example.org/{i}" for i in range(600)]
    for name in ("a", "b"):
        with simdex.Store(tmp_path / name, create=True, documents=True, exact=0.9, k=7):
            pass
    with simdex.Store(tmp_path / "b") as s:
        want = [s.ingest(ids[:300], texts[:300], verify=0.9)]
        want.append(s.ingest(ids[300:], texts[300:], verify=0.9, check_only=True))
        want.append(s.ingest(ids[300:], texts[300:], verify=0.9))
    srv = Server(tmp_path / "a")
    try:
        with simdex.Client(srv.url) as c:
            got = [c.ingest(ids[:300], texts[:300], verify=0.9)]
            got.append(c.ingest(ids[300:], texts[300:], verify=0.9, check_only=True))
            got.append(c.ingest(ids[300:], texts[300:], verify=0.9))
            assert c.recipe is not None and c.recipe["exact"] == 0.9
            again = c.ingest(ids[:3], texts[:3])
            assert again["already_stored"].all()
            c.delete(ids[:2])
            assert c.expire(before_seq=5) > 0
    finally:
        srv.stop()
    for g, w in zip(got, want):
        assert g.keys() == w.keys()
        for key in w:
            if key == "matched":
                assert g[key] == w[key]
            else:
                assert g[key].dtype == w[key].dtype, key
                np.testing.assert_array_equal(g[key], w[key])


@needs_server
def test_the_token_and_read_only_refusals(raw: tuple[Path, np.ndarray, np.ndarray]) -> None:
    path, _, _ = raw
    srv = Server(path, env={"SIMDEX_TOKEN": "t0ken"})
    try:
        with simdex.Client(srv.url) as c:
            with pytest.raises(simdex.ServerError) as e:
                c.stats()
            assert e.value.code == "unauthorized"  # type: ignore[attr-defined]
        with simdex.Client(srv.url, token="t0ken") as c:
            st = c.stats()
            assert st["pairs"] + st["delta_pairs"] == 3000
    finally:
        srv.stop()
    ro = Server(path, "--read-only")
    try:
        with simdex.Client(ro.url) as c, pytest.raises(simdex.ServerError, match="read_only"):
            c.insert([1], [2])
    finally:
        ro.stop()


@needs_server
def test_https_with_a_private_ca(raw: tuple[Path, np.ndarray, np.ndarray], tmp_path: Path) -> None:
    path, fps, _ = raw
    (tmp_path / "leaf.ext").write_text(
        "basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"
    )
    ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes".split()
    for args in (
        ["req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=ca"],
        ["req", *ec, "-keyout", "key.pem", "-out", "leaf.csr", "-subj", "/CN=localhost"],
        ["x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
         "-CAcreateserial", "-out", "cert.pem", "-days", "2", "-extfile", "leaf.ext"],
    ):
        subprocess.run(["openssl", *args], cwd=tmp_path, check=True, capture_output=True)
    srv = Server(path, "--tls-cert", str(tmp_path / "cert.pem"), "--tls-key", str(tmp_path / "key.pem"))
    try:
        url = srv.url.replace("http://", "https://")
        ctx = ssl.create_default_context(cafile=str(tmp_path / "ca.pem"))
        with simdex.Client(url, ssl_context=ctx) as c:
            f, d, i = c.near(int(fps[0]), 0)
            assert list(i) == [0]
        with pytest.raises(simdex.IoError), simdex.Client(url, retries=0) as c:
            c.health()  # the CA is not trusted by default
    finally:
        srv.stop()


def test_retries_after_503_and_gives_up_in_the_end() -> None:
    answers = [503, 503, 200]
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            seen.append(self.path)
            status = answers.pop(0) if answers else 503
            body = (
                b'{"status": "ok", "mode": "read-write", "generation": 3}'
                if status == 200
                else b'{"error": {"code": "overloaded", "message": "busy"}}'
            )
            self.send_response(status)
            if status == 503:
                self.send_header("Retry-After", "0")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        with simdex.Client(url, retries=3) as c:
            assert c.health()["generation"] == 3
            assert len(seen) == 3
            with pytest.raises(simdex.ServerError, match="overloaded") as e:
                c.health()
            assert e.value.status == 503  # type: ignore[attr-defined]
            assert len(seen) == 3 + 4
    finally:
        httpd.shutdown()
        httpd.server_close()
    with pytest.raises(simdex.IoError):
        simdex.Client(url, retries=1, timeout=2).health()
    with pytest.raises(simdex.InvalidArgument):
        simdex.Client("ftp://x")


def test_the_binary_is_found_when_required() -> None:
    # CI sets SIMDEX_REQUIRE_SERVER=1: the server tests above must have run, not skipped.
    if os.environ.get("SIMDEX_REQUIRE_SERVER") == "1":
        assert BIN is not None and shutil.which(BIN) is not None
