"""A focused crawl (issue 48, acceptance 3): on a topical test web where the wanted topic is a minority, a crawl whose
``score_links`` puts an on-topic page's links first harvests at least twice what a breadth-first crawl does over its
first 300 pages -- counted from what the server served, by the pages' true topics -- with no host's gap under its
delay.

Both crawls follow the links of the pages their contract rejects (``follow_rejected``): a crawl that drops them is
focused by pruning already, and this compares the order a crawl fetches in, the same pages available to both.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import local_config, page_requests, run

from raycrawl.testing import TestWeb, WebSpec
from raycrawl.testing.process import gaps_by_host
from raycrawl.testing.topics import WANTED, topic_of

pytestmark = pytest.mark.usefixtures("ray_local")
HOSTS = 8
DELAY = 0.05
FIRST = 300
TOPICS = "raycrawl.testing.topics"


def harvest(requests: list[dict[str, Any]], first: int) -> float:
    """The share of the first ``first`` pages served that were on the wanted topic (their true topic)."""
    served = [r for r in page_requests(requests) if r["status"] == 200][:first]
    assert len(served) == first, len(served)
    wanted = sum(1 for r in served if r["path"].startswith("/t/") and topic_of(r["ip"], int(r["path"][3:])) == WANTED)
    return wanted / first


def crawl(tmp_path: Path, name: str, **focus: Any) -> tuple[float, list[dict[str, Any]], dict[str, Any]]:
    spec = WebSpec(hosts=HOSTS, pages_per_host=200, profiles=("topics",) * HOSTS)
    with TestWeb(spec) as web:
        cfg = local_config(
            seeds=tuple(web.graph.seeds()), out=str(tmp_path / name), delay=DELAY, max_pages=FIRST + 40,
            extract=f"{TOPICS}:extract", accept=f"{TOPICS}:accept", follow_rejected=True, **focus,
        )  # fmt: skip
        run(cfg)
        requests = sorted(web.requests(), key=lambda r: r["t"])
    stats = json.loads((tmp_path / name / "stats.json").read_text())
    return harvest(requests, FIRST), requests, stats


def test_a_focused_crawl_harvests_twice_what_breadth_first_does_and_stays_polite(tmp_path: Path) -> None:
    breadth, breadth_requests, breadth_stats = crawl(tmp_path, "breadth")
    focused, focused_requests, focused_stats = crawl(tmp_path, "focused", score_links=f"{TOPICS}:score_links")

    assert focused >= 2 * breadth, (focused, breadth)
    for requests in (breadth_requests, focused_requests):
        assert min(min(g) for g in gaps_by_host(requests).values() if g) >= DELAY
    # The crawl's own account agrees (accepted: the on-topic pages it fetched), since the start and lately.
    for stats in (breadth_stats, focused_stats):
        assert stats["harvest_window"] == 100 and 0 <= stats["harvest_rate_recent"] <= 1
    assert focused_stats["harvest_rate"] >= 2 * breadth_stats["harvest_rate"]
    assert focused_stats["harvest_rate_recent"] > breadth_stats["harvest_rate_recent"]
