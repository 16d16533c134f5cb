"""Issue 34 on a local Ray: the cluster's politeness registry (a dead crawl's slots, a restart), and the budget kept
in Redis shared by two crawls and a process that is not raycrawl. (Two crawls sharing the registry, submitted as
jobs to a ``ray start --head`` cluster: tests/e2e/test_shared_politeness_jobs.py.)"""

from __future__ import annotations

import itertools
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import local_config, wait_until

from raycrawl.testing import TestWeb, WebSpec

pytestmark = pytest.mark.usefixtures("ray_local")
DELAY = 0.5


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


THIRD_PARTY = """
import sys, time, urllib.request
import redis
from raycrawl.adapters.redis_budget import RedisHostBudget
from raycrawl.core.host_budget import Ask, Grant

url, stop_after, hosts = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
budget = RedisHostBudget(redis.Redis.from_url(url))
made, deadline, page = 0, time.time() + stop_after, 0
while time.time() < deadline:
    for answer in budget.reserve("not-raycrawl", [Ask(host, 0.5) for host in hosts]):
        if isinstance(answer, Grant) and answer.at <= time.time() + 0.05:
            time.sleep(max(0.0, answer.at - time.time()))
            request = urllib.request.Request(f"http://{answer.host}/p/{page % 5}", headers={"User-Agent": "third/1.0"})
            try:
                urllib.request.urlopen(request, timeout=10).read()
            finally:
                budget.release("not-raycrawl", [(answer.host, answer.token, time.time())])
            made += 1
            page += 1
        elif isinstance(answer, Grant):  # (a slot later than now: given back unused, ended at its time)
            budget.release("not-raycrawl", [(answer.host, answer.token, answer.at)])
    time.sleep(0.02)
print(made)
"""


def test_two_crawls_and_a_process_that_is_not_raycrawl_share_one_budget_in_redis(
    redis_url: str, tmp_path: Path
) -> None:
    from raycrawl.api import Crawl

    spec = WebSpec(hosts=6, pages_per_host=12, private_links=False, cross_host_links=0.0, page_bytes=200)
    with TestWeb(spec) as web:
        hosts = [web.graph.netloc(h) for h in range(spec.hosts)]
        third = subprocess.Popen([sys.executable, "-c", THIRD_PARTY, redis_url, "25", *hosts],
                                 stdout=subprocess.PIPE, text=True)  # fmt: skip
        try:
            crawls = [
                Crawl(
                    local_config(
                        seeds=tuple(web.graph.seeds()),
                        out=str(tmp_path / name),
                        delay=DELAY,
                        shared_politeness=redis_url,
                        crawl_id=name,
                    )
                ).start()
                for name in ("first", "second")
            ]
            summaries = [crawl.wait(timeout=300) for crawl in crawls]
            made = int(third.communicate(timeout=120)[0].strip())
        finally:
            third.kill()
            third.wait()
        requests = web.requests()
    assert all(s["records"] >= spec.hosts * spec.pages_per_host for s in summaries)  # (each crawled every page)
    assert made >= 5 and sum(r["ua"] == "third/1.0" for r in requests) == made
    by_ip: dict[str, list[float]] = defaultdict(list)
    for r in requests:
        by_ip[r["ip"]].append(r["t"])
    gaps = {ip: min(b - a for a, b in itertools.pairwise(sorted(t))) for ip, t in by_ip.items()}
    assert len(gaps) == spec.hosts and min(gaps.values()) >= DELAY - 0.005, gaps
    print(f"third party: {made} requests; smallest gap per host {min(gaps.values()):.3f} s")
