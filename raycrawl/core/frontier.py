"""FrontierShard: the single owner of a set of hosts — their queues, their politeness clocks, their robots.

The contract (what the shard's actor, core/shard_work.py, relies on):

- ``push(entries)`` queues canonical, already-deduplicated URLs. URLs that robots.txt forbids, that a closed
  host refuses, or that a queue bound sheds end at once as ``Terminal`` values (``take_terminals()``).
- ``lease(max_urls, horizon)`` hands out only URLs whose host may be hit by ``now + horizon``, each with the
  ``not_before`` time at which its request may be sent. A host with no fresh robots.txt first gets a lease for
  its robots.txt, paced like any request. At most ``per_host_concurrency`` leases per host are out; a paused
  host gets none.
- ``ack(acks)`` closes leases and moves each host's clock (see ``HostState.on_page_answer``). Transient
  failures go back into the queue, paced by the host's backoff, until ``max_attempts``.
- ``release(lease_ids)`` returns leases whose fetch task died; ``expire()`` does the same for leases that ran out.
- With ``run_length`` > 1 a due host may be leased several URLs at once, sent one after another (core/runs.py);
  ``give_back(lease_ids)`` takes back the ones a run did not send.
- ``drain(detail)`` ends every queued URL as ``out_of_budget`` (the crawl stopped before reaching them).
- ``schedule(entries)``: a continuous crawl's URLs fetched already, due again at their ``known.due``
  (core/revisit_schedule.py); they wait in the schedule (core/due_queue.py) and join their host's queue when due.

Everything here is plain Python with an injected clock: the actor wrapping it adds nothing but Ray.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from raycrawl.core import shard_snapshot
from raycrawl.core.admission import Admission
from raycrawl.core.due_hosts import DueHosts
from raycrawl.core.due_queue import due_of
from raycrawl.core.frontier_settings import ACCEPTED_BUDGET, HOST_BUDGET, SITEMAP_BOUND, FrontierSettings
from raycrawl.core.host_budget import BudgetClient
from raycrawl.core.hosts import HostState
from raycrawl.core.lease_table import LeaseTable
from raycrawl.core.leasing import Leasing
from raycrawl.core.politeness import first_slot_offset
from raycrawl.core.priority import by_depth
from raycrawl.core.queue_store import QueueStore
from raycrawl.core.records import Ack, Lease, Link, Outcome, Terminal, UrlEntry
from raycrawl.core.robots_lifecycle import DENIED, judge
from raycrawl.core.shard_queues import ShardQueues
from raycrawl.core.sitemap_hints import SitemapHint, score_bonus, unchanged_since_capture
from raycrawl.core.sitemaps import sitemap_links
from raycrawl.core.urls import host_key, origin

SITEMAP_WAIT = 2.0  # seconds a host's pages wait for the sitemaps its robots.txt names to be queued
ScoreFn = Callable[[UrlEntry], float]
Clock = Callable[[], float]

EVICT_EVERY = 300.0  # seconds between two looks for idle hosts to forget (FrontierShard.evict_idle)
RELEASE_BOUND = 10_000  # revisits due that one lease call moves from the schedule to their hosts' queues
__all__ = ["ACCEPTED_BUDGET", "HOST_BUDGET", "SITEMAP_BOUND", "AckReply", "FrontierSettings", "FrontierShard"]


@dataclass(slots=True)
class AckReply:
    retried: list[int] = field(default_factory=list)  # requeued: no record yet
    stale: list[int] = field(default_factory=list)  # unknown lease (expired and handed out again): ignore


class FrontierShard:
    """The orchestrator of the contract above. What it is made of, each the only writer of what it owns: the hosts'
    politeness state (core/hosts.py: the clock), the hosts due (core/due_hosts.py), the queues and their count
    (core/shard_queues.py), the leases out (core/lease_table.py), robots.txt's lifecycle (core/robots_lifecycle.py)
    and the checkpoint's form (core/shard_snapshot.py)."""

    def __init__(
        self,
        shard_id: int,
        settings: FrontierSettings,
        score: ScoreFn = by_depth,
        clock: Clock = time.time,
        store: QueueStore | None = None,
        budget: BudgetClient | None = None,
    ) -> None:
        self.shard_id = shard_id
        self.settings = settings
        self.counters: Counter[str] = Counter()
        self._score = score
        self._clock = clock
        # A politeness budget shared with other crawls (core/host_budget.py): each lease also needs its slot there
        self._budget = budget
        self.queues = ShardQueues(store, settings.workbench, score, self._end, self.counters)
        self.due_hosts = DueHosts(rank=score is not by_depth)
        self.leases = LeaseTable()
        self._admission = Admission(settings, self.queues, score, self._end, self.counters)
        self._rng = random.Random(settings.seed * 7919 + shard_id)
        self._leasing = Leasing(
            shard_id, settings, (self.due_hosts, self.queues, self.leases), self._schedule, self._end, self._rng
        )
        self.hosts: dict[str, HostState] = {}
        self._terminals: list[Terminal] = []
        self._discovered: list[Link] = []  # sitemaps named by robots.txt files, for the shard to route
        self._came_due: list[str] = []  # revisits released since take_came_due, for the shard to renew their marks
        self._paused: set[str] = set()  # hosts with a pause reason: few, so their queues can be summed often
        self._next_eviction = clock() + EVICT_EVERY

    # --- queries -------------------------------------------------------------------------------------

    @property
    def queued(self) -> int:
        return self.queues.count

    @property
    def queued_paused(self) -> int:
        return sum(self.hosts[key].queued for key in self._paused)

    @property
    def store_full(self) -> str | None:
        """Why the queue store refused URLs (they wait in memory), or None."""
        return self.queues.full

    @property
    def budget_unavailable(self) -> str | None:
        """Why the shared budget did not answer the last exchange (None: it did, or there is none)."""
        return self._leasing.budget_unavailable

    @property
    def leased(self) -> int:
        return len(self.leases)

    @property
    def held(self) -> int:
        return self.queues.held

    def next_due(self) -> float | None:
        """When the earliest host may next be leased (None: no host is waiting to be leased)."""
        due = [at for at in (self.due_hosts.next_due(), self.queues.due.best()) if at is not None]
        return min(due) if due else None

    @property
    def scheduled(self) -> int:
        """Revisits waiting for their due time (not counted in ``queued``)."""
        return self.queues.due.count

    def take_terminals(self) -> list[Terminal]:
        out, self._terminals = self._terminals, []
        return out

    def take_came_due(self) -> list[str]:
        """The URLs of revisits that came due (joined their hosts' queues) since the last call."""
        out, self._came_due = self._came_due, []
        return out

    def take_discovered(self) -> list[Link]:
        """Links the frontier found itself (robots.txt Sitemap: lines): screened and deduplicated like any."""
        out, self._discovered = self._discovered, []
        return out

    # --- push ----------------------------------------------------------------------------------------

    def push(self, entries: Iterable[UrlEntry], revisits: bool = False) -> None:
        """Queue new URLs (or, with ``revisits``, URLs fetched before and due again: admitted once already, their
        host's page budget does not count them again) -- those their host's state admits (core/admission.py)."""
        self._schedule_all(self._admission.admit(entries, self.hosts, self.host_for, revisits))

    def retry(self, entries: Iterable[UrlEntry]) -> None:
        """URLs that ended (dead letters) queued again with fresh attempts; a host that an error closed (robots.txt
        unreachable) is opened again, to ask for its robots.txt anew."""
        entries = list(entries)
        for entry in entries:
            hs = self.hosts.get(host_key(entry.url))
            if hs is not None and hs.closed is not None and hs.closed[0] == "error":
                hs.closed, hs.robots, hs.robots_failures = None, None, 0
        self.counters["dead_letters_retried"] += len(entries)
        self.push(entries)

    def schedule(self, visits: Sequence[tuple[UrlEntry, bool | None]]) -> None:
        """URLs fetched now, due again at their ``known.due`` (core/revisit_schedule.py), each with what its visit
        found (True: a change, False: none, None: its first visit) for its host's figures."""
        for entry, changed in visits:
            hs = self.hosts.get(host_key(entry.url))
            if hs is not None and entry.known is not None:
                hs.interval = entry.known.interval or 0.0
                if changed is not None:
                    hs.revisits += 1
                    hs.changes += changed
        self.queues.due.add(entry for entry, _ in visits)
        self.counters["scheduled"] += len(visits)

    def _release_due(self, until: float) -> None:
        """Revisits due by ``until`` join their hosts' queues (paced there like any URL)."""
        due = self.queues.due.take_due(until, RELEASE_BOUND)
        if due:
            self.counters["revisits_due"] += len(due)
            self._came_due.extend(entry.url for entry in due)
            self.push(due, revisits=True)

    def apply_hints(self, hints: dict[str, SitemapHint]) -> None:
        """What a sitemap says of URLs queued here (core/sitemap_hints.py): each is scored again, or, for a recrawl's
        URL the site says has not changed since its capture, ends as ``skipped_unchanged`` without a request."""
        by_host: dict[str, set[str]] = {}
        for url in hints:
            by_host.setdefault(host_key(url), set()).add(url)
        now = self._clock()
        for key, listed in by_host.items():
            hs = self.hosts.get(key)
            if hs is None or not hs.queued:
                continue

            def is_listed(entry: UrlEntry, listed: set[str] = listed) -> bool:
                return entry.kind == "page" and entry.url in listed

            # (A sitemap is read once per host: this is not per URL.)
            for entry in self.queues.take_where(hs, is_listed):
                hint = hints[entry.url]
                if unchanged_since_capture(hint, entry.known):
                    self.counters["sitemap_skipped_unchanged"] += 1
                    self._end(entry, "skipped_unchanged", "the sitemap's lastmod is older than the last capture")
                else:
                    entry.hint = score_bonus(hint, now)
                    self.queues.add(hs, entry)
            self.queues.flush()
            self._schedule(hs)

    def host_for(self, url: str) -> HostState:
        """The URL's host, met now if it is new."""
        key = host_key(url)
        hs = self.hosts.get(key)
        if hs is None:
            hs = HostState(key=key, origin=origin(url), delay=self.settings.policy.delay)
            hs.recompute_delay(self.settings.policy)
            spread = self.settings.first_slot_spread
            if spread:
                hs.clock_first_slot(self._clock() + first_slot_offset(len(self.hosts), hs.delay, spread))
            self.hosts[key] = hs
        return hs

    def _schedule_all(self, touched: dict[str, HostState]) -> None:
        self.queues.flush(list(touched.values()))
        for hs in touched.values():
            self._schedule(hs)

    def _end(self, entry: UrlEntry, outcome: Outcome, detail: str) -> None:
        self._terminals.append(Terminal(entry, outcome, detail))

    # --- scheduling ----------------------------------------------------------------------------------

    def _schedule(self, hs: HostState) -> None:
        """(Re)insert the host among the hosts due if it could take a lease; its older entry becomes stale."""
        self.queues.top_up(hs)  # (after a lease: most were refilled in a batch)
        cap = self.settings.max_accepted_per_host
        if (
            hs.in_flight >= self.settings.per_host_concurrency
            or (cap is not None and hs.accepted + hs.in_flight >= cap)  # (never more out than could be accepted)
            or hs.robots_leased  # pages wait for the robots.txt answer
            or hs.closed is not None
            or hs.paused is not None
            or not hs.queue
        ):
            self.due_hosts.drop(hs)
            return
        due = hs.due()
        robots = hs.robots
        if robots is not None and robots.verdict == "unreachable" and robots.expires_at > due:
            due = robots.expires_at  # when robots.txt is asked for again
        self.due_hosts.put(hs, due)

    # --- lease ---------------------------------------------------------------------------------------

    def lease(self, max_urls: int, horizon: float = 0.0) -> list[Lease]:
        """Up to ``max_urls`` leases of hosts due by ``now + horizon`` (core/leasing.py)."""
        now = self._clock()
        self.expire(now)
        if self.queues.due.count:  # (due by now, not by the horizon: a lease may be sent as early as it allows)
            self._release_due(now)
        if self._budget is not None:
            return self._leasing.lease_shared(self._budget, max_urls, horizon, now)
        return self._leasing.lease(max_urls, now, now + horizon)

    def settle_budget(self) -> None:
        """Give back the slots this shard is done with now (a round that leases nothing: a checkpoint's)."""
        if self._budget is not None:
            self._leasing.settle(self._budget)

    def best_waiting(self, horizon: float = 0.0) -> float | None:
        """With priorities: the best key of a host due (by ``horizon``) that no lease took; the coordinator gives
        spare capacity to the shard with the best one. None by depth, or when no host waits."""
        return self.due_hosts.best_waiting(self._clock() + horizon)

    def due_backlog(self, horizon: float, cap: int) -> int:
        """Hosts due by ``horizon`` that no lease took (the round's quota ran out first), counted up to ``cap``:
        what more fetch tasks would fetch now (core/demand.py). Costs O(what it counts), not O(hosts)."""
        return self.due_hosts.backlog(self._clock() + horizon, cap)

    # --- ack / release / expire ----------------------------------------------------------------------

    def ack(self, acks: Sequence[Ack]) -> AckReply:
        reply = AckReply()
        now = self._clock()
        self.leases.slots_done((a.lease_id, a.ended_at or a.responded_at or now) for a in acks)
        s = self.settings
        take, requeue = self.leases.taker(), self.queues.requeue
        touched: dict[str, HostState] = {}
        for ack in acks:  # (runs for every URL answered: what it reads is held in locals)
            held = take(ack.lease_id, None)
            if held is None:
                reply.stale.append(ack.lease_id)
                self.counters["stale_acks"] += 1
                continue
            lease, hs = held
            hs.in_flight -= 1
            touched[hs.key] = hs
            if lease.kind == "robots":
                self._robots_answered(hs, ack, now)
                continue
            retried = ack.transient and lease.entry.attempts + 1 < s.max_attempts
            if hs.on_page_answer(ack, s.policy, s.pause_after, self._rng, retried):  # (it paused the host)
                self.counters["hosts_paused"] += 1
                self._paused.add(hs.key)
            if retried:
                requeue(hs, lease.entry)
                reply.retried.append(ack.lease_id)
            if ack.accepted and s.max_accepted_per_host is not None and hs.accepted >= s.max_accepted_per_host:
                self._admission.accepted_enough(hs)
        self._schedule_all(touched)
        return reply

    def _close(self, hs: HostState, outcome: Outcome, detail: str) -> None:
        """A permanent verdict on a host: its queued URLs, and any that arrive later, end with it."""
        hs.closed = (outcome, detail)
        self._end_queue(hs, outcome, detail)
        self.counters["hosts_closed"] += 1

    def _robots_answered(self, hs: HostState, ack: Ack, now: float) -> None:
        s = self.settings
        hs.robots_leased = False
        hs.requests += 1
        answered = ack.ended_at or ack.responded_at or now
        hs.clock_on_answer(answered)
        self.counters["robots_fetched"] += 1
        verdict = judge(ack, hs.robots_failures, s, now, self._rng)
        hs.robots_failures = verdict.failures
        if verdict.counter is not None:
            self.counters[verdict.counter] += 1
        if verdict.rules is not None:
            hs.robots = verdict.rules
        if verdict.closed is not None:
            self._close(hs, *verdict.closed)
            return
        rules = verdict.rules
        if rules is None or rules.unreachable:  # (asked again when they expire)
            return
        hs.recompute_delay(s.policy)
        hs.clock_on_answer(answered)
        if s.sitemaps:
            named = (*rules.sitemaps, hs.origin + "/sitemap.xml") if s.sitemap_xml else rules.sitemaps
            self._discovered.extend(sitemap_links(named, hs.origin + "/robots.txt"))
            if named and hs.sitemaps == 0:
                # The sitemaps go first (core/sitemap_hints.py), but reach this queue a round or two later,
                # through the seen-set: the pages wait for them, briefly (one already seen never comes).
                hs.clock_wait_for_sitemaps(answered + SITEMAP_WAIT)
        denied = self.queues.remove_if(hs, lambda entry: not rules.allows(entry.request_url))
        for entry in denied:
            self._end(entry, "robots_denied", DENIED)
        self.counters["robots_denied"] += len(denied)

    def _end_queue(self, hs: HostState, outcome: Outcome, detail: str) -> None:
        for entry in self.queues.take_all(hs):
            self._end(entry, outcome, detail)

    def release(self, lease_ids: Iterable[int], reason: str = "fetch task failed") -> None:
        """Return leases whose task died (core/leasing.py ``take_back``)."""
        self._schedule_all(self._leasing.take_back(list(lease_ids), self._clock(), reason))

    def give_back(self, lease_ids: Iterable[int]) -> None:
        """Leases of a run that were never sent (core/leasing.py ``give_back``)."""
        self._schedule_all(self._leasing.give_back(lease_ids))

    def expire(self, now: float | None = None) -> None:
        expired = self.leases.expired(self._clock() if now is None else now)
        if expired:
            self.counters["lease_expiries"] += len(expired)
            self.release(expired, "lease expired")

    def evict_idle(self) -> int:
        """Forget hosts with nothing left to remember (``HostState.forgettable``) -- unless a page budget counts
        per host. A crawl of millions of hosts keeps in memory only the ones it is working on; a host seen again
        starts anew (robots.txt first). Runs at most every ``EVICT_EVERY`` seconds: it scans every host."""
        now = self._clock()
        if now < self._next_eviction:
            return 0
        self._next_eviction = now + EVICT_EVERY
        if self.settings.max_pages_per_host is not None or self.settings.max_accepted_per_host is not None:
            return 0
        idle = [key for key, hs in self.hosts.items() if hs.forgettable(now)]
        for key in idle:
            self.due_hosts.drop(self.hosts.pop(key))  # (a stale entry of it stays stale)
        self.counters["hosts_evicted"] += len(idle)
        return len(idle)

    def drain(self, detail: str) -> None:
        """End everything queued as out_of_budget; a paused host's URLs say why it was paused. Revisits (recorded
        once already) go back to the schedule, due as they were."""
        for hs in self.hosts.values():
            self._end_queue(hs, "out_of_budget", f"host paused: {hs.paused}" if hs.paused else detail)
        self.due_hosts.clear(self.hosts.values())
        revisits = [t.entry for t in self._terminals if due_of(t.entry)]
        if revisits:
            self._terminals = [t for t in self._terminals if not due_of(t.entry)]
            self.queues.due.add(revisits)

    # --- operator controls ---------------------------------------------------------------------------

    def pause_host(self, host: str, reason: str = "paused by operator") -> bool:
        hs = self.hosts.get(host)
        if hs is None:
            return False
        hs.paused = reason
        self._paused.add(host)
        self._schedule(hs)
        return True

    def resume_host(self, host: str) -> bool:
        hs = self.hosts.get(host)
        if hs is None:
            return False
        hs.paused, hs.denial_streak = None, 0
        self._paused.discard(host)
        self._schedule(hs)
        return True

    def set_delay(self, host: str, seconds: float | None) -> bool:
        hs = self.hosts.get(host)
        if hs is None:
            return False
        hs.delay_override = seconds
        hs.recompute_delay(self.settings.policy)
        self._schedule(hs)
        return True

    # --- checkpoints ---------------------------------------------------------------------------------

    def snapshot(self, stored_rows: bool = True) -> dict[str, Any]:
        """Everything this shard knows, as plain data (core/shard_snapshot.py)."""
        return shard_snapshot.save(self, stored_rows)

    def restore(self, snapshot: dict[str, Any]) -> None:
        """Load a snapshot into this (new, empty) shard."""
        restored = shard_snapshot.load(self, snapshot)
        for hs in restored:
            self._schedule(hs)
            self.push(self.queues.take_held(hs))  # under this run's budget: a larger one admits them, the rest held

    def adopt(self, hs: HostState) -> None:
        """A host restored from a checkpoint. What happened after the checkpoint is unknown (a killed crawl may
        have just hit this host): a request counts as made right now."""
        hs.clock_on_answer(self._clock())
        self.hosts[hs.key] = hs
        if hs.paused is not None:
            self._paused.add(hs.key)

    # --- visibility ----------------------------------------------------------------------------------

    def host_table(self) -> list[dict[str, Any]]:
        now = self._clock()
        return [hs.row(now) for hs in self.hosts.values()]

    def summary(self) -> dict[str, int]:
        """Counts of the shard's queues, leases and hosts now (core/shard_snapshot.py)."""
        return shard_snapshot.summary(self, self._clock(), len(self._paused))

    def schedule_summary(self, now: float) -> dict[str, int]:
        """A continuous crawl's schedule: revisits waiting, due within the hour, and how overdue its first is."""
        due = self.queues.due
        first = due.best()
        return {
            "scheduled": due.count,
            "due_within_hour": due.due_within(now, 3600.0),
            "schedule_overdue_ms": int(max(0.0, now - first) * 1000) if first is not None else 0,
        }
