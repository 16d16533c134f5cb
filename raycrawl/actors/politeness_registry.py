"""The cluster's politeness registry (issue 34): one detached actor per Ray cluster, in the ``raycrawl`` namespace,
holding the per-host budget every crawl that asks for it shares (core/host_budget.py). Started by the first crawl
that uses it (``--shared-politeness cluster``); shards call it once per round each (``exchange``: their releases
and their asks in one call). With ``--shared-politeness redis://...`` the budget is kept in Redis instead
(adapters/redis_budget.py), shared with crawls elsewhere and with processes that are not raycrawl.

- **A crawl that dies gives its hosts back at once**: a crawl holding slots that has not called for
  ``SILENT_AFTER`` seconds is looked up by its coordinator's name; gone, its slots are taken back (the budget's ttl
  is the bound for anything this misses).
- **Its state survives its own restart**: every ``SNAPSHOT_EVERY`` seconds of calls it saves the budget
  (``HostBudget.to_dict``: each host's next slot and the crawls' delays) in the cluster's key-value store (the GCS's,
  through ``ray.experimental.internal_kv``, as Ray's own libraries keep theirs), and a restarted registry starts from
  it: reservations out at the snapshot count as ended then, so no host gets a request sooner than its delay allows.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

import ray
from ray.exceptions import ActorUnavailableError, RayActorError
from ray.experimental import internal_kv

from raycrawl.core.host_budget import Ask, BudgetClient, BudgetUnavailable, Grant, HostBudget, Release, Wait

REGISTRY_NAME = "politeness"
NAMESPACE = "raycrawl"  # (the coordinators' too: a crawl's is named by its id there)
SNAPSHOT_KEY = b"raycrawl/politeness-registry"
SNAPSHOT_EVERY = 2.0
REGISTRY_AWAY_S = 1.0  # a shard whose call found the registry restarting asks again after this
SILENT_AFTER = 5.0  # seconds without a call before a crawl holding slots is looked up


@ray.remote(num_cpus=0, max_restarts=-1)
class PolitenessRegistry:
    def __init__(self) -> None:
        saved = internal_kv._internal_kv_get(SNAPSHOT_KEY) if internal_kv._internal_kv_initialized() else None
        self._budget = HostBudget.from_dict(json.loads(saved)) if saved else HostBudget()
        self.restored = saved is not None
        self._heard: dict[str, float] = {}  # crawl -> when it last called
        self._saved_at = 0.0
        self.forgotten: dict[str, int] = {}  # crawls found gone, and the slots taken back from each

    def exchange(self, crawl: str, releases: list[Release], asks: list[Ask], horizon: float) -> list[Grant | Wait]:
        now = time.time()
        self._heard[crawl] = now
        self._budget.release(crawl, releases)
        answers = self._budget.reserve(crawl, asks, horizon)
        self._look_for_the_dead(now)
        if now - self._saved_at >= SNAPSHOT_EVERY:
            self._saved_at = now
            internal_kv._internal_kv_put(SNAPSHOT_KEY, json.dumps(self._budget.to_dict()).encode(), overwrite=True)
        return answers

    def _look_for_the_dead(self, now: float) -> None:
        for crawl in self._budget.holders():
            if now - self._heard.get(crawl, now) < SILENT_AFTER:
                continue
            self._heard[crawl] = now  # (looked up at most once per SILENT_AFTER)
            try:
                ray.get_actor(crawl, namespace=NAMESPACE)
            except ValueError:  # no coordinator of that name: the crawl is over
                self.forgotten[crawl] = self.forgotten.get(crawl, 0) + self._budget.forget(crawl)
                self._heard.pop(crawl, None)

    def host(self, host: str) -> dict[str, float]:
        return {"in_flight": self._budget.in_flight(host), "delay": self._budget.delay(host)}

    def state(self) -> dict[str, Any]:
        """For operators and tests: whether it started from a snapshot, and the crawls it found gone."""
        return {"restored": self.restored, "forgotten": dict(self.forgotten), "holders": sorted(self._budget.holders())}


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
        try:
            answers: list[Grant | Wait] = ray.get(call)
        except (ActorUnavailableError, RayActorError):  # restarting: no slot this round (the releases are moot:
            retry = time.time() + REGISTRY_AWAY_S  # the restarted registry counts every slot out as ended)
            return [Wait(ask.host, retry) for ask in asks]
        return answers


class RedisClient:
    """A shard's ``BudgetClient`` on a budget kept in Redis."""

    def __init__(self, url: str, crawl: str) -> None:
        import redis  # (here: only a budget kept in Redis needs it, and every shard imports this module)

        from raycrawl.adapters.redis_budget import RedisHostBudget
        from raycrawl.adapters.snapshots import redis_url_for_messages

        self._budget = RedisHostBudget(redis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=10))
        self._crawl = crawl
        self._where = redis_url_for_messages(url)
        self._errors = (redis.RedisError, OSError)

    def exchange(self, releases: Sequence[Release], asks: Sequence[Ask], horizon: float) -> list[Grant | Wait]:
        try:
            self._budget.release(self._crawl, releases)
            return self._budget.reserve(self._crawl, asks, horizon)
        except self._errors as exc:  # (an outage is a wait: the shard keeps its hosts and releases)
            raise BudgetUnavailable(f"Redis at {self._where} is unavailable ({type(exc).__name__})") from None


def budget_client(shared: str | None, crawl: str) -> BudgetClient | None:
    """The client ``--shared-politeness`` names: ``cluster``, a ``redis://`` URL, or None (the crawl's own clocks)."""
    if not shared:
        return None
    return RegistryClient(crawl) if shared == "cluster" else RedisClient(shared, crawl)
