"""Issue 17, duplicate content across URLs: a payload already stored under another URL of the crawl is written as a
WARC revisit record naming that first capture (``duplicate_of`` in the record), across a checkpoint and resume
too; ``revisit_duplicates=False`` stores every payload whole.

The test web's host 1 is a mirror: each of its pages is host 0's page of the same path, byte for byte.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import assert_each_url_once, local_config, page_requests, run, warc_records

from raycrawl.config import DEFAULT_TRACKING_PARAMS
from raycrawl.core.revisits import IDENTICAL_PAYLOAD_PROFILE
from raycrawl.core.urls import canonicalize
from raycrawl.testing import TestWeb, WebSpec

pytestmark = pytest.mark.usefixtures("ray_local")
PAGES = 30
DELAY = 0.02


def assert_one_capture_per_payload(out: Path, records: list[dict[str, Any]], pairs: list[tuple[str, str]]) -> set[str]:
    """Each pair's payload is stored once: one response, and a revisit of it under the other URL, whose record
    names the first. Returns the URLs stored whole."""
    warc = warc_records(out)
    by_url = {r["url"]: r for r in records}
    whole = set()
    for pair in pairs:
        stored = [u for u in pair if ("response", u) in warc]
        assert len(stored) == 1, (pair, stored)
        first, other = stored[0], next(u for u in pair if u != stored[0])
        response, revisit = warc[("response", first)], warc[("revisit", other)]
        assert ("response", other) not in warc
        assert revisit.get_header("WARC-Profile") == IDENTICAL_PAYLOAD_PROFILE
        assert revisit.get_header("WARC-Refers-To") == response.get_header("WARC-Record-ID")
        assert revisit.get_header("WARC-Refers-To-Date") == response.get_header("WARC-Date")
        assert revisit.get_header("WARC-Refers-To-Target-URI") == response.get_header("WARC-Target-URI")
        assert revisit.get_header("WARC-Payload-Digest") == response.get_header("WARC-Payload-Digest")
        assert canonicalize(by_url[other]["duplicate_of"], DEFAULT_TRACKING_PARAMS) == first
        assert by_url[other]["warc_id"] == response.get_header("WARC-Record-ID")
        assert by_url[other]["outcome"] == "fetched" and by_url[other]["sha256"] == by_url[first]["sha256"]
        assert "duplicate_of" not in by_url[first]
        whole.add(first)
    return whole


def test_duplicate_payloads_are_revisits_of_their_first_capture_even_across_a_resume(tmp_path: Path) -> None:
    spec = WebSpec(hosts=2, pages_per_host=PAGES, page_bytes=2000, profiles=("normal", "mirror"),
                   private_links=False, cross_host_links=0.0)  # fmt: skip
    together, resumed, whole = (str(tmp_path / name) for name in ("together", "resumed", "whole"))
    with TestWeb(spec) as web:
        seeds = web.graph.seeds()
        pairs = [(str(canonicalize(web.graph.url(0, p))), str(canonicalize(web.graph.url(1, p)))) for p in range(PAGES)]
        summary, records = run(local_config(seeds=tuple(seeds), out=together, delay=DELAY))
        asked = len(page_requests(web.requests()))
        # The original first, then the mirror in a resumed crawl: its captures come from the checkpoint.
        run(local_config(seeds=(seeds[0],), out=resumed, delay=DELAY))
        _, resumed_records = run(local_config(seeds=(seeds[1],), out=resumed, resume=True, delay=DELAY))
        _, whole_records = run(local_config(seeds=tuple(seeds), out=whole, delay=DELAY, revisit_duplicates=False))

    # Every page is still fetched (the server saw each URL): only the storage is saved.
    assert asked == 2 * PAGES
    assert_each_url_once(records)
    assert len(records) == 2 * PAGES
    assert_one_capture_per_payload(Path(together), records, pairs)
    assert summary["events"]["duplicate_payloads"] == PAGES

    assert_each_url_once(resumed_records)
    stored = assert_one_capture_per_payload(Path(resumed), resumed_records, pairs)
    assert stored == {original for original, _ in pairs}  # the mirror's pages all name the first crawl's captures

    warc = warc_records(Path(whole))
    assert not [key for key in warc if key[0] == "revisit"]
    assert all(("response", u) in warc for pair in pairs for u in pair)
    assert not [r for r in whole_records if "duplicate_of" in r]
