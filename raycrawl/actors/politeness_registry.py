"""The cluster's politeness registry (issue 34): one detached actor per Ray cluster, in the ``raycrawl`` namespace,
holding the per-host budget every crawl that asks for it shares (core/host_budget.py). Started by the first crawl
that uses it (``--shared-politeness cluster``); shards call it once per round each (``exchange``: their releases
and their asks in one call). With ``--shared-politeness redis://...`` the budget is kept in Redis instead
(adapters/redis_budget.py), shared with crawls elsewhere and with processes that are not raycrawl.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ray
import redis

from raycrawl.adapters.redis_budget import RedisHostBudget
from raycrawl.core.host_budget import Ask, BudgetClient, Grant, HostBudget, Release, Wait

REGISTRY_NAME = "politeness"
NAMESPACE = "raycrawl"


@ray.remote(num_cpus=0, max_restarts=-1)
class PolitenessRegistry:
    def __init__(self) -> None:
        self._budget = HostBudget()

    def exchange(self, crawl: str, releases: list[Release], asks: list[Ask], horizon: float) -> list[Grant | Wait]:
        self._budget.release(crawl, releases)
        return self._budget.reserve(crawl, asks, horizon)

    def host(self, host: str) -> dict[str, float]:
        return {"in_flight": self._budget.in_flight(host), "delay": self._budget.delay(host)}


def registry() -> Any:
    """The cluster's registry, started if no crawl has yet."""
    return PolitenessRegistry.options(  # type: ignore[attr-defined]
        name=REGISTRY_NAME, namespace=NAMESPACE, lifetime="detached", get_if_exists=True
    ).remote()


class RegistryClient:
    """A shard's ``BudgetClient`` on the cluster's registry: one call per round."""

    def __init__(self, crawl: str) -> None:
        self._actor = registry()
        self._crawl = crawl

    def exchange(self, releases: Sequence[Release], asks: Sequence[Ask], horizon: float) -> list[Grant | Wait]:
        call = self._actor.exchange.remote(self._crawl, list(releases), list(asks), horizon)
        answers: list[Grant | Wait] = ray.get(call)
        return answers


class RedisClient:
    """A shard's ``BudgetClient`` on a budget kept in Redis."""

    def __init__(self, url: str, crawl: str) -> None:
        self._budget = RedisHostBudget(redis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=10))
        self._crawl = crawl

    def exchange(self, releases: Sequence[Release], asks: Sequence[Ask], horizon: float) -> list[Grant | Wait]:
        self._budget.release(self._crawl, releases)
        return self._budget.reserve(self._crawl, asks, horizon)


def budget_client(shared: str | None, crawl: str) -> BudgetClient | None:
    """The client ``--shared-politeness`` names: ``cluster``, a ``redis://`` URL, or None (the crawl's own clocks)."""
    if not shared:
        return None
    return RegistryClient(crawl) if shared == "cluster" else RedisClient(shared, crawl)
