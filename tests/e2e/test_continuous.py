"""Issue 33: a continuous crawl (``--revisit``) on a test web whose pages change on known schedules
(testing/changing.py), judged by the server's own log and by the records and WARC written."""

from __future__ import annotations

import io
import itertools
import json
import statistics
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from conftest import committed_warc, local_config, page_requests, run
from warcio.archiveiterator import ArchiveIterator

from raycrawl.adapters.output import committed_parts
from raycrawl.adapters.storage import resolve
from raycrawl.core.revisits import IDENTICAL_PAYLOAD_PROFILE, NOT_MODIFIED_PROFILE
from raycrawl.core.rollover import period_label, period_of
from raycrawl.testing import TestWeb, WebSpec
from raycrawl.testing.changing import FAST, NEVER, REMOVED, has_validators

pytestmark = pytest.mark.usefixtures("ray_local")

PERIOD = 10.0  # the fast pages change this often
DELAY = 0.3


def fetch_times(requests: list[dict[str, Any]]) -> dict[tuple[str, str], list[float]]:
    """(host, path) -> when the server saw each request for it."""
    times: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in page_requests(requests):
        times[(r["host"], r["path"])].append(r["t"])
    return times


def fetched_at(record: dict[str, Any]) -> float:
    """When a record's page was fetched (its ``fetched_at``, UTC text), as a timestamp."""
    return datetime.fromisoformat(record["fetched_at"].replace("Z", "+00:00")).timestamp()


def gaps(times: list[float]) -> list[float]:
    return [b - a for a, b in itertools.pairwise(times)]


def assert_polite(requests: list[dict[str, Any]], delay: float) -> None:
    by_ip: dict[str, list[float]] = defaultdict(list)
    for r in requests:
        by_ip[r["ip"]].append(r["t"])
    for ip, times in by_ip.items():
        shortest = min(gaps(sorted(times)), default=delay)
        assert shortest >= delay - 0.005, (ip, shortest)


def warc_by_type(out: Path) -> tuple[dict[str, Any], list[Any]]:
    """(response records by WARC-Record-ID, revisit records), of the committed WARC."""
    responses: dict[str, Any] = {}
    revisits: list[Any] = []
    for data in committed_warc(out):
        for record in ArchiveIterator(io.BytesIO(data)):
            headers = record.rec_headers
            if record.rec_type == "response":
                responses[headers.get_header("WARC-Record-ID")] = headers
            elif record.rec_type == "revisit":
                revisits.append(headers)
    return responses, revisits


