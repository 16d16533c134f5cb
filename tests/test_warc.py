"""WARC output: one gzip member per record, read back intact by warcio."""

from __future__ import annotations

import zlib
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from raycrawl.adapters.warc import WarcSink


def _gzip_members(data: bytes) -> int:
    members = 0
    while data:
        d = zlib.decompressobj(zlib.MAX_WBITS + 16)
        d.decompress(data)
        assert d.eof, "a truncated gzip member"
        data = d.unused_data
        members += 1
    return members


def test_each_record_is_its_own_gzip_member_and_reads_back(tmp_path: Path) -> None:
    sink = WarcSink(str(tmp_path), epoch=3)
    bodies = [b"<html>" + bytes(range(256)) * i + b"</html>" for i in range(1, 6)]
    for i, body in enumerate(bodies):
        sink.write(f"http://a.test/p/{i}", [("Host", "a.test")], "200 OK", [("Content-Type", "text/html")], body)
    sink.write("http://a.test/big", [("Host", "a.test")], "200 OK", [], b"x" * 100, truncated=True)
    sink.close()
    (path,) = tmp_path.glob("raycrawl-e000003-*.warc.gz")
    assert _gzip_members(path.read_bytes()) == 2 * (len(bodies) + 1)  # a request and a response each
    with path.open("rb") as f:
        records = [
            (r.rec_type, r.rec_headers.get_header("WARC-Target-URI"), r.rec_headers.get_header("WARC-Truncated"),
             r.content_stream().read())
            for r in ArchiveIterator(f)
        ]  # fmt: skip
    responses = [(uri, truncated, body) for kind, uri, truncated, body in records if kind == "response"]
    assert responses == [(f"http://a.test/p/{i}", None, body) for i, body in enumerate(bodies)] + [
        ("http://a.test/big", "length", b"x" * 100)
    ]
    assert [kind for kind, *_ in records].count("request") == len(bodies) + 1
