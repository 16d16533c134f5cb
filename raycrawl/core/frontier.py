"""FrontierShard: the single owner of a set of hosts — their queues, their politeness clocks, their robots.

The contract (what the coordinator may rely on):

- ``push(entries)`` queues canonical, already-deduplicated URLs. URLs that robots.txt forbids, or that a queue
  bound sheds, end at once as ``Terminal`` values collected in ``take_terminals()``; nothing is dropped silently.
- ``lease(max_urls, horizon)`` hands out only URLs whose host may be hit by ``now + horizon``, each with the
  ``not_before`` time at which its request may be sent. A host with no fresh robots.txt first gets a lease for
  its robots.txt, which is paced like any request. At most ``per_host_concurrency`` leases per host are out.
- ``ack(acks)`` closes leases. The host's next slot is based on when its server really answered, so the gap
  the server sees between two requests never falls below the host's delay, however many fetchers there are.
  Transient failures go back into the queue with a per-host backoff until ``max_attempts``.
- ``release(lease_ids)`` returns leases whose fetch task died; ``expire()`` does the same for leases that ran out.
- ``drain(detail)`` ends every queued URL as ``out_of_budget`` (the crawl stopped before reaching them).

Everything here is plain Python with an injected clock: the actor wrapping it adds nothing but Ray.
"""

from __future__ import annotations

import heapq
import math
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from raycrawl.core.records import Ack, Lease, Terminal, UrlEntry
from raycrawl.core.robots import RobotsRules, rules_from_fetch
from raycrawl.core.urls import host_key, origin

ScoreFn = Callable[[UrlEntry], float]
Clock = Callable[[], float]


def by_depth(entry: UrlEntry) -> float:
    """Default priority: shallower pages first (breadth-first per host), then first come first served."""
    return float(entry.depth)


@dataclass(frozen=True, slots=True)
class FrontierSettings:
    delay: float = 1.0
    per_host_concurrency: int = 1
    max_crawl_delay: float = 30.0
    robots_ttl: float = 24 * 3600.0
    ua_token: str = "raycrawl"
    max_attempts: int = 3
    max_queue_per_host: int = 100_000
    max_queue_total: int = 1_000_000
    lease_ttl: float = 120.0
    retry_base_delay: float = 1.0
    max_backoff: float = 3600.0


@dataclass(slots=True)
class HostState:
    key: str
    origin: str
    queue: list[tuple[float, int, UrlEntry]] = field(default_factory=list)
    next_allowed: float = 0.0
    backoff_until: float = 0.0
    in_flight: int = 0
    delay: float = 0.0
    robots: RobotsRules | None = None
    robots_leased: bool = False
    robots_failures: int = 0
    robots_given_up: bool = False
    heap_token: int = 0
    fetched: int = 0
    errors: int = 0


@dataclass(slots=True)
class _Leased:
    lease: Lease
    entry: UrlEntry | None  # None for robots.txt leases
    expires_at: float


@dataclass(slots=True)
class ShardReply:
    """Everything one coordinator round trip to a shard returns."""

    leases: list[Lease]
    terminals: list[Terminal]
    retried: list[int]
    stale: list[int]
    queued: int
    leased: int
    next_due: float | None


@dataclass(slots=True)
class AckReply:
    retried: list[int] = field(default_factory=list)  # requeued: no record yet
    stale: list[int] = field(default_factory=list)  # unknown lease (expired and handed out again): ignore