def test_an_adaptive_continuous_crawl_follows_each_page_s_change_rate(tmp_path: Path) -> None:
    spec = WebSpec(hosts=2, profiles=("changing", "changing"), change_period=PERIOD, remove_after=12.0)
    out = tmp_path / "out"
    with TestWeb(spec) as web:
        cfg = local_config(seeds=tuple(web.graph.seeds()), out=str(out), delay=DELAY, revisit=True,
                           revisit_after="4s", revisit_min="2s", revisit_max="30s", time_limit=75,
                           checkpoint_interval=20, seen_ttl=300)  # fmt: skip
        # (seen_ttl: longer than the crawl. By default a continuous crawl's seen-set forgets a URL after twice
        # --revisit-max, 60 s here, and a gone page linked from a page revisited later is then asked for again, by
        # design: CrawlConfig.seen_expiry. On a slow machine that fell inside the 75 s and looked like a flake.)
        summary, records = run(cfg)
        requests = web.requests()

    assert_polite(requests, DELAY)  # (every revisit waited for its host's delay)
    times = fetch_times(requests)
    hosts = {r["host"] for r in requests}
    assert len(hosts) == 2
    for host in hosts:
        for i in range(FAST):  # fetched again and again, at intervals near their change period
            seen = times[(host, f"/fast/{i}")]
            assert len(seen) >= 5, (host, i, seen)
            later = gaps(seen)[2:]
            assert PERIOD * 0.3 <= statistics.median(later) <= PERIOD * 2, (host, i, gaps(seen))
        for i in range(NEVER):  # backed off toward --revisit-max (growing intervals: from the records, below)
            between = gaps(times[(host, f"/never/{i}")])
            assert len(between) >= 4, (host, i, between)
            assert between[-1] >= 14.0, (host, i, between)
        for i in range(REMOVED):  # gone once, and never asked for again
            asked = [(r["t"], r["status"]) for r in requests if r["host"] == host and r["path"] == f"/removed/{i}"]
            statuses = [status for _, status in asked]
            # (when and what, and the crawl's events -- tasks failed, leases taken back -- to tell a flake's cause)
            assert statuses.count(410) == 1 and statuses[-1] == 410, (host, i, asked, summary.get("events"))

    # Records: one per fetch; what each revisit found; 'gone' once per removed page.
    pages = [r for r in records if r.get("kind") != "sitemap"]
    assert len(pages) == len(page_requests(requests))
    outcomes: dict[str, list[str]] = defaultdict(list)
    for r in pages:
        outcomes[r["url"]].append(r["outcome"])
    intervals: dict[str, list[float]] = defaultdict(list)  # what each visit set the next interval to
    for r in sorted(pages, key=fetched_at):
        if "revisit_in_s" in r:
            intervals[r["url"]].append(r["revisit_in_s"])
    for url, set_to in intervals.items():
        host, path = url.split("/", 3)[2:]
        if not path.startswith("removed/"):  # (every visit set the next: none came sooner; later, on a busy machine)
            between = gaps(times[(host, "/" + path)])
            assert all(gap >= due - 0.01 for gap, due in zip(between, set_to, strict=False)), (url, between, set_to)
        if path.startswith("fast/"):  # (near the change period, from the records too)
            assert PERIOD * 0.3 <= statistics.median(set_to[2:]) <= PERIOD * 2, (url, set_to)
        elif path.startswith("never/"):  # (x1.4 a visit, up to --revisit-max)
            assert set_to == sorted(set_to) and set_to[-1] >= 14.0, (url, set_to)
    for url, seen in outcomes.items():
        path = url.split("/", 3)[3]
        if path.startswith("removed/"):
            assert seen.count("gone") == 1 and seen[-1] == "gone", (url, seen)
        elif path.startswith("never/"):
            again = "not_modified" if has_validators("/" + path) else "unchanged"
            assert seen[0] == "fetched" and set(seen[1:]) == {again}, (url, seen)
        elif path.startswith("fast/"):
            assert "fetched" in seen[1:], (url, seen)
    # Conditional requests carry the last validators: every revisit of a page that sends them.
    for r in page_requests(requests):
        path = r["path"]
        if path != "/" and has_validators(path) and times[(r["host"], path)][0] < r["t"]:
            assert "if_none_match" in r and "if_modified_since" in r, r
    assert summary["frontier"]["scheduled"] > 0 and summary["resumable"]
    assert summary["freshness"]["freshness_lag_s"] < 5.0, summary["freshness"]

    # WARC: every revisit record points at a full capture of the same page, in this output.
    responses, revisits = warc_by_type(out)
    not_modified = sum(1 for r in pages if r["outcome"] == "not_modified")
    unchanged = sum(1 for r in pages if r["outcome"] == "unchanged")
    profiles = [h.get_header("WARC-Profile") for h in revisits]
    assert profiles.count(NOT_MODIFIED_PROFILE) == not_modified > 0
    assert profiles.count(IDENTICAL_PAYLOAD_PROFILE) == unchanged > 0
    for headers in revisits:
        original = responses[headers.get_header("WARC-Refers-To")]
        assert original.get_header("WARC-Target-URI") == headers.get_header("WARC-Refers-To-Target-URI")
        assert original.get_header("WARC-Target-URI") == headers.get_header("WARC-Target-URI")


