"""Issue 34: two crawls on one Ray crawl the same hosts at the same time. With one politeness budget per host
shared through the cluster's registry (``--shared-politeness cluster``) the server sees no two requests to a host
closer than the delay; each with its own clocks, it does."""

from __future__ import annotations

import itertools
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from conftest import local_config

from raycrawl.testing import TestWeb, WebSpec

pytestmark = pytest.mark.usefixtures("ray_local")
DELAY = 0.5


def smallest_gaps(requests: list[dict[str, Any]]) -> dict[str, float]:
    by_ip: dict[str, list[float]] = defaultdict(list)
    for r in requests:
        by_ip[r["ip"]].append(r["t"])
    return {ip: min(b - a for a, b in itertools.pairwise(sorted(times))) for ip, times in by_ip.items()}


def two_crawls(tmp_path: Path, shared: str | None) -> list[dict[str, Any]]:
    from raycrawl.api import Crawl

    spec = WebSpec(hosts=6, pages_per_host=12, private_links=False, cross_host_links=0.0, page_bytes=200)
    with TestWeb(spec) as web:
        crawls = [
            Crawl(
                local_config(
                    seeds=tuple(web.graph.seeds()),
                    out=str(tmp_path / f"{name}-{shared}"),
                    delay=DELAY,
                    shared_politeness=shared,
                )
            ).start()
            for name in ("first", "second")
        ]
        summaries = [crawl.wait(timeout=300) for crawl in crawls]
        requests = web.requests()
    assert all(s["records"] >= 6 * 12 for s in summaries)  # (each crawled every page)
    return requests


def test_crawls_sharing_the_cluster_s_budget_are_one_polite_client_and_apart_they_are_not(tmp_path: Path) -> None:
    apart = smallest_gaps(two_crawls(tmp_path, None))
    assert min(apart.values()) < DELAY * 0.8, apart  # (two clients: each keeps its own delay)
    shared = smallest_gaps(two_crawls(tmp_path, "cluster"))
    assert len(shared) == 6 and min(shared.values()) >= DELAY - 0.005, shared
    print(f"smallest gap per host: apart {min(apart.values()):.3f} s, shared {min(shared.values()):.3f} s")
