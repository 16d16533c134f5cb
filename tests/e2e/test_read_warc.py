"""Issue 48, acceptance 1: ``read_warc`` reads WARC back as a Ray Dataset -- a crawl's committed WARC (every response
once, revisits given their payload), files warcio wrote (gzip per record, and none), a whole-file gzip -- and a
damaged or cut-short file gives its good records and a count of the bad ones, never an exception."""

from __future__ import annotations

import gzip
import hashlib
import io
import zlib
from collections import Counter
from pathlib import Path

import pytest
from conftest import local_config, run
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from raycrawl.adapters.warc_read import ReadCount, read_range
from raycrawl.testing import TestWeb, WebSpec
from raycrawl.warc_dataset import read_warc, skipped_records

PAGES = 20


def warcio_file(path: Path, gzipped: bool, pages: int = 6) -> list[str]:
    """A WARC as another crawler writes it (warcio: a warcinfo, then a request and a response per page)."""
    urls = [f"http://other.test/{i}" for i in range(pages)]
    with path.open("wb") as f:
        writer = WARCWriter(f, gzip=gzipped)
        writer.write_record(writer.create_warcinfo_record(path.name, {"software": "warcio"}))
        for i, url in enumerate(urls):
            body = f"<html><title>page {i}</title></html>".encode()
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html"), ("X-N", str(i))], protocol="HTTP/1.1")
            request = io.BytesIO(b"GET / HTTP/1.1\r\n\r\n")
            writer.write_record(writer.create_warc_record(url, "request", payload=request))
            writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http))
    return urls


def record_span(data: bytes, gzipped: bool, url: str) -> tuple[int, int]:
    """Where the response record of ``url`` is in the file: its gzip member, or its bytes."""
    if not gzipped:
        head = data.find(b"WARC/1.")
        while head >= 0:
            end = data.index(b"\r\n\r\n", head)
            if b"WARC-Type: response" in data[head:end] and b"WARC-Target-URI: " + url.encode() in data[head:end]:
                return head, end
            head = data.find(b"WARC/1.", end)
        raise AssertionError(f"no response record of {url}")
    start = 0
    while start < len(data):
        member = zlib.decompressobj(31)
        text = member.decompress(data[start:])
        end = len(data) - len(member.unused_data)
        if b"WARC-Type: response" in text and url.encode() in text:
            return start, end
        start = end
    raise AssertionError(f"no response record of {url}")


@pytest.mark.parametrize("gzipped", [True, False])
def test_files_another_crawler_wrote_are_read_whole_and_damage_costs_only_the_damaged(
    tmp_path: Path, gzipped: bool
) -> None:
    path = tmp_path / ("w.warc.gz" if gzipped else "w.warc")
    urls = warcio_file(path, gzipped)
    count = ReadCount()
    with path.open("rb") as f:
        rows = list(read_range(f, count=count))
    assert [r.url for r in rows] == urls and count.bad == 0
    assert rows[2].status == 200 and rows[2].body == b"<html><title>page 2</title></html>"
    assert ["X-N", "2"] in rows[2].headers and rows[2].content_type == "text/html"
    data = path.read_bytes()
    cut = ReadCount()
    good = list(read_range(io.BytesIO(data[: len(data) * 2 // 3]), count=cut))  # (cut in the middle of a record)
    assert [r.url for r in good] == urls[: len(good)] and 2 <= len(good) < len(urls) and cut.bad == 1
    # A damaged record in the middle: the ones after it are read
    start, end = record_span(data, gzipped, urls[3])
    if gzipped:  # (its compressed bytes)
        middle = (start + end) // 2
        damaged = data[: middle - 15] + b"\xff" * 30 + data[middle + 15 :]
    else:  # (its length: the framing is broken)
        length = data.index(b"Content-Length: ", start) + len(b"Content-Length: ")
        damaged = data[:length] + b"zz" + data[length + 2 :]
    hurt = ReadCount()
    kept = [r.url for r in read_range(io.BytesIO(damaged), count=hurt)]
    assert kept == [u for u in urls if u != urls[3]] and hurt.bad >= 1
    whole = ReadCount()  # one gzip stream over the whole file
    plain = gzip.decompress(data) if gzipped else data
    assert [r.url for r in read_range(io.BytesIO(gzip.compress(plain)), count=whole)] == urls and whole.bad == 0


def test_a_big_file_gzipped_per_record_reads_the_same_in_ranges(tmp_path: Path) -> None:
    path = tmp_path / "big.warc.gz"
    urls = warcio_file(path, True, pages=60)
    data = path.read_bytes()
    pieces = [(at, min(at + 997, len(data))) for at in range(0, len(data), 997)]  # (ranges cut anywhere)
    read = [r.url for start, end in pieces for r in read_range(io.BytesIO(data), start, end)]
    assert read == urls  # every record once, in order, whichever range it starts in


@pytest.mark.usefixtures("ray_local")
def test_a_crawls_committed_warc_is_one_row_per_response_with_revisits_resolved(tmp_path: Path) -> None:
    spec = WebSpec(hosts=2, pages_per_host=PAGES, page_bytes=2000, profiles=("normal", "mirror"),
                   private_links=False, cross_host_links=0.0)  # fmt: skip
    out = tmp_path / "out"
    with TestWeb(spec) as web:
        _, records = run(local_config(seeds=tuple(web.graph.seeds()), out=str(out), delay=0.02))
    # (WARC-Target-URI is the URL as requested: the link's own spelling)
    pages = {r["requested_url"]: r for r in records if r["outcome"] == "fetched" and r["status"] == 200}
    rows = read_warc(str(out)).to_pandas()
    responses = rows[rows.url.str.endswith("/robots.txt") == False]  # noqa: E712 (a pandas mask)
    assert Counter(responses["url"]) == Counter(list(pages))  # every page once, none twice
    kinds = Counter(responses["record_type"])
    assert kinds["revisit"] == PAGES and kinds["response"] == PAGES  # (the mirror's pages are revisits)
    assert responses["resolved"].all()
    for row in responses.itertuples():
        assert hashlib.sha256(row.body).hexdigest() == pages[row.url]["sha256"]  # (a revisit: its capture's body)
    # Any files too: a glob in the output, and a file of warcio's beside them; nothing skipped
    other = tmp_path / "other.warc"
    urls = warcio_file(other, False)
    mixed = read_warc([str(out / "warc" / "*.warc.gz"), str(other)])
    assert mixed.count() == len(rows) + len(urls) and skipped_records(str(other)) == 0
    cut = tmp_path / "cut.warc"
    cut.write_bytes(other.read_bytes()[:-200])
    assert read_warc(str(cut)).count() == len(urls) - 1 and skipped_records(str(cut)) == 1
