"""How a shard makes its leases, and takes back those whose task died or whose run stopped.

The hosts due by a round's horizon are taken (soonest first, or best first when ranked: core/due_hosts.py) and each
is leased its next URL -- or its robots.txt first -- not before its clock; a due host may be leased a run of URLs at
once (core/runs.py). With a politeness budget shared with other crawls (core/host_budget.py) the hosts due ask it
for their slots in one exchange first. Leasing moves a host's clock provisionally (``HostState.clock_on_lease``);
the answer sets it (``clock_on_answer``); a lease taken back counts as answered then.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable

from raycrawl.core.due_hosts import DueHosts
from raycrawl.core.frontier_settings import FrontierSettings
from raycrawl.core.host_budget import Ask, BudgetClient, BudgetUnavailable, Grant
from raycrawl.core.hosts import HostState
from raycrawl.core.lease_table import LeaseTable
from raycrawl.core.politeness import backoff
from raycrawl.core.records import Lease
from raycrawl.core.robots_lifecycle import robots_lease
from raycrawl.core.runs import base_gap, run_size
from raycrawl.core.shard_queues import EndFn, ShardQueues

BUDGET_RETRY_S = 1.0  # a shared budget that could not be reached is asked again after this (its hosts wait)


class Leasing:
    def __init__(
        self,
        shard_id: int,
        settings: FrontierSettings,
        parts: tuple[DueHosts, ShardQueues, LeaseTable],  # the shard's
        schedule: Callable[[HostState], None],  # the shard's: a host back among the hosts due, if it may be
        end: EndFn,
        rng: random.Random,  # (for the backoff's jitter)
    ) -> None:
        self.shard_id = shard_id
        self.settings = settings
        self.due_hosts, self.queues, self.leases = parts
        self.schedule = schedule
        self.end = end
        self.rng = rng
        self.counters = self.queues.counters
        self.budget_unavailable: str | None = None  # why the shared budget did not answer the last exchange

    def lease(self, max_urls: int, now: float, limit: float) -> list[Lease]:
        """Up to ``max_urls`` leases of the hosts due by ``limit``, each not before ``now``."""
        out: list[Lease] = []
        lease_id = first = self.leases.next_id
        stop = lease_id + max_urls  # (lease ids are consecutive: the count leased is lease_id - first id)
        earliest = float("inf")
        concurrency = self.settings.per_host_concurrency
        runs = self.settings.run_length > 1 and concurrency == 1
        pop_due, lease_one, schedule, record = self.due_hosts.pop, self.lease_one, self.schedule, self.leases.record
        while lease_id < stop:  # (once per host leased: what it reads is held in locals)
            hs = pop_due(limit)
            if hs is None:
                break
            # Decided at the time the request will be sent: a lease may be handed out up to the horizon early.
            # (gap: the host's delay, for the requests a rendered page's scripts make: core/render_jobs.py)
            head = lease_one(hs, lease_id, now, hs.delay)
            if head.not_before < earliest:
                earliest = head.not_before
            hs.in_flight += 1
            if runs and head.kind != "robots" and (hs.queue or hs.stored):  # (a workbench may be empty)
                # (the rest of the run: counted in flight, the host out of the heaps until every one of them
                # is answered or given back)
                group = [head, *self.run_after(hs, head, limit, stop - lease_id - 1)]
                hs.in_flight += len(group) - 1
                self.counters["run_leases"] += len(group) - 1
            else:
                group = [head]
            record(hs, group)
            out += group
            lease_id += len(group)
            if hs.in_flight < concurrency:  # (otherwise an ack puts the host back among the hosts due)
                schedule(hs)
        if lease_id > first:
            self.leases.expires_by(earliest + self.settings.lease_ttl)
        self.queues.note_peaks()
        self.counters["leased"] += len(out)
        return out

    def lease_one(self, hs: HostState, lease_id: int, earliest: float, gap: float) -> Lease:
        """The next lease of a due host, not before its clock, its block or ``earliest``: its next URL, or its
        robots.txt when it has none fresh by then (or an unreachable one to ask again). The host's clock moves
        provisionally: the real next slot is set on ack, from when the server answered."""
        not_before = hs.next_allowed  # (the latest of these three, inline: this runs for every host leased)
        if hs.blocked_until > not_before:
            not_before = hs.blocked_until
        if earliest > not_before:
            not_before = earliest
        ttl = self.settings.lease_ttl
        robots = hs.robots
        if robots is not None and robots.expires_at > not_before and robots.verdict != "unreachable":  # fresh rules
            entry = self.queues.pop(hs)
            lease = Lease(lease_id, self.shard_id, entry.kind, not_before, not_before + ttl, entry, 0, gap)
        else:
            lease = robots_lease(lease_id, self.shard_id, hs.origin, not_before, ttl, hs.robots)
            hs.robots_leased = True
        hs.clock_on_lease(lease.not_before)
        return lease

    def run_after(self, hs: HostState, head: Lease, limit: float, room: int) -> list[Lease]:
        """The leases that follow ``head`` in its host's run (core/runs.py): as many queued URLs as the host's
        delay fits before ``limit`` (within ``run_length``, ``room`` and what could still be accepted), each after
        the one before, while its robots.txt stays fresh. Taken from the queue; the caller counts them."""
        cap = self.settings.max_accepted_per_host
        if cap is not None:
            room = min(room, cap - hs.accepted - hs.in_flight)
        robots = hs.robots
        # (an operator's set-delay replaces the host's delay: its runs keep it too)
        gap = hs.delay_override
        if gap is None:
            gap = base_gap(self.settings.policy, robots.crawl_delay if robots is not None else None)
        size = min(run_size(self.settings.run_length, gap, max(0.0, limit - head.not_before)) - 1, room)
        if size <= 0 or robots is None or robots.expires_at <= limit + gap * size:
            return []
        first, not_before, expires_at, shard = head.lease_id, head.not_before, head.expires_at, self.shard_id
        # (each names the one before it: ids are consecutive from the head's)
        return [
            Lease(first + i, shard, entry.kind, not_before, expires_at, entry, first + i - 1, gap)
            for i, entry in enumerate(self.queues.pop_run(hs, size), 1)
        ]

    def take_back(self, lease_ids: list[int], now: float, reason: str) -> dict[str, HostState]:
        """Leases whose task died, returned (the hosts touched, to schedule). The request may have been sent, so
        the host's clock advances. A run's lease whose predecessor is returned too was never sent (each waits for
        the answer before it): its URL is queued again without spending an attempt (else a run of 8 cost 8
        attempts a death, the crawl's whole budget of them in a few)."""
        self.leases.slots_done((lease_id, now) for lease_id in lease_ids)
        unanswered = {lease_id for lease_id in lease_ids if lease_id in self.leases}
        touched: dict[str, HostState] = {}
        for lease_id in lease_ids:
            held = self.leases.pop(lease_id)
            if held is None:
                continue
            lease, hs = held
            hs.in_flight -= 1
            hs.clock_on_answer(now)
            hs.block(now + backoff(self.settings.policy, 1, self.rng), "backoff")
            touched[hs.key] = hs
            self.counters["released"] += 1
            if lease.kind == "robots":
                hs.robots_leased = False
            elif lease.after and lease.after in unanswered:  # (never sent: as a run's unsent lease)
                self.counters["released_unsent"] += 1
                self.queues.add(hs, lease.entry)
            elif lease.attempts + 1 < self.settings.max_attempts:
                self.queues.requeue(hs, lease.entry)
            else:
                hs.errors += 1
                self.end(lease.entry, "error", reason)
        return touched

    def give_back(self, lease_ids: Iterable[int]) -> dict[str, HostState]:
        """Leases of a run that were never sent (core/runs.py): their URLs are queued again as they were (no
        attempt spent), and their host's clock stays where the answer that ended the run put it."""
        touched: dict[str, HostState] = {}
        for lease_id in lease_ids:
            held = self.leases.pop(lease_id)
            if held is None:
                continue  # (expired meanwhile: released already)
            lease, hs = held
            hs.in_flight -= 1
            touched[hs.key] = hs
            self.counters["given_back"] += 1
            if lease.kind == "robots":  # (runs never hold one; asked again, as after a release)
                hs.robots_leased = False
            elif hs.closed is not None:  # (closed meanwhile: its URLs end with it)
                self.end(lease.entry, *hs.closed)
            else:
                self.queues.add(hs, lease.entry)
        return touched

    def lease_shared(self, budget: BudgetClient, max_urls: int, horizon: float, now: float) -> list[Lease]:
        """``lease`` with a politeness budget shared with other crawls: the hosts due by the horizon (up to
        ``max_urls``, soonest -- or best -- first) ask it for their slots in one exchange, with the slots this shard
        is done with; a host granted one is leased one URL (never a run: each request needs a slot of its own) not
        before the later of its own clock and the grant; one refused waits as long as the budget says (blocked:
        "shared")."""
        limit = now + horizon
        hosts: list[HostState] = []
        while len(hosts) < max_urls and (hs := self.due_hosts.pop(limit)) is not None:
            hosts.append(hs)
        releases = self.leases.take_releases()
        if not hosts and not releases:
            return []
        asks = [Ask(hs.key, hs.delay, self.settings.per_host_concurrency) for hs in hosts]
        try:
            answers = budget.exchange(releases, asks, horizon)
        except BudgetUnavailable as exc:  # (nothing granted: no request; every host and release kept for later)
            self.leases.keep_releases(releases)
            for hs in hosts:
                hs.block(now + BUDGET_RETRY_S, "shared")
                self.schedule(hs)
            self.counters["shared_unavailable"] += 1
            self.budget_unavailable = str(exc)
            return []
        self.budget_unavailable = None
        out: list[Lease] = []
        for hs, answer in zip(hosts, answers, strict=True):
            if not isinstance(answer, Grant):
                hs.block(answer.until, "shared")
                self.counters["shared_waits"] += 1
                self.schedule(hs)
                continue
            # (its gap: the strictest delay of the crawls sharing the host; a rendered page's scripts keep it too)
            lease = self.lease_one(hs, self.leases.next_id, max(now, answer.at), max(hs.delay, answer.delay))
            self.leases.record(hs, [lease])
            self.leases.expires_by(lease.expires_at)
            self.leases.hold_slot(lease.lease_id, hs.key, answer.token)
            hs.in_flight += 1
            if hs.in_flight < self.settings.per_host_concurrency:
                self.schedule(hs)
            out.append(lease)
        self.counters["leased"] += len(out)
        return out

    def settle(self, budget: BudgetClient) -> None:
        """Give back the slots the shard is done with now."""
        releases = self.leases.take_releases()
        if releases:
            try:
                budget.exchange(releases, [], 0.0)
            except BudgetUnavailable as exc:  # (given at a later exchange; the ttl takes them back meanwhile)
                self.leases.keep_releases(releases)
                self.budget_unavailable = str(exc)
