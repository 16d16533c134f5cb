"""WARC output: one gzip member per record, read back intact by warcio (what the archive tools make of the files:
tests/e2e/test_warc_tools.py)."""

from __future__ import annotations

import base64
import hashlib
import os
import uuid
import zlib
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from warcio.archiveiterator import ArchiveIterator

from raycrawl.adapters.warc import RANDOM_POOL, HttpStatus, WarcSink, new_record_id, warc_date
from raycrawl.core.revisits import payload_digest


def _gzip_members(data: bytes) -> int:
    members = 0
    while data:
        d = zlib.decompressobj(zlib.MAX_WBITS + 16)
        d.decompress(data)
        assert d.eof, "a truncated gzip member"
        data = d.unused_data
        members += 1
    return members


def _all_members(data: bytes) -> bytes:
    out = b""
    while data:
        d = zlib.decompressobj(zlib.MAX_WBITS + 16)
        out += d.decompress(data)
        data = d.unused_data
    return out


def test_each_record_is_its_own_gzip_member_and_reads_back(tmp_path: Path) -> None:
    sink = WarcSink(str(tmp_path), epoch=3)
    bodies = [b"<html>" + bytes(range(256)) * i + b"</html>" for i in range(1, 6)]
    for i, body in enumerate(bodies):
        sink.write(
            f"http://a.test/p/{i}",
            [("Host", "a.test")],
            HttpStatus(200, b"OK", [(b"Content-Type", b"text/html")]),
            body,
        )
    sink.write("http://a.test/big", [("Host", "a.test")], HttpStatus(200, b"OK", []), b"x" * 100, truncated=True)
    sink.close()
    (path,) = tmp_path.glob("raycrawl-e000003-*.warc.gz")
    assert _gzip_members(path.read_bytes()) == 1 + 2 * (len(bodies) + 1)  # warcinfo, then a request and a response each
    with path.open("rb") as f:
        records = [
            (r.rec_type, r.rec_headers.get_header("WARC-Target-URI"), r.rec_headers.get_header("WARC-Truncated"),
             r.content_stream().read())
            for r in ArchiveIterator(f, check_digests="raise")  # (every block and payload digest checked)
        ]  # fmt: skip
    responses = [(uri, truncated, body) for kind, uri, truncated, body in records if kind == "response"]
    assert responses == [(f"http://a.test/p/{i}", None, body) for i, body in enumerate(bodies)] + [
        ("http://a.test/big", "length", b"x" * 100)
    ]
    assert [kind for kind, *_ in records].count("request") == len(bodies) + 1


def test_the_status_line_and_headers_are_stored_as_the_server_sent_them(tmp_path: Path) -> None:
    sink = WarcSink(str(tmp_path))
    raw = [
        (b"Content-Type", b"text/html; charset=\xff\xfe"),
        (b"X-\xe9t\xe9", b"caf\xc3\xa9 \x80"),
        (b"Content-Encoding", b"gzip"),  # (the stored body is the decoded one: this header goes)
        (b"Content-Length", b"12"),
    ]
    sink.write("http://a.test/odd", [("Host", "a.test")], HttpStatus(200, b"\xd0\x9e\xff K", raw), b"hello")
    sink.close()
    (path,) = tmp_path.glob("*.warc.gz")
    data = _all_members(path.read_bytes())
    assert b"HTTP/1.1 200 \xd0\x9e\xff K\r\n" in data
    assert b"Content-Type: text/html; charset=\xff\xfe\r\n" in data and b"X-\xe9t\xe9: caf\xc3\xa9 \x80\r\n" in data
    assert b"Content-Encoding" not in data and b"Content-Length: 5\r\n\r\nhello" in data
    with path.open("rb") as f:
        responses = [
            (r.http_headers.get_statuscode(), r.content_stream().read())
            for r in ArchiveIterator(f)
            if r.rec_type == "response"
        ]
    assert responses == [("200", b"hello")]


def test_a_line_break_in_a_field_value_cannot_start_a_field_of_its_own(tmp_path: Path) -> None:
    sink = WarcSink(str(tmp_path))
    sink.write(
        "http://a.test/p", [("Host", "a.test")], HttpStatus(200, b"OK", []), b"x", proxy="http://p\r\nWARC-Type: x"
    )
    sink.close()
    (path,) = tmp_path.glob("*.warc.gz")
    with path.open("rb") as f:
        (response,) = [r for r in ArchiveIterator(f, check_digests="raise") if r.rec_type == "response"]
        assert response.rec_headers.get_header("WARC-Proxy") == "http://p%0D%0AWARC-Type: x"
        assert response.rec_headers.get_header("WARC-Type") == "response"


@settings(max_examples=3000, deadline=None)
@given(st.floats(min_value=0, max_value=4_102_444_800, allow_nan=False) | st.integers(0, 4_102_444_800).map(float))
def test_a_warc_date_is_the_one_datetime_writes(at: float) -> None:
    # (held to the standard library's form: microseconds rounded half to even, no fraction when they are 0)
    assert warc_date(at) == datetime.fromtimestamp(at, UTC).replace(tzinfo=None).isoformat() + "Z"


def test_a_warc_date_of_another_second_is_not_the_one_before() -> None:
    # (the second's text is kept between calls: a later second, or an earlier one, is written anew)
    assert [warc_date(t) for t in (1.5, 2.0, 1.25, 86_400.999_999_7)] == [
        "1970-01-01T00:00:01.500000Z", "1970-01-01T00:00:02Z", "1970-01-01T00:00:01.250000Z", "1970-01-02T00:00:01Z"
    ]  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=2048))
def test_a_payload_digest_is_sha1_in_base32_as_warcio_writes_it(body: bytes) -> None:
    assert payload_digest(body) == "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode("ascii")


def test_record_ids_are_version_4_uuids_never_repeated_nor_shared_with_a_forked_child() -> None:
    ids = [new_record_id() for _ in range(3 * RANDOM_POOL // 16)]  # (past the pool's end, more than once)
    assert len(set(ids)) == len(ids)
    for record_id in ids[:50] + ids[-50:]:
        assert record_id.startswith("<urn:uuid:") and record_id.endswith(">")
        parsed = uuid.UUID(record_id[len("<urn:uuid:") : -1])
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # (the child: its next ids, to the parent)
        os.write(write, " ".join(new_record_id() for _ in range(20)).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as pipe:
        child = pipe.read().split()
    assert len(child) == 20 and not set(child) & {new_record_id() for _ in range(20)}