class FrontierShard:
    def __init__(
        self,
        shard_id: int,
        settings: FrontierSettings,
        score: ScoreFn = by_depth,
        clock: Clock = time.time,
    ) -> None:
        self.shard_id = shard_id
        self.settings = settings
        self._score = score
        self._clock = clock
        self._hosts: dict[str, HostState] = {}
        self._ready: list[tuple[float, int, str]] = []  # (due, token, host): the ready-heap
        self._leases: dict[int, _Leased] = {}
        self._terminals: list[Terminal] = []
        self._next_lease_id = 1
        self._seq = 0
        self._queued = 0
        self.counters: Counter[str] = Counter()

    # --- queries -------------------------------------------------------------------------------------

    @property
    def queued(self) -> int:
        return self._queued

    @property
    def leased(self) -> int:
        return len(self._leases)

    def next_due(self) -> float | None:
        """When the earliest host may next be leased (None: no host is waiting to be leased)."""
        while self._ready:
            due, token, key = self._ready[0]
            if self._hosts[key].heap_token == token:
                return due
            heapq.heappop(self._ready)
        return None

    def take_terminals(self) -> list[Terminal]:
        out, self._terminals = self._terminals, []
        return out

    # --- push ----------------------------------------------------------------------------------------

    def push(self, entries: Iterable[UrlEntry]) -> None:
        s = self.settings
        touched: dict[str, HostState] = {}
        for entry in entries:
            hs = self._host(entry.url)
            if hs.robots_given_up:
                self._end(entry, "error", "robots.txt unavailable")
                continue
            if hs.robots is not None and not hs.robots.unavailable and not hs.robots.allows(entry.url, s.ua_token):
                self.counters["robots_denied"] += 1
                self._end(entry, "robots_denied", "disallowed by robots.txt")
                continue
            if len(hs.queue) >= s.max_queue_per_host:
                self.counters["shed_host_queue"] += 1
                self._end(entry, "out_of_budget", "per-host queue full")
                continue
            if self._queued >= s.max_queue_total:
                self.counters["shed_frontier_full"] += 1
                self._end(entry, "out_of_budget", "frontier full")
                continue
            self._enqueue(hs, entry)
            touched[hs.key] = hs
        for hs in touched.values():
            self._schedule(hs)

    def _host(self, url: str) -> HostState:
        key = host_key(url)
        hs = self._hosts.get(key)
        if hs is None:
            hs = HostState(key=key, origin=origin(url), delay=self.settings.delay)
            self._hosts[key] = hs
        return hs

    def _enqueue(self, hs: HostState, entry: UrlEntry) -> None:
        self._seq += 1
        heapq.heappush(hs.queue, (self._score(entry), self._seq, entry))
        self._queued += 1

    def _end(self, entry: UrlEntry, outcome: Any, detail: str) -> None:
        self._terminals.append(Terminal(entry, outcome, detail))

    # --- scheduling ----------------------------------------------------------------------------------

    def _needs_robots(self, hs: HostState, now: float) -> bool:
        return not hs.robots_leased and (hs.robots is None or now >= hs.robots.expires_at)

    def _schedule(self, hs: HostState) -> None:
        """(Re)insert the host in the ready-heap if it could take a lease; older heap entries become stale."""
        hs.heap_token += 1
        if (
            not hs.queue
            or hs.robots_leased  # pages wait for the robots.txt answer
            or hs.robots_given_up
            or hs.in_flight >= self.settings.per_host_concurrency
        ):
            return
        due = max(hs.next_allowed, hs.backoff_until)
        if hs.robots is not None and hs.robots.unavailable:
            due = max(due, hs.robots.expires_at)  # when robots.txt is asked for again
        heapq.heappush(self._ready, (due, hs.heap_token, hs.key))

    # --- lease ---------------------------------------------------------------------------------------

    def lease(self, max_urls: int, horizon: float = 0.0) -> list[Lease]:
        now = self._clock()
        self.expire(now)
        limit = now + horizon
        out: list[Lease] = []
        while self._ready and len(out) < max_urls:
            due, token, key = self._ready[0]
            hs = self._hosts[key]
            if hs.heap_token != token:
                heapq.heappop(self._ready)
                continue
            if due > limit:
                break
            heapq.heappop(self._ready)
            hs.heap_token += 1
            not_before = max(now, hs.next_allowed, hs.backoff_until)
            if self._needs_robots(hs, now):
                lease = self._new_lease(hs.origin + "/robots.txt", "robots", not_before, None)
                hs.robots_leased = True
            else:
                _, _, entry = heapq.heappop(hs.queue)
                self._queued -= 1
                lease = self._new_lease(entry.url, "page", not_before, entry)
            hs.in_flight += 1
            # Provisional: the real next slot is set on ack from when the server answered.
            hs.next_allowed = not_before + hs.delay
            out.append(lease)
            self._schedule(hs)
        self.counters["leased"] += len(out)
        return out

    def _new_lease(self, url: str, kind: Any, not_before: float, entry: UrlEntry | None) -> Lease:
        lease_id = self._next_lease_id
        self._next_lease_id += 1
        lease = Lease(
            lease_id=lease_id,
            shard=self.shard_id,
            url=url,
            kind=kind,
            not_before=not_before,
            expires_at=not_before + self.settings.lease_ttl,
            depth=entry.depth if entry else 0,
            parent=entry.parent if entry else None,
            attempts=entry.attempts if entry else 0,
        )
        self._leases[lease_id] = _Leased(lease, entry, lease.expires_at)
        return lease

    # --- ack / release / expire ----------------------------------------------------------------------

    def ack(self, acks: Sequence[Ack]) -> AckReply:
        reply = AckReply()
        now = self._clock()
        touched: dict[str, HostState] = {}
        for ack in acks:
            held = self._leases.pop(ack.lease_id, None)
            if held is None:
                reply.stale.append(ack.lease_id)
                self.counters["stale_acks"] += 1
                continue
            hs = self._hosts[host_key(held.lease.url)]
            hs.in_flight -= 1
            touched[hs.key] = hs
            if held.entry is None:
                self._robots_answered(hs, ack, now)
            elif ack.transient and held.entry.attempts + 1 < self.settings.max_attempts:
                self._retry(hs, held.entry, now)
                reply.retried.append(ack.lease_id)
            elif ack.error is not None or ack.transient:
                hs.errors += 1
            else:
                hs.fetched += 1
            answered = ack.responded_at or now
            hs.next_allowed = max(hs.next_allowed, answered + hs.delay)
        for hs in touched.values():
            self._schedule(hs)
        return reply

    def _backoff(self, attempt: int) -> float:
        s = self.settings
        return float(min(s.max_backoff, s.retry_base_delay * math.pow(2.0, max(0, attempt - 1))))

    def _retry(self, hs: HostState, entry: UrlEntry, now: float) -> None:
        retry = UrlEntry(entry.url, entry.depth, entry.parent, entry.attempts + 1)
        self._enqueue(hs, retry)
        hs.backoff_until = max(hs.backoff_until, now + self._backoff(retry.attempts))
        self.counters["retries"] += 1

    def _robots_answered(self, hs: HostState, ack: Ack, now: float) -> None:
        s = self.settings
        hs.robots_leased = False
        rules = rules_from_fetch(ack.status, ack.body, s.ua_token, now, s.robots_ttl)
        self.counters["robots_fetched"] += 1
        if rules.unavailable:
            hs.robots_failures += 1
            permanent = ack.error is not None and not ack.transient  # e.g. a blocked address: no retry helps
            if permanent or hs.robots_failures >= s.max_attempts:
                hs.robots_given_up = True
                self.counters["robots_given_up"] += 1
                why = ack.error if ack.status is None else f"status {ack.status}"
                self._end_queue(hs, "error", f"robots.txt unavailable ({why})")
                return
            retry_at = now + self._backoff(hs.robots_failures)
            hs.robots = RobotsRules("unavailable", ack.status, fetched_at=now, expires_at=retry_at)
            return
        hs.robots_failures = 0
        hs.robots = rules
        crawl_delay = min(rules.crawl_delay or 0.0, s.max_crawl_delay)
        hs.delay = max(s.delay, crawl_delay)
        kept: list[tuple[float, int, UrlEntry]] = []
        for item in hs.queue:
            if rules.allows(item[2].url, s.ua_token):
                kept.append(item)
            else:
                self.counters["robots_denied"] += 1
                self._end(item[2], "robots_denied", "disallowed by robots.txt")
        if len(kept) != len(hs.queue):
            self._queued -= len(hs.queue) - len(kept)
            heapq.heapify(kept)
            hs.queue = kept

    def _end_queue(self, hs: HostState, outcome: Any, detail: str) -> None:
        for _, _, entry in hs.queue:
            self._end(entry, outcome, detail)
        self._queued -= len(hs.queue)
        hs.queue = []

    def release(self, lease_ids: Iterable[int], reason: str = "fetch task failed") -> None:
        """Return leases whose task died. The request may have been sent, so the host's clock advances."""
        now = self._clock()
        touched: dict[str, HostState] = {}
        for lease_id in lease_ids:
            held = self._leases.pop(lease_id, None)
            if held is None:
                continue
            hs = self._hosts[host_key(held.lease.url)]
            hs.in_flight -= 1
            hs.next_allowed = max(hs.next_allowed, now + hs.delay)
            touched[hs.key] = hs
            self.counters["released"] += 1
            if held.entry is None:
                hs.robots_leased = False
            elif held.entry.attempts + 1 < self.settings.max_attempts:
                self._retry(hs, held.entry, now)
            else:
                hs.errors += 1
                self._end(held.entry, "error", reason)
        for hs in touched.values():
            self._schedule(hs)

    def expire(self, now: float | None = None) -> None:
        now = self._clock() if now is None else now
        expired = [lid for lid, held in self._leases.items() if held.expires_at <= now]
        if expired:
            self.counters["lease_expiries"] += len(expired)
            self.release(expired, "lease expired")

    def drain(self, detail: str) -> None:
        for hs in self._hosts.values():
            self._end_queue(hs, "out_of_budget", detail)
            hs.heap_token += 1
        self._ready = []

    def exchange(
        self,
        acks: Sequence[Ack],
        pushes: Iterable[UrlEntry],
        max_leases: int,
        horizon: float,
        drain: str | None = None,
    ) -> ShardReply:
        """The coordinator's one call per round: close leases, queue new URLs, hand out what is due.

        With ``drain`` (the crawl is stopping), everything queued ends as out_of_budget instead.
        """
        reply = self.ack(acks)
        self.push(pushes)
        if drain is not None:
            self.drain(drain)
        leases = self.lease(max_leases, horizon) if max_leases > 0 else []
        return ShardReply(
            leases, self.take_terminals(), reply.retried, reply.stale, self._queued, len(self._leases), self.next_due()
        )

    # --- visibility ----------------------------------------------------------------------------------

    def host_table(self) -> list[dict[str, Any]]:
        now = self._clock()
        rows = []
        for hs in self._hosts.values():
            robots: str = "pending" if hs.robots is None else hs.robots.verdict
            if hs.robots_given_up:
                robots = "given_up"
            rows.append(
                {
                    "host": hs.key,
                    "queued": len(hs.queue),
                    "in_flight": hs.in_flight,
                    "delay": hs.delay,
                    "wait": round(max(0.0, max(hs.next_allowed, hs.backoff_until) - now), 3),
                    "robots": robots,
                    "fetched": hs.fetched,
                    "errors": hs.errors,
                }
            )
        return rows

    def summary(self) -> dict[str, int]:
        now = self._clock()
        due = self.next_due()
        ready = sum(1 for d, tok, key in self._ready if self._hosts[key].heap_token == tok and d <= now)
        return {
            "queued": self._queued,
            "leased": len(self._leases),
            "hosts": len(self._hosts),
            "hosts_ready": ready,
            "next_due_in_ms": -1 if due is None else int(max(0.0, due - now) * 1000),
        }
