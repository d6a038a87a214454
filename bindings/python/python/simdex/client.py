"""A client of ``simdex serve``: the methods and return types of :class:`simdex.Store`, over
HTTP (the API is ``format-spec/openapi.json``). Pure Python (``http.client``), one keep-alive
connection per client; fingerprint batches travel as little-endian u64 arrays.

Every operation of the server is safe to send again (an insert of a stored pair, a delete of
a deleted id and an ingest of a stored document change nothing), so the client retries a call
that met a 503 (after the server's ``Retry-After``) or a dropped connection, up to ``retries``
times with growing waits, and then raises.
"""

from __future__ import annotations

import datetime
import http.client
import json
import socket
import ssl
import time
import urllib.parse
from typing import Any, Sequence

import numpy as np

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

_BINARY = "application/octet-stream"
_JSON = "application/json"

# The server's stable error codes, as this package's exceptions.
_ERRORS: dict[str, type[Error]] = {
    "invalid_argument": InvalidArgument,
    "too_large": InvalidArgument,
    "unsupported_media_type": InvalidArgument,
    "malformed_request": InvalidArgument,
    "method_not_allowed": InvalidArgument,
    "not_found": InvalidArgument,
    "corrupt": CorruptError,
    "unsupported": UnsupportedError,
    "io": IoError,
    "locked": LockedError,
    "poisoned": PoisonedError,
    "deadline_exceeded": CancelledError,
}


class ServerError(Error):
    """A refusal the server gave that no other class names (``unauthorized``, ``read_only``,
    ``overloaded`` after every retry, ``internal``...). ``code`` and ``status`` say which."""


def _u64(a: Any, what: str) -> np.ndarray:
    arr = np.asarray(a)
    if arr.ndim != 1:
        raise InvalidArgument(f"{what} must be one-dimensional, not of shape {arr.shape}")
    if arr.dtype == np.uint64:
        return arr
    if arr.size == 0:
        return arr.astype(np.uint64)
    if arr.dtype.kind not in "iu":
        raise InvalidArgument(f"{what} must be integers, not {arr.dtype}")
    if arr.dtype.kind == "i" and (arr < 0).any():
        raise InvalidArgument(f"{what} has a negative value")
    return arr.astype(np.uint64)


def _ids_json(ids: Any) -> list[int | str]:
    if isinstance(ids, np.ndarray):
        return [int(x) for x in _u64(ids, "ids")]
    out: list[int | str] = []
    for i, x in enumerate(ids):
        if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer, str)):
            raise InvalidArgument(f"ids[{i}] is {x!r}: an id is an int or a str")
        out.append(x if isinstance(x, str) else int(x))
    return out


