"""Issue 34: the cluster's politeness registry on a local Ray -- a dead crawl's slots, and a restart. (Two crawls
sharing it, submitted as jobs to a ``ray start --head`` cluster: tests/test_shared_politeness_jobs.py.)"""

from __future__ import annotations

import pytest
from conftest import wait_until

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
