"""Duplicate payloads against the test web: the fetcher's held pages written whole, or as a revisit of the first
capture, once the capture registry has answered (the registry itself: tests/unit/core/test_captures.py)."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from raycrawl.adapters.fetcher import Fetcher
from raycrawl.core.captures import CaptureRegistry
from raycrawl.core.fetch_settings import FetchSettings
from raycrawl.core.records import Lease, UrlEntry
from raycrawl.core.revisits import IDENTICAL_PAYLOAD_PROFILE
from raycrawl.testing import TestWeb, WebSpec


@pytest.fixture(scope="module")
def mirrored() -> Iterator[TestWeb]:
    with TestWeb(WebSpec(hosts=2, pages_per_host=4, private_links=False, profiles=("normal", "mirror"))) as web:
        yield web


def test_held_pages_are_written_whole_or_as_a_revisit_of_the_first_capture(mirrored: TestWeb, tmp_path: Path) -> None:
    web = mirrored
    settings = FetchSettings(allow_network=("127.0.0.0/8",), warc_buffer=str(tmp_path))
    urls = [web.graph.url(0, 1), web.graph.url(1, 1), web.graph.url(0, 2)]
    now = time.time()
    leases = [Lease(i, 0, "page", now, now + 600, UrlEntry(url, 1)) for i, url in enumerate(urls)]
    fetcher = Fetcher(settings)
    registry = CaptureRegistry()  # (what the seen-set partitions hold)
    try:
        results = [r for group in fetcher.fetch_stream(leases, hold_pages=True) for r in group]
        assert all(r.warc is None for r in results)  # nothing written until the registry answers
        claims = fetcher.held_claims()
        by_url = {capture.url: key for key, capture in claims}
        assert by_url[urls[0]] == by_url[urls[1]] != by_url[urls[2]]
        ordered = sorted(claims, key=lambda claim: urls.index(claim[1].url))  # (the original first, as in a crawl)
        registry.claim(ordered[:1])
        fetcher.write_held(registry.claim(claims))
    finally:
        fetcher.close()
    result = {r.lease.url: r for r in results}
    assert result[urls[1]].duplicate_of == urls[0] and result[urls[0]].duplicate_of is None
    assert result[urls[1]].warc_id == result[urls[0]].warc_id  # (the record names the capture that has the payload)
    [warc_file] = list(tmp_path.rglob("*.warc.gz"))
    records = {
        (r.rec_type, r.rec_headers.get_header("WARC-Target-URI")): r.rec_headers
        for r in ArchiveIterator(io.BytesIO(warc_file.read_bytes()))
    }
    assert ("response", urls[0]) in records and ("response", urls[2]) in records
    assert ("response", urls[1]) not in records
    revisit, first = records[("revisit", urls[1])], records[("response", urls[0])]
    assert revisit.get_header("WARC-Profile") == IDENTICAL_PAYLOAD_PROFILE
    assert revisit.get_header("WARC-Refers-To") == first.get_header("WARC-Record-ID") == result[urls[0]].warc_id
    assert revisit.get_header("WARC-Refers-To-Target-URI") == urls[0]
    assert revisit.get_header("WARC-Refers-To-Date") == first.get_header("WARC-Date") == result[urls[0]].warc_date
    assert revisit.get_header("WARC-Payload-Digest") == first.get_header("WARC-Payload-Digest")
