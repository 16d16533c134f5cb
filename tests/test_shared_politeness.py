"""Issue 34: two crawls on one Ray crawl the same hosts at the same time. With one politeness budget per host
shared through the cluster's registry (``--shared-politeness cluster``) the server sees no two requests to a host
closer than the delay; each with its own clocks, it does."""

from __future__ import annotations

import itertools
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from conftest import local_config, wait_until

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


def test_the_registry_gives_a_dead_crawl_s_slots_back_and_keeps_its_budget_through_a_restart() -> None:
    import ray

    from raycrawl.actors.politeness_registry import registry
    from raycrawl.core.host_budget import Ask, Grant, Wait
    from raycrawl.testing.process import free_port

    host = f"dead-crawl-{free_port()}.test"
    actor = registry()
    # a crawl with no coordinator on the cluster (as one killed mid-way) holds the host's only slot
    (held,) = ray.get(actor.exchange.remote("a-crawl-killed-mid-way", [], [Ask(host, 0.2)], 0.0))
    assert isinstance(held, Grant)
    (refused,) = ray.get(actor.exchange.remote("survivor", [], [Ask(host, 0.2)], 0.0))
    assert isinstance(refused, Wait)  # (its request is in flight, as far as the registry knows)

    def granted() -> bool:
        (answer,) = ray.get(actor.exchange.remote("survivor", [], [Ask(host, 0.2)], 0.0))
        return isinstance(answer, Grant)

    wait_until(granted, 60, "the dead crawl's slot given back")  # (well before its 180 s ttl)
    assert ray.get(actor.state.remote())["forgotten"] == {"a-crawl-killed-mid-way": 1}

    # a budget kept through the registry's restart: a host just asked for stays held for its delay
    slow = f"slow-{free_port()}.test"
    (first,) = ray.get(actor.exchange.remote("survivor", [], [Ask(slow, 30.0)], 0.0))
    assert isinstance(first, Grant)
    ray.kill(actor, no_restart=False)

    def restarted() -> bool:
        try:
            return bool(ray.get(registry().state.remote(), timeout=10)["restored"])
        except (ray.exceptions.ActorUnavailableError, ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
            return False

    wait_until(restarted, 60, "the registry restarted")
    (after,) = ray.get(registry().exchange.remote("another", [], [Ask(slow, 30.0)], 0.0))
    assert isinstance(after, Wait) and after.until >= first.at + 29.0
