"""One politeness budget per host for every crawl that shares it (issue 34): the reservation logic of the cluster's
politeness registry, pure (the clock is injected; an actor or a Redis script holds it).

Within one crawl a host is owned by one shard, whose clock keeps the host's delay. Crawls that share a registry
also reserve each request's slot here, a batch per shard per round: a host's slot is granted only when no other
crawl's request to it is in flight (up to the strictest concurrency asked) and its delay has passed since the last
exchange ended, so the server sees one client whatever the number of crawls.

- **The strictest delay wins**: each crawl says the delay it keeps for the host (its own rules: configured,
  robots.txt's Crawl-delay, backoff); the host's delay is the largest of the crawls that asked within
  ``ACTIVE_FOR``.
- **Reservations end** when the crawl releases them with when its exchange ended (the next slot counts from then),
  or when they expire: a crawl that dies gives its hosts back after ``ttl``.
- A slot due later than ``now + horizon`` is not granted: the answer says when to ask again.
- **Turns**: a crawl that had the host's last slot does not get the next while another crawl was refused since
  (within ``WAITER_FOR``): crawls that ask every round take the host in turn, not first come first served (a crawl
  that answers fast and asks ahead would otherwise keep it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

ACTIVE_FOR = 600.0  # seconds a crawl's delay for a host counts after it last asked
WAITER_FOR = 10.0  # seconds a crawl refused a host's slot counts as waiting for it (one that died stops counting)
Clock = Callable[[], float]


@dataclass(frozen=True, slots=True)
class Ask:
    host: str
    delay: float  # the delay the asking crawl keeps for this host
    concurrency: int = 1  # requests in flight the asking crawl allows per host


@dataclass(frozen=True, slots=True)
class Grant:
    """A slot: send no sooner than ``at``; release ``token`` with when the exchange ended."""

    host: str
    token: int
    at: float
    delay: float = 0.0  # the host's delay now, the strictest of the crawls': what a rendered page's scripts keep


@dataclass(frozen=True, slots=True)
class Wait:
    """No slot now: ask again at ``until`` (the host's delay, or another crawl's request in flight)."""

    host: str
    until: float


@dataclass(slots=True)
class _Host:
    # When the host's delay counts from: the last exchange's end, or a granted request's slot until its release
    # says when it ended. The delay itself is decided at each ask (a stricter crawl that joins counts at once).
    last: float = float("-inf")
    delays: dict[str, tuple[float, float]] = field(default_factory=dict)  # crawl -> (its delay, when it asked)
    concurrency: dict[str, tuple[int, float]] = field(default_factory=dict)  # crawl -> (its bound, when it asked)
    out: dict[int, tuple[str, float]] = field(default_factory=dict)  # token -> (crawl, expires at)
    holder: str = ""  # the crawl granted the last slot
    waiting: dict[str, float] = field(default_factory=dict)  # crawls refused since, and when

    def delay(self, now: float) -> float:
        return max((d for d, at in self.delays.values() if at > now - ACTIVE_FOR), default=0.0)

    def bound(self, now: float) -> int:
        return min((c for c, at in self.concurrency.values() if at > now - ACTIVE_FOR), default=1)


# (host, token, when its exchange ended)
Release = tuple[str, int, float]


class BudgetUnavailable(Exception):
    """The shared budget could not be reached (Redis down, say): nothing of the exchange is known to have happened.
    The shard sends nothing to the hosts that asked and keeps them and its releases for a later exchange."""


class BudgetClient(Protocol):
    """What a shard calls once per round: its releases since the last call, and this round's asks (BudgetUnavailable
    when the budget cannot be reached: releases may be given again, a token released twice is released once)."""

    def exchange(self, releases: Sequence[Release], asks: Sequence[Ask], horizon: float) -> list[Grant | Wait]: ...


class HostBudget:
    def __init__(self, ttl: float = 180.0, clock: Clock = time.time) -> None:
        self.ttl = ttl  # a reservation not released by then is taken back (its crawl died, or lost it)
        self._clock = clock
        self._hosts: dict[str, _Host] = {}
        self._next_token = 1
        self.expired = 0
        # A host first met after a restart counts a request as made then: what happened since the snapshot is unknown
        self._floor = float("-inf")

    def reserve(self, crawl: str, asks: Sequence[Ask], horizon: float = 0.0) -> list[Grant | Wait]:
        """A slot for each ask (in order; one host may be asked for more than once), or when to ask again."""
        now = self._clock()
        out: list[Grant | Wait] = []
        for ask in asks:
            host = self._hosts.get(ask.host)
            if host is None:
                host = self._hosts[ask.host] = _Host(self._floor)
            self._expire(host, now)
            host.delays[crawl] = (ask.delay, now)
            host.concurrency[crawl] = (max(1, ask.concurrency), now)
            at = max(now, host.last + host.delay(now))
            others = any(c != crawl and t > now - WAITER_FOR for c, t in host.waiting.items())
            # (in flight elsewhere: the earliest the next slot can be is still ``at``, from that request's slot)
            busy = len(host.out) >= host.bound(now)
            wait = Wait(ask.host, at) if busy or at > now + horizon or (crawl == host.holder and others) else None
            if wait is not None:
                host.waiting[crawl] = now
                out.append(wait)
                continue
            host.holder, host.waiting = crawl, {}
            token = self._next_token
            self._next_token += 1
            host.out[token] = (crawl, at + self.ttl)
            host.last = at  # (provisional: the next slot counts from the exchange's end, which its release says)
            out.append(Grant(ask.host, token, at, host.delay(now)))
        return out

    def release(self, crawl: str, done: Sequence[tuple[str, int, float]]) -> None:
        """(host, token, when its exchange ended): the host's next slot is that end plus its delay."""
        now = self._clock()
        for name, token, ended in done:
            host = self._hosts.get(name)
            if host is None or host.out.pop(token, None) is None:
                continue  # (expired already: the slot was taken back)
            host.last = max(host.last, min(ended, now))

    def holders(self) -> set[str]:
        """The crawls holding a slot now."""
        return {crawl for host in self._hosts.values() for crawl, _ in host.out.values()}

    def forget(self, crawl: str) -> int:
        """A crawl known to have ended (its coordinator is gone): its slots come back now, not at their ttl, and its
        delays stop counting. The slots taken back."""
        freed = 0
        for host in self._hosts.values():
            mine = [token for token, (holder, _) in host.out.items() if holder == crawl]
            for token in mine:
                del host.out[token]
            freed += len(mine)
            host.delays.pop(crawl, None)
            host.concurrency.pop(crawl, None)
            host.waiting.pop(crawl, None)
        return freed

    def _expire(self, host: _Host, now: float) -> None:
        late = [token for token, (_, expires) in host.out.items() if expires <= now]
        for token in late:
            del host.out[token]
        self.expired += len(late)

    def in_flight(self, host: str) -> int:
        state = self._hosts.get(host)
        if state is None:
            return 0
        self._expire(state, self._clock())
        return len(state.out)

    def delay(self, host: str) -> float:
        state = self._hosts.get(host)
        return state.delay(self._clock()) if state is not None else 0.0

    # --- its state survives a restart ------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """What a restart needs: each host's next slot and the crawls' delays (reservations out are counted as
        ended now: a restarted registry does not know when they will)."""
        now = self._clock()
        hosts = {}
        for name, host in self._hosts.items():
            last = max(host.last, now) if host.out else max(host.last, 0.0)  # (JSON has no -inf)
            hosts[name] = {"last": last, "delays": {c: list(v) for c, v in host.delays.items()}}
        return {"hosts": hosts, "next_token": self._next_token}

    @classmethod
    def from_dict(cls, data: dict[str, Any], ttl: float = 180.0, clock: Clock = time.time) -> HostBudget:
        """The budget as saved, every host counted as asked for right now: a snapshot is a few seconds old and what
        was granted since is unknown (as a shard's restore counts its hosts' last request as made then)."""
        budget = cls(ttl, clock)
        budget._floor = clock()
        budget._next_token = int(data.get("next_token", 1))
        for name, saved in data.get("hosts", {}).items():
            host = budget._hosts[name] = _Host(max(float(saved["last"]), budget._floor))
            host.delays = {c: (float(d), float(at)) for c, (d, at) in saved.get("delays", {}).items()}
        return budget


class LocalBudget:
    """A crawl's ``BudgetClient`` on a budget in the same process (tests; the registry actor serves many)."""

    def __init__(self, budget: HostBudget, crawl: str) -> None:
        self.budget, self.crawl = budget, crawl

    def exchange(self, releases: Sequence[Release], asks: Sequence[Ask], horizon: float) -> list[Grant | Wait]:
        self.budget.release(self.crawl, releases)
        return self.budget.reserve(self.crawl, asks, horizon)
