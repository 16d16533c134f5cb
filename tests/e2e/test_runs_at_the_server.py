"""A host's run (core/runs.py), the fetcher's half, against the test web: what the server sees -- one request at a
time per host, each at least the host's delay after the end of the exchange before it -- and a run cut by an answer
that ends it (its remaining leases come back unsent, never requested). The shard's half: tests/unit/core/test_runs.py.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from raycrawl.adapters.fetcher import Fetcher, FetchSettings
from raycrawl.core.records import Lease, UrlEntry
from raycrawl.testing import TestWeb, WebSpec


@pytest.fixture(scope="module")
def web() -> Iterator[TestWeb]:
    with TestWeb(WebSpec(hosts=2, pages_per_host=20, private_links=False, profiles=("normal", "403"))) as web:
        yield web


def run_of(web: TestWeb, host: int, pages: list[int], gap: float) -> list[Lease]:
    now = time.time()
    leases, before = [], 0
    for i, page in enumerate(pages, start=1):
        lease = Lease(host * 100 + i, 0, "page", now, now + 600, UrlEntry(web.graph.url(host, page), 1), before, gap)
        leases.append(lease)
        before = lease.lease_id
    return leases


def test_a_run_reaches_the_server_one_request_at_a_time_a_delay_apart(web: TestWeb) -> None:
    settings = FetchSettings(allow_network=(f"{web.graph.ip(0)}/32",), delay_factor=0.0)
    fetcher = Fetcher(settings)
    leases = run_of(web, 0, [1, 2, 3, 4], gap=0.2)
    try:
        results = sorted((r for group in fetcher.fetch_stream(leases) for r in group), key=lambda r: r.lease.lease_id)
    finally:
        fetcher.close()
    assert [r.status for r in results] == [200] * 4 and not any(r.unsent for r in results)
    for before, after in itertools.pairwise(results):
        assert after.sent_at >= before.ended_at + 0.2  # (the shard's rule: the delay after the exchange ended)
    seen = sorted(r["t"] for r in web.requests() if r["ip"] == web.graph.ip(0) and r["path"].startswith("/p/"))
    assert len(seen) == 4 and all(b - a >= 0.2 for a, b in itertools.pairwise(seen))


def test_an_answer_that_ends_a_run_sends_nothing_after_it(web: TestWeb) -> None:
    settings = FetchSettings(allow_network=(f"{web.graph.ip(1)}/32",), delay_factor=0.0)
    fetcher = Fetcher(settings)
    before = len([r for r in web.requests() if r["ip"] == web.graph.ip(1)])
    try:
        results = [r for group in fetcher.fetch_stream(run_of(web, 1, [1, 2, 3], gap=0.0)) for r in group]
    finally:
        fetcher.close()
    by_id = {r.lease.lease_id: r for r in results}
    assert by_id[101].status == 403 and by_id[102].unsent and by_id[103].unsent
    assert by_id[102].status is None and by_id[102].warc is None
    assert len([r for r in web.requests() if r["ip"] == web.graph.ip(1)]) == before + 1  # (only the first)


def test_a_stream_takes_the_runs_chained_to_it_and_ends_when_none_come(web: TestWeb) -> None:
    """``fetch_stream(more=...)``: a run handed over as the one before it is done (core/lease_batches.py) is fetched
    in the same stream; the stream ends only when the caller, with every lease done, has none to add."""
    settings = FetchSettings(allow_network=(f"{web.graph.ip(0)}/32",), delay_factor=0.0)
    fetcher = Fetcher(settings)
    runs = [run_of(web, 0, [5, 6], gap=0.0), run_of(web, 0, [7, 8], gap=0.0)]
    for i, lease in enumerate(runs[1]):  # (the next run's ids: its own)
        lease.lease_id, lease.after = 10 + i, (9 + i if i else 0)
    asked: list[bool] = []

    def more(dry: bool) -> list[Lease]:
        asked.append(dry)
        return runs.pop() if dry and len(runs) == 1 else []

    try:
        first = runs.pop(0)
        results = [r for group in fetcher.fetch_stream(first, tick=0.02, more=more) for r in group]
    finally:
        fetcher.close()
    assert sorted(r.lease.url for r in results) == [web.graph.url(0, page) for page in (5, 6, 7, 8)]
    assert [r.status for r in results] == [200] * 4 and asked.count(True) == 2  # (the last: none, the end)
    paths = [r["path"] for r in web.requests() if r["ip"] == web.graph.ip(0)]
    assert [paths.count(urlsplit(web.graph.url(0, page)).path) for page in (5, 6, 7, 8)] == [1] * 4
