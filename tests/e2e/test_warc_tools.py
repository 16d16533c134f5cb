"""WARC output read by the archive tools, each in a process of its own: warcio's checker (WARC 1.1, digests,
warcinfo) and pywb's indexer (cdxj-indexer)."""

from __future__ import annotations

import zlib
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from raycrawl.adapters.warc import HttpStatus, WarcSink


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
