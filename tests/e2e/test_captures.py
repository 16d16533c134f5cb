"""Duplicate payloads without Ray: the capture registry (first capture wins; a URL fetched again replaces its own),
its checkpoint part, and the fetcher's held pages written whole or as a revisit once the registry has answered."""

from __future__ import annotations

import hashlib
import io
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from warcio.archiveiterator import ArchiveIterator

from raycrawl.adapters.fetcher import Fetcher
from raycrawl.core.captures import Capture, CaptureRegistry, partition_of_key, payload_key, split_claims
from raycrawl.core.fetch_settings import FetchSettings
from raycrawl.core.partitions import pack_part, unpack_part
from raycrawl.core.records import Known, Lease, UrlEntry
from raycrawl.core.recrawl import recrawl_links
from raycrawl.core.revisits import IDENTICAL_PAYLOAD_PROFILE, revisit_for
from raycrawl.testing import TestWeb, WebSpec

KEY = payload_key(hashlib.sha256(b"payload").hexdigest())
A = Capture("http://a.test/", "<urn:uuid:a>", "2026-12-01T10:00:00.000001Z")
B = Capture("http://b.test/copy", "<urn:uuid:b>", "2026-12-01T10:00:01.000001Z")


def test_the_first_capture_of_a_payload_is_the_one_others_refer_to() -> None:
    registry = CaptureRegistry()
    other = payload_key(hashlib.sha256(b"other").hexdigest())
    assert registry.claim([(KEY, A), (other, B)]) == [None, None]  # both new: stored whole
    assert registry.claim([(KEY, B)]) == [A]  # the same payload under another URL: a revisit of A
    assert registry.claim([(KEY, B), (KEY, A)]) == [A, None]
    assert len(registry) == 2


def test_a_url_fetched_again_replaces_its_own_capture() -> None:
    registry = CaptureRegistry()
    registry.claim([(KEY, A)])
    again = Capture(A.url, "<urn:uuid:a2>", "2026-12-01T11:00:00.000001Z")
    assert registry.claim([(KEY, again)]) == [None]
    assert registry.claim([(KEY, B)]) == [again]


def test_the_registry_survives_its_checkpoint_part_and_old_parts_still_load() -> None:
    registry = CaptureRegistry()
    registry.claim([(KEY, A)])
    seen = b"\x93NUMPY seen-set bytes"
    restored_seen, captures = unpack_part(pack_part(seen, registry.to_bytes()))
    assert restored_seen == seen
    assert CaptureRegistry.from_bytes(captures).claim([(KEY, B)]) == [A]
    assert unpack_part(seen) == (seen, b"")  # a part from before captures: the seen-set alone
    assert pack_part(seen, b"") == seen
    assert len(CaptureRegistry.from_bytes(b"")) == 0


@given(st.lists(st.binary(min_size=16, max_size=16), max_size=50), st.integers(1, 7))
def test_claims_split_by_partition_cover_each_claim_once(keys: list[bytes], partitions: int) -> None:
    claims = [(key, A) for key in keys]
    split = split_claims(claims, partitions)
    assert sorted(i for at in split.values() for i in at) == list(range(len(claims)))
    assert all(partition_of_key(claims[i][0], partitions) == p for p, at in split.items() for i in at)


def test_a_recrawl_of_a_duplicate_refers_to_the_url_that_holds_the_payload() -> None:
    record = {"url": "http://b.test/copy", "outcome": "fetched", "status": 200, "depth": 1, "sha256": "ab",
              "warc_id": A.record_id, "warc_date": A.date, "duplicate_of": A.url}  # fmt: skip
    _, known = recrawl_links([record])
    assert known[record["url"]] == Known(None, None, "ab", A.record_id, A.date, A.url)
    revisit = revisit_for("unchanged", known[record["url"]], record["url"], b"x")
    assert revisit is not None and revisit.refers_to_uri == A.url and revisit.refers_to == A.record_id
    assert Known.from_row(known[record["url"]].to_row()) == known[record["url"]]


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