class Client:
    """A connection to ``simdex serve`` at ``url`` (``http://host:port``, or ``https://`` for a
    server given a certificate).

    ``token``: the server's bearer token, if it has one. ``ssl_context``: how to verify an
    HTTPS server (default: the system's trusted certificates; for a private CA,
    ``ssl.create_default_context(cafile=...)``). ``timeout``: seconds per request.
    ``retries``: attempts after a 503 or a dropped connection (0: none). Use as a context
    manager, or call :meth:`close`. Not safe to share between threads: give each thread its
    own client (they are cheap).
    """

    def __init__(
        self,
        url: str = "http://127.0.0.1:7700",
        *,
        token: str | None = None,
        timeout: float = 60.0,
        retries: int = 5,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise InvalidArgument(f"url {url!r}: give http://host:port or https://host:port")
        if retries < 0 or timeout <= 0:
            raise InvalidArgument("retries must be 0 or more and timeout more than 0")
        self._host = u.hostname
        self._tls = ssl_context or ssl.create_default_context() if u.scheme == "https" else None
        self._port = u.port or (443 if self._tls else 80)
        self._token = token
        self._timeout = timeout
        self._retries = retries
        self._conn: http.client.HTTPConnection | None = None

    # -- the wire -----------------------------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        content_type: str | None = None,
        binary: bool = False,
    ) -> Any:
        headers = {"Accept": _BINARY if binary else _JSON}
        if content_type:
            headers["Content-Type"] = content_type
        if self._token is not None:
            headers["Authorization"] = f"Bearer {self._token}"
        wait = 0.05
        for attempt in range(self._retries + 1):
            last = attempt == self._retries
            try:
                if self._conn is None:
                    self._conn = (
                        http.client.HTTPSConnection(
                            self._host, self._port, timeout=self._timeout, context=self._tls
                        )
                        if self._tls is not None
                        else http.client.HTTPConnection(
                            self._host, self._port, timeout=self._timeout
                        )
                    )
                self._conn.request(method, path, body=body, headers=headers)
                r = self._conn.getresponse()
                data = r.read()
            except (ConnectionError, http.client.HTTPException, socket.timeout, OSError) as e:
                self.close()
                if last:
                    raise IoError(f"{method} {path} to {self._host}:{self._port}: {e}") from e
                time.sleep(wait)
                wait = min(wait * 2, 2.0)
                continue
            if r.getheader("Connection", "").lower() == "close":
                self.close()
            if r.status == 200:
                if binary and r.getheader("Content-Type", "").startswith(_BINARY):
                    return data
                return json.loads(data) if data else None
            if r.status == 503 and not last:
                after = r.getheader("Retry-After")
                time.sleep(min(float(after), 10.0) if after else wait)
                wait = min(wait * 2, 2.0)
                continue
            self._raise(r.status, data, method, path)
        raise AssertionError("unreachable")

    @staticmethod
    def _raise(status: int, data: bytes, method: str, path: str) -> None:
        try:
            err = json.loads(data)["error"]
            code, message = str(err["code"]), str(err["message"])
        except (ValueError, KeyError, TypeError):
            code, message = "http", data[:200].decode("utf-8", "replace")
        cls = _ERRORS.get(code, ServerError)
        e = cls(f"{method} {path}: {message} ({code}, HTTP {status})")
        e.code = code  # type: ignore[attr-defined]
        e.status = status  # type: ignore[attr-defined]
        raise e

    def _json(self, path: str, body: dict[str, Any]) -> Any:
        return self._request("POST", path, json.dumps(body).encode(), _JSON)

    @staticmethod
    def _fp(fingerprint: int) -> str:
        f = int(fingerprint)
        if not 0 <= f < 1 << 64:
            raise InvalidArgument(f"fingerprint {fingerprint} is not a u64")
        return f"{f:x}"

    # -- queries ------------------------------------------------------------------------

    def near(
        self, fingerprint: int, k: int | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(fingerprint, distance, id) rows within ``k``, by distance, fingerprint, id."""
        q = f"/v1/near?fingerprint={self._fp(fingerprint)}"
        if k is not None:
            q += f"&k={int(k)}"
        data = self._request("GET", q, binary=True)
        n = int(np.frombuffer(data, "<u8", 1)[0])
        f = np.frombuffer(data, "<u8", n, 8).astype(np.uint64)
        i = np.frombuffer(data, "<u8", n, 8 + 8 * n).astype(np.uint64)
        d = np.frombuffer(data, "<u4", n, 8 + 16 * n).astype(np.uint32)
        return f, d, i

    def near_many(
        self, fingerprints: Any, k: int | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(query_index, fingerprint, distance, id) rows of every query, by query."""
        fps = _u64(fingerprints, "fingerprints")
        q = "/v1/near-many" + (f"?k={int(k)}" if k is not None else "")
        data = self._request("POST", q, fps.astype("<u8").tobytes(), _BINARY, binary=True)
        n = int(np.frombuffer(data, "<u8", 1)[0])
        qi = np.frombuffer(data, "<u8", n, 8).astype(np.int64)
        f = np.frombuffer(data, "<u8", n, 8 + 8 * n).astype(np.uint64)
        i = np.frombuffer(data, "<u8", n, 8 + 16 * n).astype(np.uint64)
        d = np.frombuffer(data, "<u4", n, 8 + 24 * n).astype(np.uint32)
        return qi, f, d, i

    def ids_of(self, fingerprint: int) -> np.ndarray:
        """Ids stored with exactly ``fingerprint``."""
        v = self._request("GET", f"/v1/ids-of?fingerprint={self._fp(fingerprint)}")
        return np.asarray(v["ids"], dtype=np.uint64)

    def stats(self) -> dict[str, Any]:
        """The keys of :meth:`simdex.Store.stats`, plus ``read_only`` and ``recipe``."""
        return dict(self._request("GET", "/v1/stats"))

    @property
    def recipe(self) -> dict[str, Any] | None:
        """A document store's recipe (as :attr:`simdex.Store.recipe`); None for raw stores."""
        return self.stats()["recipe"]

    def health(self) -> dict[str, Any]:
        """``status`` ("ok"), ``mode`` ("read-write" or "read-only") and ``generation``."""
        return dict(self._request("GET", "/v1/health"))

    # -- writes -------------------------------------------------------------------------

    def insert(self, fingerprints: Any, ids: Any) -> None:
        """Store ``fingerprints[i]`` for document ``ids[i]``; returns once the server has made
        them as durable as its ``--sync`` says."""
        f, i = _u64(fingerprints, "fingerprints"), _u64(ids, "ids")
        if len(f) != len(i):
            raise InvalidArgument(f"{len(f)} fingerprints and {len(i)} ids")
        body = np.concatenate([f, i]).astype("<u8").tobytes()
        self._request("POST", "/v1/insert", body, _BINARY)

    def delete(self, ids: Any) -> None:
        """Delete every pair of each id (a document store: each document, by its id)."""
        self._json("/v1/delete", {"ids": _ids_json(ids)})

    def ingest(
        self,
        ids: Any,
        texts: Sequence[str],
        *,
        verify: float | None = None,
        k: int | None = None,
        check_only: bool = False,
        store_only: bool = False,
    ) -> dict[str, Any]:
        """As :meth:`simdex.Store.ingest`: ``{"duplicate", "matched", "similarity",
        "distance", "stored", "already_stored"}``, arrays as there (``matched`` a list)."""
        id_list = _ids_json(ids)
        text_list = [t if isinstance(t, str) else str(t) for t in texts]
        body: dict[str, Any] = {"ids": id_list, "texts": text_list}
        if verify is not None:
            body["verify"] = float(verify)
        if k is not None:
            body["k"] = int(k)
        if store_only:
            body["store_only"] = True
        v = self._json("/v1/check" if check_only else "/v1/ingest", body)
        sim = [float("nan") if x is None else float(x) for x in v["similarity"]]
        return {
            "duplicate": np.asarray(v["duplicate"], dtype=bool),
            "matched": list(v["matched"]),
            "similarity": np.asarray(sim, dtype=np.float64),
            "distance": np.asarray(v["distance"], dtype=np.int32),
            "stored": np.asarray(v["stored"], dtype=bool),
            "already_stored": np.asarray(v["already_stored"], dtype=bool),
        }

    def expire(
        self,
        *,
        before: float | datetime.datetime | None = None,
        before_seq: int | None = None,
    ) -> int:
        """Delete every document stored before ``before`` (Unix seconds or a datetime) or
        numbered below ``before_seq``; how many."""
        if (before is None) == (before_seq is None):
            raise InvalidArgument("give one of before or before_seq")
        if isinstance(before, datetime.datetime):
            before = before.timestamp()
        body = {"before": float(before)} if before is not None else {"before_seq": before_seq}
        return int(self._json("/v1/expire", body)["deleted"])

    def flush(self) -> None:
        """Sync every acknowledged write to stable storage."""
        self._request("POST", "/v1/flush")

    def compact(self) -> bool:
        """Fold the logged writes into a new generation; False if there was nothing."""
        return bool(self._request("POST", "/v1/compact")["compacted"])

    # -- lifetime -----------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection (the next call opens another). Idempotent."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *args: object) -> bool:
        self.close()
        return False
