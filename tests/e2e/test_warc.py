"""WARC output: one gzip member per record, read back intact by warcio."""

from __future__ import annotations

import zlib
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from raycrawl.adapters.warc import HttpStatus, WarcSink


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
            for r in ArchiveIterator(f)
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


def test_warc_1_1_files_open_with_warcinfo_and_link_their_records(tmp_path: Path) -> None:
    import subprocess
    import sys

    info = {"software": "raycrawl/test", "isPartOf": "crawl-7", "operator": "https://example.com/bot"}
    sink = WarcSink(str(tmp_path), epoch=1, info=info)
    status = HttpStatus(200, b"OK \xff", [(b"Content-Type", b"text/html; charset=\xfe")])
    sink.write("http://a.test/x?b=2&a=1", [("Host", "a.test")], status, b"<html>x</html>", ip="127.0.0.2")
    sink.write("http://a.test/y", [("Host", "a.test")], HttpStatus(404, b"Not Found", []), b"", ip="::1")
    sink.close()
    (path,) = tmp_path.glob("*.warc.gz")
    with path.open("rb") as f:
        records = [(r.rec_type, dict(r.rec_headers.headers), r.content_stream().read()) for r in ArchiveIterator(f)]
    kinds = [kind for kind, _, _ in records]
    assert kinds == ["warcinfo", "response", "request", "response", "request"]
    warcinfo_id = records[0][1]["WARC-Record-ID"]
    assert b"isPartOf: crawl-7" in records[0][2] and b"operator: https://example.com/bot" in records[0][2]
    for kind, headers, _ in records:
        assert headers["WARC-Date"].count(".") == 1 and headers["WARC-Date"].endswith("Z")  # sub-second
        if kind != "warcinfo":
            assert headers["WARC-Warcinfo-ID"] == warcinfo_id
    (_, first, _), (_, request, _) = records[1], records[2]
    assert first["WARC-IP-Address"] == "127.0.0.2" and records[3][1]["WARC-IP-Address"] == "::1"
    assert request["WARC-Concurrent-To"] == first["WARC-Record-ID"]
    assert first["WARC-Target-URI"] == "http://a.test/x?b=2&a=1"
    # warcio's own checker: every record's digests match what was written.
    done = subprocess.run(
        [sys.executable, "-m", "warcio.cli", "check", "-v", str(path)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "digest pass" in done.stdout and "fail" not in done.stdout.replace("digest pass", "")


def test_an_archive_indexer_finds_each_capture_where_the_record_says(tmp_path: Path) -> None:
    """pywb's indexer (cdxj-indexer) reads the files: one line per response or revisit, at the offset of its gzip
    member, with its payload digest -- what a replay system serves the captures by."""
    import hashlib
    import json
    import subprocess
    from base64 import b32encode

    from raycrawl.core.revisits import IDENTICAL_PAYLOAD_PROFILE, Revisit

    sink = WarcSink(str(tmp_path), epoch=2)
    page = HttpStatus(200, b"OK", [(b"Content-Type", b"text/html")])
    first = sink.write("http://a.test/x", [("Host", "a.test")], page, b"<html>x</html>", ip="127.0.0.2")
    digest = "sha1:" + b32encode(hashlib.sha1(b"<html>x</html>").digest()).decode()
    revisit = Revisit(IDENTICAL_PAYLOAD_PROFILE, first.record_id, "http://a.test/x", first.date, digest)
    second = sink.write("http://a.test/y", [("Host", "a.test")], page, b"<html>x</html>", revisit=revisit)
    sink.close()
    (path,) = tmp_path.glob("*.warc.gz")
    done = subprocess.run(["cdxj-indexer", str(path)], capture_output=True, text=True, check=True)
    lines = [json.loads(line.split(" ", 2)[2]) for line in done.stdout.splitlines()]
    assert [(x["url"], x["mime"], x["status"], x["digest"]) for x in lines] == [
        ("http://a.test/x", "text/html", "200", digest),
        ("http://a.test/y", "warc/revisit", "200", digest),
    ]
    assert [int(x["offset"]) for x in lines] == [first.start, second.start]
    data = path.read_bytes()
    for x in lines:  # (each line's length is its record's gzip member: it decompresses on its own)
        member = data[int(x["offset"]) : int(x["offset"]) + int(x["length"])]
        assert zlib.decompress(member, zlib.MAX_WBITS + 16).startswith(b"WARC/1.1\r\n")
