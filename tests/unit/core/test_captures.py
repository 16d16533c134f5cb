"""Duplicate payloads: the capture registry (first capture wins; a URL fetched again replaces its own) and its
checkpoint part. The fetcher's held pages written whole or as a revisit: tests/e2e/test_held_pages.py."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from raycrawl.core.captures import Capture, CaptureRegistry, partition_of_key, payload_key, split_claims
from raycrawl.core.partitions import pack_part, unpack_part
from raycrawl.core.records import Known
from raycrawl.core.recrawl import recrawl_links
from raycrawl.core.revisits import revisit_for

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