def test_a_continuous_crawl_stopped_and_resumed_keeps_its_schedule_and_rolls_its_output_over(tmp_path: Path) -> None:
    every, rollover = 6.0, 20.0
    spec = WebSpec(hosts=2, profiles=("changing", "changing"), change_period=PERIOD, remove_after=1e6)
    out = tmp_path / "out"
    settings = {"delay": 0.2, "revisit": True, "revisit_schedule": "fixed", "revisit_after": f"{every:g}s",
                "rollover": f"{rollover:g}s", "checkpoint_interval": 5.0,
                # Marks expire after 12-15 s, and "/" (fetched every 6 s) links to every page: only because each
                # page's mark is renewed whenever it is scheduled again does none come back as new through that
                # link (a second copy on the schedule would break the gaps below). (Not less: a page's mark from its
                # discovery must outlast its wait for its first fetch -- a CI run's first pass, on a loaded machine,
                # outlasted 8 s, and a page came back as new before it was ever fetched.)
                "seen_ttl": "12s"}  # fmt: skip
    with TestWeb(spec) as web:
        first, _ = run(local_config(seeds=tuple(web.graph.seeds()), out=str(out), time_limit=22, **settings))
        stopped_at = max(r["t"] for r in web.requests())
        # (the crawl's clock goes on from where it stopped: this run ends 22 s of crawling later)
        second, records = run(local_config(out=str(out), resume=True, time_limit=44))
        requests = web.requests()

    assert first["resumable"] and first["frontier"]["scheduled"] > 0
    assert_polite(requests, 0.2)
    times = fetch_times(requests)
    assert len(times) == 2 * (1 + FAST + NEVER + REMOVED)
    for (host, path), seen in times.items():
        # None fetched before its due time (the last fetch's answer + the interval), across the stop.
        assert min(gaps(seen)) >= every, (host, path, gaps(seen))
        # None lost: each was fetched before the stop, and again after the resume. (On a loaded machine the first
        # run's time runs out in its first pass: its last page's first fetch is then the first run's last request.)
        assert seen[0] <= stopped_at < seen[-1], (host, path)
    # One record per fetch, in the output of the two runs together.
    assert len(records) == len(page_requests(requests)) == second["records"]
    assert all(r["outcome"] in ("fetched", "not_modified", "unchanged") for r in records)
    assert second["freshness"]["scheduled"] == second["frontier"]["scheduled"] > 0

    # Output rolled over: each period's parts in a directory of its own, holding that period's records (and those
    # of the few seconds a cut at the period's end takes to come to rest: leases handed out before the boundary
    # are fetched, 0.2 s apart per host, before the cut; on a loaded machine that took 5.1 s once, so the bound is
    # half a period -- still far from a record landing a whole period off).
    storage = resolve(str(out))
    periods: dict[str, set[str]] = defaultdict(set)
    archived: dict[str, set[str]] = defaultdict(set)  # period -> the paths its WARC holds
    for name in committed_parts(storage):
        kind, period, _ = name.split("/")
        periods[period].add(kind)
        if kind == "warc":
            for record in ArchiveIterator(io.BytesIO(storage.read(name) or b"")):
                if record.rec_type in ("request", "response"):
                    archived[period].add(urlsplit(record.rec_headers.get_header("WARC-Target-URI")).path)
        if kind == "pages":
            for line in (storage.read(name) or b"").splitlines():
                fetched = fetched_at(json.loads(line))
                start = period_of(fetched, rollover) * rollover
                assert period_label(fetched, rollover) == period or (
                    period_label(start - 1, rollover) == period and fetched - start < rollover / 2
                ), (name, fetched)
    assert len(periods) >= 3 and all("warc" in kinds for kinds in periods.values()), periods
    # A period without page records is one in which only robots.txt was fetched: its exchanges are archived (the
    # rules obeyed) but make no page record, so a crawl that starts just before a boundary can close its first
    # period with robots.txt alone. Any other period without page records would be output lost.
    for period, kinds in periods.items():
        assert kinds == {"pages", "warc"} or archived[period] == {"/robots.txt"}, (period, kinds, archived[period])
    assert sum(kinds == {"pages", "warc"} for kinds in periods.values()) >= 2, periods
