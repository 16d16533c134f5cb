"""The per-URL fault boundary, through the real fetcher (aiohttp) against a raw loopback server.

Whatever bytes a server sends as header values, reason phrases, charset labels, encodings and bodies: every URL
ends with exactly one result, the fetcher keeps working, and what is written -- page record lines, WARC
records -- reads back as valid UTF-8 JSON and valid WARC.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from warcio.archiveiterator import ArchiveIterator

from raycrawl.adapters import fetcher as fetcher_module
from raycrawl.adapters.fetcher import Fetcher, FetchSettings
from raycrawl.adapters.output import PagesBuffer
from raycrawl.adapters.storage import resolve
from raycrawl.core.pages import fetch_record
from raycrawl.core.records import FetchResult, Lease, UrlEntry

SERVER_IP = "127.0.0.1"
CONTROLS_OR_SURROGATES = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\ud800-\udfff]")  # (tab is text)


class RawServer:
    """Answers ``GET /<n>`` with ``responses[n]``, byte for byte, then closes the connection."""

    def __init__(self) -> None:
        self.responses: dict[str, bytes] = {}
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((SERVER_IP, 0))
        self.sock.listen(64)
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            data = b""
            try:
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    data += chunk
                path = data.split(b" ", 2)[1].decode("latin-1")
                conn.sendall(self.responses.get(path, b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"))
                conn.shutdown(socket.SHUT_WR)
            except OSError:
                return

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


@pytest.fixture(scope="module")
def server() -> Iterator[RawServer]:
    s = RawServer()
    yield s
    s.close()


@pytest.fixture(scope="module")
def warc_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("warc")


@pytest.fixture(scope="module")
def fetcher(warc_dir: Path) -> Iterator[Fetcher]:
    f = Fetcher(
        FetchSettings(timeout=2.0, fetch_deadline=3.0, allow_network=("127.0.0.1/32",), warc_buffer=str(warc_dir))
    )
    yield f
    f.close()


def _leases(port: int, paths: list[str]) -> list[Lease]:
    now = time.time()
    return [
        Lease(i + 1, 0, "page", now, now + 600, UrlEntry(f"http://{SERVER_IP}:{port}{p}", 0))
        for i, p in enumerate(paths)
    ]


def _fetch_all(fetcher: Fetcher, leases: list[Lease]) -> list[FetchResult]:
    return [r for group in fetcher.fetch_stream(leases) for r in group]


def _response(reason: bytes, value: bytes, label: bytes, coding: str, body: bytes) -> bytes:
    payload = zlib.compress(body) if coding == "deflate" else body
    head = [b"HTTP/1.1 200 " + reason, b"Content-Type: text/html; charset=" + label, b"X-Value: " + value]
    if coding:
        head.append(b"Content-Encoding: " + coding.encode())
    head.append(b"Content-Length: %d" % len(payload))
    return b"\r\n".join(head) + b"\r\n\r\n" + payload


any_bytes = st.binary(max_size=60)
response = st.builds(
    _response,
    any_bytes,
    any_bytes,
    st.one_of(any_bytes, st.sampled_from([b"zlib", b"base64", b"rot13", b"utf-16", b"x-user-defined", b"utf-8"])),
    st.sampled_from(["", "deflate", "gzip", "br", "x-\xff"]),
    st.one_of(any_bytes, st.builds(lambda b: b'<a href="/x' + b + b'">l</a>' + b, any_bytes)),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(response, min_size=1, max_size=4))
def test_arbitrary_server_bytes_end_as_one_record_each_and_valid_output(
    server: RawServer, fetcher: Fetcher, warc_dir: Path, tmp_path: Path, responses: list[bytes]
) -> None:
    tag = f"{time.monotonic_ns()}"
    paths = [f"/{tag}-{i}" for i in range(len(responses))]
    server.responses.update(zip(paths, responses, strict=True))
    leases = _leases(server.port, paths)
    results = _fetch_all(fetcher, leases)
    assert sorted(r.lease.lease_id for r in results) == [lease.lease_id for lease in leases]  # one each

    storage = resolve(str(tmp_path / tag))
    writer = PagesBuffer()
    writer.write(fetch_record(r) for r in results)
    part = writer.cut(storage, 1)
    writer.close()
    assert part is not None
    lines = (storage.read(part) or b"").decode("utf-8").splitlines()  # strict UTF-8
    assert len(lines) == len(results)
    for line in lines:
        record = json.loads(line)
        assert record["outcome"] in ("fetched", "error", "too_large")
        for text in (record["content_type"], record["error"]):
            assert text is None or not CONTROLS_OR_SURROGATES.search(text), text
    for path in warc_dir.glob("*.warc.gz"):
        with path.open("rb") as f:
            for rec in ArchiveIterator(f):
                rec.content_stream().read()

    # The fetcher goes on: an ordinary page after all of that.
    server.responses["/ok"] = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 2\r\n\r\nok"
    (ok,) = _fetch_all(fetcher, _leases(server.port, ["/ok"]))
    assert ok.status == 200 and ok.error is None


def test_an_exception_anywhere_in_one_url_is_that_urls_error_only(
    server: RawServer, fetcher: Fetcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = b'HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 20\r\n\r\n<a href="/next">x</a>'[:-1]
    server.responses.update({"/boom": page, "/fine": page})
    real = fetcher_module.extract_links

    def exploding(html: str, url: str, *args: object) -> object:
        if url.endswith("/boom"):
            raise MemoryError("a parser gave up")  # not an exception a fetch expects: the boundary must hold
        return real(html, url, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(fetcher_module, "extract_links", exploding)
    results = {r.lease.url.rsplit("/", 1)[1]: r for r in _fetch_all(fetcher, _leases(server.port, ["/boom", "/fine"]))}
    assert results["boom"].error == "MemoryError: a parser gave up" and results["boom"].fault == "MemoryError"
    assert not results["boom"].transient and results["boom"].outlinks == []
    assert fetch_record(results["boom"])["outcome"] == "error"
    assert results["fine"].error is None and results["fine"].outlinks == [f"http://{SERVER_IP}:{server.port}/next"]
