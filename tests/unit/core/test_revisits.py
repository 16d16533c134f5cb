"""Recrawl logic without Ray or a network: conditional headers, outcomes against the earlier capture, revisit
records (written with the WARC sink and read back with warcio), and a recrawl's seeds from earlier records."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from raycrawl.adapters.warc import HttpStatus, WarcSink
from raycrawl.core.pages import fetch_record
from raycrawl.core.records import FetchResult, Known, Lease, UrlEntry
from raycrawl.core.recrawl import recrawl_links
from raycrawl.core.revisits import (
    IDENTICAL_PAYLOAD_PROFILE,
    NOT_MODIFIED_PROFILE,
    conditional_headers,
    payload_digest,
    recrawl_outcome,
    revisit_for,
)

BODY = b"<html>same</html>"
SHA = hashlib.sha256(BODY).hexdigest()
KNOWN = Known('"v1"', "Tue, 14 Nov 2023 22:13:20 GMT", SHA, "<urn:uuid:first>", "2026-11-30T10:00:00.123456Z")


def test_conditional_headers_come_from_what_is_known() -> None:
    assert conditional_headers(None) == {}
    assert conditional_headers(KNOWN) == {"If-None-Match": '"v1"', "If-Modified-Since": KNOWN.last_modified}
    assert conditional_headers(Known(None, None, SHA, None, None)) == {}


def test_outcomes_against_the_earlier_capture() -> None:
    assert recrawl_outcome(304, KNOWN, None) == "not_modified"
    assert recrawl_outcome(200, KNOWN, SHA) == "unchanged"
    assert recrawl_outcome(200, KNOWN, "0" * 64) is None  # changed: an ordinary fetch
    assert recrawl_outcome(404, KNOWN, None) == recrawl_outcome(410, KNOWN, None) == "gone"
    assert recrawl_outcome(500, KNOWN, None) is None
    assert recrawl_outcome(200, None, SHA) is None and recrawl_outcome(304, None, None) is None  # never captured


def test_a_revisit_refers_to_the_capture_and_reads_back_with_warcio(tmp_path: Path) -> None:
    sink = WarcSink(str(tmp_path))
    status = HttpStatus(200, b"OK", [(b"ETag", b'"v1"')])
    unchanged = revisit_for("unchanged", KNOWN, "http://a.test/x", BODY)
    not_modified = revisit_for("not_modified", KNOWN, "http://a.test/y", b"")
    assert revisit_for("gone", KNOWN, "http://a.test/z", b"") is None and revisit_for(None, KNOWN, "u", BODY) is None
    one = sink.write("http://a.test/x", [("Host", "a.test")], status, BODY, at=1.5e9 + 0.25, revisit=unchanged)
    not_sent = HttpStatus(304, b"Not Modified", [])
    two = sink.write("http://a.test/y", [("Host", "a.test")], not_sent, b"", revisit=not_modified)
    sink.close()
    assert one.date == "2017-07-14T02:40:00.250000Z" and one.record_id != two.record_id
    revisits = [r for r in ArchiveIterator(io.BytesIO(sink.path.read_bytes())) if r.rec_type == "revisit"]
    profiles = [r.rec_headers.get_header("WARC-Profile") for r in revisits]
    assert profiles == [IDENTICAL_PAYLOAD_PROFILE, NOT_MODIFIED_PROFILE]
    for record in revisits:
        assert record.rec_headers.get_header("WARC-Refers-To") == "<urn:uuid:first>"
        assert record.rec_headers.get_header("WARC-Refers-To-Date") == KNOWN.warc_date
        assert record.content_stream().read() == b""  # no body: the capture referred to has it
    assert revisits[0].rec_headers.get_header("WARC-Payload-Digest") == payload_digest(BODY)
    assert [r.rec_headers.get_header("WARC-Record-ID") for r in revisits] == [one.record_id, two.record_id]
    # warcio's own digest of the same body, as a full capture would carry it
    plain = WarcSink(str(tmp_path / "plain"))
    plain.write("http://a.test/x", [], status, BODY)
    plain.close()
    (response,) = [r for r in ArchiveIterator(io.BytesIO(plain.path.read_bytes())) if r.rec_type == "response"]
    assert response.rec_headers.get_header("WARC-Payload-Digest") == payload_digest(BODY)


def test_a_revisits_record_carries_the_capture_it_stands_for() -> None:
    entry = UrlEntry("http://a.test/x", 1, None, 0, (), None, "page", KNOWN)
    result = FetchResult(Lease(1, 0, "page", 0.0, 9.0, entry), 304, sha256=hashlib.sha256(b"").hexdigest())
    result.warc_id, result.warc_date, result.etag = "<urn:uuid:second>", "2026-12-01T00:00:00Z", '"v1"'
    record = fetch_record(result)
    assert record["outcome"] == "not_modified"
    assert (record["sha256"], record["warc_id"], record["warc_date"]) == (SHA, KNOWN.warc_id, KNOWN.warc_date)
    assert (record["etag"], record["last_modified"]) == ('"v1"', KNOWN.last_modified)
    changed = FetchResult(Lease(2, 0, "page", 0.0, 9.0, entry), 200, sha256="1" * 64, etag='"v2"')
    changed.warc_id = "<urn:uuid:new>"
    record = fetch_record(changed)
    assert (record["outcome"], record["sha256"], record["warc_id"], record["etag"]) == (
        "fetched", "1" * 64, "<urn:uuid:new>", '"v2"'
    )  # fmt: skip


def test_recrawl_seeds_from_earlier_records() -> None:
    records = [
        {"url": "http://a.test/", "outcome": "fetched", "status": 200, "depth": 0, "requested_url": "http://a.test/",
         "etag": '"e"', "sha256": SHA, "warc_id": "<urn:uuid:a>", "warc_date": "d"},
        {"url": "http://a.test/r", "outcome": "fetched", "status": 301, "depth": 1, "requested_url": "http://a.test/r?x"},
        {"url": "http://a.test/n", "outcome": "not_modified", "status": 304, "depth": 2, "sha256": SHA,
         "warc_id": "<urn:uuid:n>", "last_modified": "lm"},
        {"url": "http://a.test/g", "outcome": "gone", "status": 404, "depth": 1},
        {"url": "http://a.test/e", "outcome": "error", "status": None, "depth": 1},
        {"url": "http://a.test/s.xml", "outcome": "fetched", "status": 200, "depth": 0, "kind": "sitemap"},
        {"url": "http://a.test/", "outcome": "fetched", "status": 200, "depth": 0},  # a repeat
        {"outcome": "fetched"},  # not a record at all
    ]  # fmt: skip
    links, known = recrawl_links(records)
    assert links == [
        ("http://a.test/", 0, None, (), None, "page", 0.0),
        ("http://a.test/r", 1, None, (), "http://a.test/r?x", "page", 0.0),
        ("http://a.test/n", 2, None, (), None, "page", 0.0),
    ]
    assert known == {
        "http://a.test/": Known('"e"', None, SHA, "<urn:uuid:a>", "d"),
        "http://a.test/n": Known(None, "lm", SHA, "<urn:uuid:n>", None),
    }


def test_known_survives_a_snapshot_row() -> None:
    entry = UrlEntry("http://a.test/x", 1, None, 2, (), None, "page", KNOWN)
    assert UrlEntry.from_row(entry.to_row()) == entry
    plain = UrlEntry("http://a.test/y", 1)
    assert UrlEntry.from_row(plain.to_row()) == plain
