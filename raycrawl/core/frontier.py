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

import dataclasses
import heapq
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from raycrawl.core.due_queue import DUE_HOST, DueQueue, due_of
from raycrawl.core.host_budget import Ask, BudgetClient, BudgetUnavailable, Grant, Release
from raycrawl.core.hosts import HostState
from raycrawl.core.politeness import DelayPolicy, backoff, first_slot_offset
from raycrawl.core.priority import by_depth
from raycrawl.core.queue_store import QueueStore
from raycrawl.core.records import Ack, Lease, Link, Outcome, Terminal, UrlEntry
from raycrawl.core.robots import RobotsRules, rules_from_fetch
from raycrawl.core.runs import base_gap, run_size
from raycrawl.core.sitemap_hints import SitemapHint, score_bonus, unchanged_since_capture
from raycrawl.core.sitemaps import sitemap_links
from raycrawl.core.urls import host_key, origin
from raycrawl.core.workbench import Workbench, decode

SITEMAP_WAIT = 2.0  # seconds a host's pages wait for the sitemaps its robots.txt names to be queued
ScoreFn = Callable[[UrlEntry], float]
Clock = Callable[[], float]


HOST_BUDGET = "max_pages_per_host"  # the detail of URLs a host's page budget turned away
ACCEPTED_BUDGET = "max_accepted_per_host"  # ... and of those its accepted-page budget did (issue 47)
SITEMAP_BOUND = "max_sitemaps_per_host"  # ... and of sitemap files past the per-host bound
EVICT_EVERY = 300.0  # seconds between two looks for idle hosts to forget (FrontierShard.evict_idle)
BUDGET_RETRY_S = 1.0  # a shared budget that could not be reached is asked again after this (its hosts wait)
RELEASE_BOUND = 10_000  # revisits due that one lease call moves from the schedule to their hosts' queues


@dataclass(frozen=True, slots=True)
class FrontierSettings:
    policy: DelayPolicy = field(default_factory=DelayPolicy)
    per_host_concurrency: int = 1
    crawl_delay_policy: Literal["cap", "skip"] = "cap"
    pause_after: int = 3  # a streak of this many 403/451 pauses the host (0: never)
    robots_ttl: float = 24 * 3600.0
    ua_token: str = "raycrawl"
    max_attempts: int = 3
    max_queue_per_host: int = 100_000
    max_queue_total: int = 2_000_000  # (in memory only: with a queue store, the store's disk is the bound)
    workbench: int = 16  # with a queue store: URLs per host kept in memory, the rest stored (core/workbench.py)
    max_pages_per_host: int | None = None  # URLs admitted per host over the whole crawl
    hold_over_budget: bool = True  # past max_pages_per_host: hold URLs for a resume with a larger budget (else end)
    # Pages of a host whose items were accepted (with an extractor): no more are leased than could still be
    # accepted, and once that many were, the host's other URLs are held (or ended) as past max_pages_per_host
    max_accepted_per_host: int | None = None
    lease_ttl: float = 120.0
    seed: int = 0  # for the backoff jitter
    first_slot_spread: float = 0.0  # new hosts' first requests spread over up to this long (core/politeness.py)
    sitemaps: bool = True  # follow robots.txt Sitemap: lines (core/sitemaps.py)
    sitemap_xml: bool = False  # ... and try /sitemap.xml on every host, named there or not
    max_sitemaps_per_host: int = 100  # sitemap files fetched per host in a run; more end as out_of_budget
    # URLs a due host may be leased at once as a run (core/runs.py), sent one after another by one fetch task;
    # with per_host_concurrency 1 only. 1: each URL on its own.
    run_length: int = 8


# What a shard keeps of a lease until it is acked: the lease (its entry inside) and its host.
# A plain tuple: one is made per URL leased, and a tuple costs a third of a slotted dataclass to make.
_Leased = tuple[Lease, HostState]


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
        store: QueueStore | None = None,
        budget: BudgetClient | None = None,
    ) -> None:
        self.shard_id = shard_id
        # A politeness budget shared with other crawls (core/host_budget.py): each lease also needs its slot there
        self._budget = budget
        self._budget_tokens: dict[int, tuple[str, int]] = {}  # lease id -> (host, its slot's token)
        self._budget_releases: list[Release] = []  # slots to give back at the next exchange
        self.budget_unavailable: str | None = None  # why the shared budget did not answer the last exchange
        self.settings = settings
        self._score = score
        # Hosts are ranked by their best URL only when scores say more than depth (that ranking costs ~25% of
        # leasing, measured with benchmarks/micro.py's frontier rate).
        self._rank_hosts = score is not by_depth
        self._clock = clock
        # With a store, a host's queue in memory is its workbench (core/workbench.py); without, it holds everything.
        self._bench = Workbench(store, settings.workbench) if store is not None else None
        self._bench_size = settings.workbench if store is not None else sys.maxsize
        self._due = DueQueue(store)  # revisits waiting for their time (a continuous crawl's: core/due_queue.py)
        self._rng = random.Random(settings.seed * 7919 + shard_id)
        self._hosts: dict[str, HostState] = {}
        # The ready-heap: (due, token, host). Tokens are unique over the shard (``_schedule``), so two entries
        # never tie and the host itself is never compared; an entry is live while its host holds its token.
        self._ready: list[tuple[float, int, HostState]] = []
        # Hosts due (by a lease's horizon) wait here, best queued score first: when there are more of them than a
        # lease may take, the hosts whose best URL scores best go first. (score, due, token, host); live, as above,
        # while the host holds the token.
        self._ranked: list[tuple[float, float, int, HostState]] = []
        self._tokens = 0
        self._leases: dict[int, _Leased] = {}
        self._expiry_check_at = float("inf")  # no lease can expire before this: expire() skips its scan until then
        self._terminals: list[Terminal] = []
        self._discovered: list[Link] = []  # sitemaps named by robots.txt files, for the shard to route
        self._paused: set[str] = set()  # hosts with a pause reason: few, so their queues can be summed often
        self._next_lease_id = 1
        self._next_eviction = clock() + EVICT_EVERY
        self._queued = 0
        self._held = 0  # URLs past their host's page budget, held for a resume with a larger one
        self._in_memory_peak = 0  # the most queued URLs the workbenches held at once (seen at leases)
        self._on_disk_peak = 0  # ... and the store
        self.counters: Counter[str] = Counter()

    # --- queries -------------------------------------------------------------------------------------

    @property
    def queued(self) -> int:
        return self._queued

    @property
    def queued_paused(self) -> int:
        return sum(self._hosts[key].queued for key in self._paused)

    @property
    def store_full(self) -> str | None:
        """Why the queue store refused URLs (they wait in memory), or None."""
        return (self._bench.full if self._bench is not None else None) or self._due.full

    @property
    def leased(self) -> int:
        return len(self._leases)

    @property
    def held(self) -> int:
        return self._held

    def next_due(self) -> float | None:
        """When the earliest host may next be leased (None: no host is waiting to be leased)."""
        top = self._ranked_top()
        soonest = top[1] if top else None  # (due by an earlier lease's horizon: due now, in effect)
        revisit = self._due.best()
        if revisit is not None:
            soonest = revisit if soonest is None else min(revisit, soonest)
        while self._ready:
            due, token, hs = self._ready[0]
            if hs.heap_token == token:
                return due if soonest is None else min(due, soonest)
            heapq.heappop(self._ready)
        return soonest

    @property
    def scheduled(self) -> int:
        """Revisits waiting for their due time (not counted in ``queued``)."""
        return self._due.count

    def take_terminals(self) -> list[Terminal]:
        out, self._terminals = self._terminals, []
        return out

    def take_discovered(self) -> list[Link]:
        """Links the frontier found itself (robots.txt Sitemap: lines): screened and deduplicated like any."""
        out, self._discovered = self._discovered, []
        return out

    # --- push ----------------------------------------------------------------------------------------

    def push(self, entries: Iterable[UrlEntry], revisits: bool = False) -> None:
        """Queue new URLs (or, with ``revisits``, URLs fetched before and due again: admitted once already, their
        host's page budget does not count them again)."""
        s = self.settings
        hosts, score = self._hosts, self._score
        bench, bench_size = self._bench, self._bench_size
        touched: dict[str, HostState] = {}
        for entry in entries:
            hs = hosts.get(host_key(entry.url)) or self._host(entry.url)
            if hs.closed is not None:
                self._end(entry, hs.closed[0], hs.closed[1])
                continue
            robots = hs.robots  # (unreachable rules are not applied: robots.txt is asked for again first)
            if robots is not None and robots.verdict == "parsed" and not robots.allows(entry.request_url):
                self.counters["robots_denied"] += 1
                self._end(entry, "robots_denied", "disallowed by robots.txt")
                continue
            if entry.kind == "sitemap":
                if hs.sitemaps >= s.max_sitemaps_per_host:
                    self.counters["sitemaps_over_bound"] += 1
                    self._end(entry, "out_of_budget", SITEMAP_BOUND)
                    continue
                hs.sitemaps += 1
                hs.clock_sitemaps_came()  # (what the pages waited for is here: the host's own clock again)
            elif s.max_pages_per_host is not None and hs.admitted >= s.max_pages_per_host and not revisits:
                self._over_budget(hs, entry, HOST_BUDGET)
                continue
            elif s.max_accepted_per_host is not None and hs.accepted >= s.max_accepted_per_host and not revisits:
                self._over_budget(hs, entry, ACCEPTED_BUDGET)
                continue
            if hs.queue.size + hs.stored >= s.max_queue_per_host:
                self.counters["shed_host_queue"] += 1
                key = score(entry)
                if hs.stored or key >= hs.queue.worst:  # (a stored queue's worst is on disk: the newcomer goes)
                    self._end(entry, "out_of_budget", "per-host queue full")
                    continue
                # The lowest-scored URL makes room (a full queue sheds from its end, not the newcomer).
                self._end(hs.queue.pop_worst(), "out_of_budget", "per-host queue full")
                hs.queue.push(key, entry)
                touched[hs.key] = hs
                continue
            if self._queued >= s.max_queue_total and bench is None:
                self.counters["shed_frontier_full"] += 1
                self._end(entry, "out_of_budget", "frontier full")
                continue
            # (what _enqueue does, inline: this loop runs for every URL)
            if hs.queue.size < bench_size and not hs.stored:
                hs.queue.push(score(entry), entry)
            else:
                bench.add(hs, score(entry), entry)  # type: ignore[union-attr]  # (a bound below maxsize: a store)
            self._queued += 1
            if entry.kind == "page" and not revisits:  # (a sitemap is not a page: the budget does not count it)
                hs.admitted += 1
            touched[hs.key] = hs
        self._schedule_all(touched)

    def retry(self, entries: Iterable[UrlEntry]) -> None:
        """URLs that ended (dead letters) queued again with fresh attempts; a host that an error closed (robots.txt
        unreachable) is opened again, to ask for its robots.txt anew."""
        entries = list(entries)
        for entry in entries:
            hs = self._hosts.get(host_key(entry.url))
            if hs is not None and hs.closed is not None and hs.closed[0] == "error":
                hs.closed, hs.robots, hs.robots_failures = None, None, 0
        self.counters["dead_letters_retried"] += len(entries)
        self.push(entries)

    def schedule(self, visits: Sequence[tuple[UrlEntry, bool | None]]) -> None:
        """URLs fetched now, due again at their ``known.due`` (core/revisit_schedule.py), each with what its visit
        found (True: a change, False: none, None: its first visit) for its host's figures."""
        for entry, changed in visits:
            hs = self._hosts.get(host_key(entry.url))
            if hs is not None and entry.known is not None:
                hs.interval = entry.known.interval or 0.0
                if changed is not None:
                    hs.revisits += 1
                    hs.changes += changed
        self._due.add(entry for entry, _ in visits)
        self.counters["scheduled"] += len(visits)

    def _release_due(self, until: float) -> None:
        """Revisits due by ``until`` join their hosts' queues (paced there like any URL)."""
        due = self._due.take_due(until, RELEASE_BOUND)
        if due:
            self.counters["revisits_due"] += len(due)
            self.push(due, revisits=True)

    def apply_hints(self, hints: dict[str, SitemapHint]) -> None:
        """What a sitemap says of URLs queued here (core/sitemap_hints.py): each is scored again, or, for a recrawl's
        URL the site says has not changed since its capture, ends as ``skipped_unchanged`` without a request."""
        by_host: dict[str, list[str]] = {}
        for url in hints:
            by_host.setdefault(host_key(url), []).append(url)
        now = self._clock()
        for key, urls in by_host.items():
            hs = self._hosts.get(key)
            if hs is None or not hs.queued:
                continue
            listed = set(urls)

            def is_listed(entry: UrlEntry, listed: set[str] = listed) -> bool:
                return entry.kind == "page" and entry.url in listed

            # The stored URLs come out, and go back through the workbench's rule (core/workbench.py): those the
            # hint scores again take their new places. (A sitemap is read once per host: this is not per URL.)
            stored = self._bench.take(hs, hs.stored) if self._bench is not None and hs.stored else []
            listed_stored = [entry for entry in stored if is_listed(entry)]
            for entry in stored:  # (the others first, in their order: then the listed, as in memory)
                if not is_listed(entry):
                    self._queued -= 1
                    self._enqueue(hs, entry)
            for entry in [*hs.queue.remove_if(is_listed), *listed_stored]:
                hint = hints[entry.url]
                if unchanged_since_capture(hint, entry.known):
                    self._queued -= 1
                    self.counters["sitemap_skipped_unchanged"] += 1
                    self._end(entry, "skipped_unchanged", "the sitemap's lastmod is older than the last capture")
                else:
                    entry.hint = score_bonus(hint, now)
                    self._queued -= 1
                    self._enqueue(hs, entry)
            if self._bench is not None:
                self._bench.flush()
            self._schedule(hs)

    def _host(self, url: str) -> HostState:
        key = host_key(url)
        hs = self._hosts.get(key)
        if hs is None:
            hs = HostState(key=key, origin=origin(url), delay=self.settings.policy.delay)
            hs.recompute_delay(self.settings.policy)
            spread = self.settings.first_slot_spread
            if spread:
                hs.clock_first_slot(self._clock() + first_slot_offset(len(self._hosts), hs.delay, spread))
            self._hosts[key] = hs
        return hs

    def _enqueue(self, hs: HostState, entry: UrlEntry) -> None:
        if self._bench is None:
            hs.queue.push(self._score(entry), entry)
        else:
            self._bench.add(hs, self._score(entry), entry)
        self._queued += 1

    def _refill(self, hosts: list[HostState]) -> None:
        """Workbenches below half topped up from the store, one block each, in one call; URLs robots.txt forbids
        (rules that came after they were stored) end here."""
        bench = self._bench
        assert bench is not None
        low = [hs for hs in hosts if hs.stored and hs.queue.size < bench.low]
        while low:
            missing = bench.missing
            refilled = bench.refill(low)
            if bench.missing > missing:
                self._queued -= bench.missing - missing
                self.counters["stored_missing"] += bench.missing - missing
            again: list[HostState] = []
            for hs in low:
                robots = hs.robots
                entries = refilled[hs.key]
                for entry in entries:
                    if robots is not None and robots.verdict == "parsed" and not robots.allows(entry.request_url):
                        self._queued -= 1
                        self.counters["robots_denied"] += 1
                        self._end(entry, "robots_denied", "disallowed by robots.txt")
                    else:
                        hs.queue.push(self._score(entry), entry)
                # A block robots.txt forbade entirely leaves the workbench empty with URLs still stored: the next
                # block now, or the host is never scheduled again (not queued in memory) and the crawl never ends.
                if entries and hs.stored and not hs.queue:
                    again.append(hs)
            low = again

    def _schedule_all(self, touched: dict[str, HostState]) -> None:
        if self._bench is not None:
            self._bench.flush(whole_blocks=True)
            self._refill(list(touched.values()))
        for hs in touched.values():
            self._schedule(hs)

    def _end(self, entry: UrlEntry, outcome: Outcome, detail: str) -> None:
        self._terminals.append(Terminal(entry, outcome, detail))

    # --- scheduling ----------------------------------------------------------------------------------

    def _schedule(self, hs: HostState) -> None:
        """(Re)insert the host in the ready-heap if it could take a lease; older heap entries become stale."""
        if hs.stored and hs.queue.size < self._bench_size // 2:  # (after a lease: most were refilled in a batch)
            self._refill([hs])
        cap = self.settings.max_accepted_per_host
        if (
            hs.in_flight >= self.settings.per_host_concurrency
            or (cap is not None and hs.accepted + hs.in_flight >= cap)  # (never more out than could be accepted)
            or hs.robots_leased  # pages wait for the robots.txt answer
            or hs.closed is not None
            or hs.paused is not None
            or not hs.queue
        ):
            hs.heap_token = 0  # (its entry, if any, is stale)
            return
        due = hs.due()
        robots = hs.robots
        if robots is not None and robots.verdict == "unreachable" and robots.expires_at > due:
            due = robots.expires_at  # when robots.txt is asked for again
        if hs.heap_token and hs.heap_due == due and not self._rank_hosts:
            # Its live entry stands: a push to a host already waiting adds no entry (a shard that takes ten thousand
            # links a second would otherwise fill its heap with stale ones faster than leases pop them).
            return
        self._tokens += 1
        hs.heap_token, hs.heap_due = self._tokens, due
        heapq.heappush(self._ready, (due, hs.heap_token, hs))

    # --- lease ---------------------------------------------------------------------------------------

    def lease(self, max_urls: int, horizon: float = 0.0) -> list[Lease]:
        now = self._clock()
        self.expire(now)
        limit = now + horizon
        if self._due.count:  # (due by now, not by the horizon: a lease may be sent as early as its horizon allows)
            self._release_due(now)
        if self._budget is not None:
            return self._lease_shared(max_urls, horizon, now)
        out: list[Lease] = []
        # This loop runs once per URL leased: what it reads and counts is held in locals, written back after.
        ready, ranked, heappop = self._ready, self._ranked, heapq.heappop
        leases, append = self._leases, out.append
        concurrency, shard, ttl = self.settings.per_host_concurrency, self.shard_id, self.settings.lease_ttl
        # (what was taken from the queues, subtracted at the end: a refill inside the loop may end URLs robots.txt
        # forbids, and counts them off self._queued itself)
        lease_id, taken, earliest = self._next_lease_id, 0, float("inf")
        stop = lease_id + max_urls  # (lease ids are consecutive: the count leased is lease_id - first id)
        rank = self._rank_hosts
        runs = self.settings.run_length > 1 and concurrency == 1
        run: list[Lease] = []
        while lease_id < stop:
            if rank:
                self._rank_due(limit)
                if not ranked:
                    break
                _, due, token, hs = heappop(ranked)
            else:  # (by depth: the hosts due soonest first, without a ranking's cost)
                if not ready:
                    break
                due, token, hs = ready[0]
                if hs.heap_token == token and due > limit:
                    break
                heappop(ready)
            if hs.heap_token != token:
                continue
            hs.heap_token = 0  # (out of the heaps: tokens start at 1)
            not_before = hs.next_allowed  # hs.due(), inline
            if hs.blocked_until > not_before:
                not_before = hs.blocked_until
            if now > not_before:
                not_before = now
            robots = hs.robots
            # Decided at the time the request will be sent: a lease may be handed out up to `horizon` early.
            if robots is not None and robots.expires_at > not_before and robots.verdict != "unreachable":
                entry = hs.queue.pop()
                # (gap: the host's delay, for the requests a rendered page's scripts make: core/render_jobs.py)
                lease = Lease(lease_id, shard, entry.kind, not_before, not_before + ttl, entry, 0, hs.delay)
                taken += 1
                room = stop - lease_id - 1
                if self.settings.max_accepted_per_host is not None:
                    room = min(room, self.settings.max_accepted_per_host - hs.accepted - hs.in_flight - 1)
                if runs and (hs.queue or hs.stored) and room > 0:  # (a workbench may be empty)
                    # (the rest of the run: counted in flight, the host out of the heaps until every one of them
                    # is answered or given back)
                    run = self._run_after(hs, lease, limit, room)
            else:  # robots.txt first: none yet, expired by then, or unreachable (asked again once it expires)
                if robots is not None and robots.expires_at > not_before:
                    not_before = robots.expires_at
                robots_txt = UrlEntry(hs.origin + "/robots.txt", 0)
                lease = Lease(lease_id, shard, "robots", not_before, not_before + ttl, robots_txt)
                hs.robots_leased = True
            leases[lease_id] = (lease, hs)
            lease_id += 1
            if not_before < earliest:
                earliest = not_before
            hs.in_flight += 1
            # Provisional: the real next slot is set on ack from when the server answered.
            hs.clock_on_lease(not_before)
            append(lease)
            if run:
                for member in run:
                    leases[member.lease_id] = (member, hs)
                    append(member)
                hs.in_flight += len(run)
                taken += len(run)
                lease_id += len(run)
                self.counters["run_leases"] += len(run)
                run = []
            if hs.in_flight < concurrency:  # (otherwise an ack puts the host back in the ready-heap)
                self._schedule(hs)
        self._next_lease_id = lease_id
        self._queued -= taken
        queued = self._queued
        if self._bench is not None:  # (what the workbenches hold -- bounded by hosts -- and what the store does)
            self._in_memory_peak = max(self._in_memory_peak, queued - self._bench.stored)
            self._on_disk_peak = max(self._on_disk_peak, self._bench.stored)
        if earliest + ttl < self._expiry_check_at:
            self._expiry_check_at = earliest + ttl
        self.counters["leased"] += len(out)
        return out

    def _lease_shared(self, max_urls: int, horizon: float, now: float) -> list[Lease]:
        """``lease`` with a politeness budget shared with other crawls (core/host_budget.py): the hosts due by the
        horizon (up to ``max_urls``, soonest -- or best -- first) ask it for their slots in one exchange, with the
        slots this shard is done with; a host granted one is leased one URL (never a run: each request needs a slot
        of its own) not before the later of its own clock and the grant; one refused waits as long as the budget
        says (blocked: "shared")."""
        limit = now + horizon
        hosts: list[HostState] = []
        if self._rank_hosts:
            self._rank_due(limit)
        while len(hosts) < max_urls:
            if self._rank_hosts:
                top = self._ranked_top()
                if top is None:
                    break
                heapq.heappop(self._ranked)
                hs = top[3]
            else:
                if not self._ready:
                    break
                due, token, hs = self._ready[0]
                if hs.heap_token == token and due > limit:
                    break
                heapq.heappop(self._ready)
                if hs.heap_token != token:
                    continue
            hs.heap_token = 0
            hosts.append(hs)
        releases, self._budget_releases = self._budget_releases, []
        if not hosts and not releases:
            return []
        concurrency = self.settings.per_host_concurrency
        asks = [Ask(hs.key, hs.delay, concurrency) for hs in hosts]
        try:
            answers = self._budget.exchange(releases, asks, horizon)  # type: ignore[union-attr]  # (set: shared)
        except BudgetUnavailable as exc:  # (nothing granted: no request; every host and release kept for later)
            self._budget_releases[:0] = releases
            for hs in hosts:
                hs.block(now + BUDGET_RETRY_S, "shared")
                self._schedule(hs)
            self.counters["shared_unavailable"] += 1
            self.budget_unavailable = str(exc)
            return []
        self.budget_unavailable = None
        out: list[Lease] = []
        for hs, answer in zip(hosts, answers, strict=True):
            if not isinstance(answer, Grant):
                hs.block(answer.until, "shared")
                self.counters["shared_waits"] += 1
                self._schedule(hs)
                continue
            lease = self._lease_host(hs, max(now, answer.at), answer.delay)
            self._budget_tokens[lease.lease_id] = (hs.key, answer.token)
            out.append(lease)
        self.counters["leased"] += len(out)
        return out

    def _lease_host(self, hs: HostState, earliest: float, shared_delay: float) -> Lease:
        """One lease of a due host, as ``lease`` makes them (its robots.txt first when it has none fresh); its gap
        is the strictest delay of the crawls sharing the host (a rendered page's scripts keep it too)."""
        ttl = self.settings.lease_ttl
        not_before = max(hs.next_allowed, hs.blocked_until, earliest)
        robots = hs.robots
        lease_id = self._next_lease_id
        if robots is not None and robots.expires_at > not_before and robots.verdict != "unreachable":
            entry = hs.queue.pop()
            gap = max(hs.delay, shared_delay)
            lease = Lease(lease_id, self.shard_id, entry.kind, not_before, not_before + ttl, entry, 0, gap)
            self._queued -= 1
        else:
            if robots is not None and robots.expires_at > not_before:
                not_before = robots.expires_at
            robots_txt = UrlEntry(hs.origin + "/robots.txt", 0)
            lease = Lease(lease_id, self.shard_id, "robots", not_before, not_before + ttl, robots_txt)
            hs.robots_leased = True
        self._leases[lease_id] = (lease, hs)
        self._next_lease_id += 1
        self._expiry_check_at = min(self._expiry_check_at, not_before + ttl)
        hs.in_flight += 1
        hs.clock_on_lease(not_before)  # (provisional, as in lease)
        if hs.in_flight < self.settings.per_host_concurrency:
            self._schedule(hs)
        return lease

    def _budget_done(self, ended: Iterable[tuple[int, float]]) -> None:
        """Slots of these leases (lease id, when its exchange ended) go back at the next exchange."""
        tokens = self._budget_tokens
        for lease_id, at in ended:
            held = tokens.pop(lease_id, None)
            if held is not None:
                self._budget_releases.append((held[0], held[1], at))

    def settle_budget(self) -> None:
        """Give back the slots this shard is done with now (a round that leases nothing: a checkpoint's)."""
        if self._budget is not None and self._budget_releases:
            releases, self._budget_releases = self._budget_releases, []
            try:
                self._budget.exchange(releases, [], 0.0)
            except BudgetUnavailable as exc:  # (given at a later exchange; the ttl takes them back meanwhile)
                self._budget_releases[:0] = releases
                self.budget_unavailable = str(exc)

    def _run_after(self, hs: HostState, head: Lease, limit: float, room: int) -> list[Lease]:
        """The leases that follow ``head`` in its host's run (core/runs.py): as many queued URLs as the host's
        delay fits before ``limit`` (within ``run_length`` and ``room``), each after the one before, while its
        robots.txt stays fresh. Taken from the queue; the caller counts them."""
        robots = hs.robots
        # (an operator's set-delay replaces the host's delay: its runs keep it too)
        gap = hs.delay_override
        if gap is None:
            gap = base_gap(self.settings.policy, robots.crawl_delay if robots is not None else None)
        size = min(run_size(self.settings.run_length, gap, max(0.0, limit - head.not_before)) - 1, room)
        if size <= 0 or robots is None or robots.expires_at <= limit + gap * size:
            return []
        run: list[Lease] = []
        before, not_before, expires_at = head.lease_id, head.not_before, head.expires_at
        queue = hs.queue
        while len(run) < size:
            if hs.stored and queue.size < self._bench_size // 2:  # (as _schedule does after each lease)
                self._refill([hs])
            if not queue:
                break
            entry = queue.pop()
            lease = Lease(before + 1, self.shard_id, entry.kind, not_before, expires_at, entry, before, gap)
            run.append(lease)
            before = lease.lease_id
        return run

    def _rank_due(self, limit: float) -> None:
        """Every host due by ``limit`` joins the ranking (by its best URL), with its token."""
        ready, ranked = self._ready, self._ranked
        while ready:
            due, token, hs = ready[0]
            if due > limit and hs.heap_token == token:
                break
            heapq.heappop(ready)
            if hs.heap_token == token:
                heapq.heappush(ranked, (hs.queue.best, due, token, hs))

    def best_waiting(self, horizon: float = 0.0) -> float | None:
        """With priorities: the best key of a host due (by ``horizon``) that no lease took; the coordinator gives
        spare capacity to the shard with the best one. None by depth, or when no host waits."""
        if not self._rank_hosts:
            return None
        self._rank_due(self._clock() + horizon)
        top = self._ranked_top()
        return top[0] if top else None

    def due_backlog(self, horizon: float, cap: int) -> int:
        """Hosts due by ``horizon`` that no lease took (the round's quota ran out first), counted up to ``cap``:
        what more fetch tasks would fetch now (core/demand.py). Costs O(what it counts), not O(hosts)."""
        limit = self._clock() + horizon
        if self._rank_hosts:
            self._rank_due(limit)
            return _count_live(self._ranked, None, cap)  # (every ranked host is due)
        return _count_live(self._ready, limit, cap)

    def _ranked_top(self) -> tuple[float, float, int, HostState] | None:
        """The ranking's first live entry (stale ones above it are dropped), or None."""
        ranked = self._ranked
        while ranked and ranked[0][3].heap_token != ranked[0][2]:
            heapq.heappop(ranked)
        return ranked[0] if ranked else None

    # --- ack / release / expire ----------------------------------------------------------------------

    def ack(self, acks: Sequence[Ack]) -> AckReply:
        reply = AckReply()
        now = self._clock()
        if self._budget_tokens:
            self._budget_done((a.lease_id, a.ended_at or a.responded_at or now) for a in acks)
        s = self.settings
        touched: dict[str, HostState] = {}
        for ack in acks:
            held = self._leases.pop(ack.lease_id, None)
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
            entry = lease.entry
            was_paused = hs.paused
            hs.on_page_answer(ack, s.policy, s.pause_after, self._rng)
            if hs.paused is not None and was_paused is None:
                self.counters["hosts_paused"] += 1
                self._paused.add(hs.key)
            if ack.transient and entry.attempts + 1 < s.max_attempts:
                self._requeue(hs, entry)
                reply.retried.append(ack.lease_id)
            elif ack.error is not None or ack.transient:
                hs.errors += 1
            else:
                hs.fetched += 1
            if ack.accepted:
                hs.accepted += 1
                if s.max_accepted_per_host is not None and hs.accepted >= s.max_accepted_per_host:
                    self._accepted_enough(hs)
        self._schedule_all(touched)
        return reply

    def _over_budget(self, hs: HostState, entry: UrlEntry, budget: str) -> None:
        """A URL past one of its host's budgets. A budget is a limit, not a verdict: held (and saved) for a
        --resume with a larger one, or with --leftovers record (or a full hold) ended out_of_budget."""
        if self.settings.hold_over_budget and len(hs.held) < self.settings.max_queue_per_host:
            hs.held.append(entry)
            self._held += 1
            self.counters["held_host_budget"] += 1
            return
        self.counters["rejected_host_budget"] += 1
        self._end(entry, "out_of_budget", budget)

    def _accepted_enough(self, hs: HostState) -> None:
        """The host gave max_accepted_per_host accepted pages: the rest of its queue goes past the budget."""
        for entry in self._take_queue(hs):
            self._over_budget(hs, entry, ACCEPTED_BUDGET)

    def _requeue(self, hs: HostState, entry: UrlEntry) -> None:
        self._enqueue(hs, dataclasses.replace(entry, attempts=entry.attempts + 1))
        self.counters["retries"] += 1

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
        failed = ack.error is not None  # (a transport failure, a cut body, a failed hop: RFC 9309 "unreachable")
        rules = rules_from_fetch(ack.status, ack.body, s.ua_token, now, s.robots_ttl, failed, ack.truncated)
        self.counters["robots_fetched"] += 1
        if rules.unreachable:
            hs.robots_failures += 1
            permanent = ack.error is not None and not ack.transient  # e.g. a blocked address: no retry helps
            why = ack.error or f"status {ack.status}"  # (a transport failure says more than the status it cut)
            if permanent or hs.robots_failures >= s.max_attempts:
                self.counters["robots_given_up"] += 1
                self._close(hs, "error", f"robots.txt unreachable ({why})")
                return
            retry_at = answered + backoff(s.policy, hs.robots_failures, self._rng)
            if ack.retry_at is not None:
                retry_at = min(max(ack.retry_at, answered), answered + s.policy.max_retry_after)
            hs.robots = RobotsRules("unreachable", ack.status, fetched_at=now, expires_at=retry_at)
            return
        hs.robots_failures = 0
        hs.robots = rules
        if rules.crawl_delay is not None and rules.crawl_delay > s.policy.max_crawl_delay:
            self.counters["crawl_delay_over_cap"] += 1
            if s.crawl_delay_policy == "skip":
                cap = s.policy.max_crawl_delay
                self._close(hs, "robots_denied", f"Crawl-delay {rules.crawl_delay:g} s exceeds the {cap:g} s cap")
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
        denied = hs.queue.remove_if(lambda entry: not rules.allows(entry.request_url))
        for entry in denied:
            self._end(entry, "robots_denied", "disallowed by robots.txt")
        self.counters["robots_denied"] += len(denied)
        self._queued -= len(denied)

    def _end_queue(self, hs: HostState, outcome: Outcome, detail: str) -> None:
        for entry in self._take_queue(hs):
            self._end(entry, outcome, detail)

    def _take_queue(self, hs: HostState) -> list[UrlEntry]:
        """Every URL queued for the host, its workbench's and those in the store, taken out of the queue."""
        entries = hs.queue.clear()
        if hs.stored:
            entries += self._bench.take(hs, hs.stored)  # type: ignore[union-attr]  # (stored: a store)
        self._queued -= len(entries)
        return entries

    def release(self, lease_ids: Iterable[int], reason: str = "fetch task failed") -> None:
        """Return leases whose task died. The request may have been sent, so the host's clock advances. A run's
        lease whose predecessor is returned too was never sent (each waits for the answer before it): its URL is
        queued again without spending an attempt (else a run of 8 cost 8 attempts a death, the crawl's whole budget
        of them in a few)."""
        now = self._clock()
        lease_ids = list(lease_ids)
        if self._budget_tokens:
            self._budget_done((lease_id, now) for lease_id in lease_ids)
        unanswered = {lease_id for lease_id in lease_ids if lease_id in self._leases}
        touched: dict[str, HostState] = {}
        for lease_id in lease_ids:
            held = self._leases.pop(lease_id, None)
            if held is None:
                continue
            lease, hs = held
            hs.in_flight -= 1
            hs.clock_on_answer(now)
            hs.block(now + backoff(self.settings.policy, 1, self._rng), "backoff")
            touched[hs.key] = hs
            self.counters["released"] += 1
            if lease.kind == "robots":
                hs.robots_leased = False
            elif lease.after and lease.after in unanswered:  # (never sent: as a run's unsent lease)
                self.counters["released_unsent"] += 1
                self._enqueue(hs, lease.entry)
            elif lease.attempts + 1 < self.settings.max_attempts:
                self._requeue(hs, lease.entry)
            else:
                hs.errors += 1
                self._end(lease.entry, "error", reason)
        self._schedule_all(touched)

    def give_back(self, lease_ids: Iterable[int]) -> None:
        """Leases of a run that were never sent (core/runs.py): their URLs are queued again as they were (no
        attempt spent), and their host's clock stays where the answer that ended the run put it."""
        touched: dict[str, HostState] = {}
        for lease_id in lease_ids:
            held = self._leases.pop(lease_id, None)
            if held is None:
                continue  # (expired meanwhile: released already)
            lease, hs = held
            hs.in_flight -= 1
            touched[hs.key] = hs
            self.counters["given_back"] += 1
            if lease.kind == "robots":  # (runs never hold one; asked again, as after a release)
                hs.robots_leased = False
            elif hs.closed is not None:  # (closed meanwhile: its URLs end with it)
                self._end(lease.entry, *hs.closed)
            else:
                self._enqueue(hs, lease.entry)
        self._schedule_all(touched)

    def expire(self, now: float | None = None) -> None:
        now = self._clock() if now is None else now
        if now < self._expiry_check_at:
            return  # (called on every lease: a scan of all leases each time would cost more than the leasing)
        expired: list[int] = []
        next_check = float("inf")  # the earliest expiry among the leases that stay
        for lease_id, (lease, _) in self._leases.items():
            expires_at = lease.expires_at
            if expires_at <= now:
                expired.append(lease_id)
            elif expires_at < next_check:
                next_check = expires_at
        self._expiry_check_at = next_check
        if expired:
            self.counters["lease_expiries"] += len(expired)
            self.release(expired, "lease expired")

    def evict_idle(self) -> int:
        """Forget hosts with nothing left to remember: no URL queued or leased, robots.txt expired, no pause, no
        verdict, no page budget to keep, and a clock that no longer holds anything back. A crawl of millions of
        hosts keeps in memory only the ones it is working on. A host seen again starts anew (robots.txt first).
        Runs at most every ``EVICT_EVERY`` seconds: it scans every host of the shard."""
        now = self._clock()
        if now < self._next_eviction:
            return 0
        self._next_eviction = now + EVICT_EVERY
        budget = self.settings.max_pages_per_host is not None or self.settings.max_accepted_per_host is not None
        idle = [
            key
            for key, hs in self._hosts.items()
            if not hs.queue
            and not hs.stored
            and hs.in_flight == 0
            and not hs.robots_leased
            and hs.paused is None
            and hs.closed is None
            and not budget
            and (hs.robots is None or hs.robots.expires_at <= now)
            and hs.due() <= now
        ]
        for key in idle:
            self._hosts.pop(key).heap_token = 0  # (a stale ready-heap entry of it stays stale)
        self.counters["hosts_evicted"] += len(idle)
        return len(idle)

    def drain(self, detail: str) -> None:
        """End everything queued as out_of_budget; a paused host's URLs say why it was paused. Revisits (recorded
        once already) go back to the schedule, due as they were."""
        for hs in self._hosts.values():
            self._end_queue(hs, "out_of_budget", f"host paused: {hs.paused}" if hs.paused else detail)
            hs.heap_token = 0
        self._ready, self._ranked = [], []
        revisits = [t.entry for t in self._terminals if due_of(t.entry)]
        if revisits:
            self._terminals = [t for t in self._terminals if not due_of(t.entry)]
            self._due.add(revisits)

    # --- operator controls ---------------------------------------------------------------------------

    def pause_host(self, host: str, reason: str = "paused by operator") -> bool:
        hs = self._hosts.get(host)
        if hs is None:
            return False
        hs.paused = reason
        self._paused.add(host)
        self._schedule(hs)
        return True

    def resume_host(self, host: str) -> bool:
        hs = self._hosts.get(host)
        if hs is None:
            return False
        hs.paused, hs.denial_streak = None, 0
        self._paused.discard(host)
        self._schedule(hs)
        return True

    def set_delay(self, host: str, seconds: float | None) -> bool:
        hs = self._hosts.get(host)
        if hs is None:
            return False
        hs.delay_override = seconds
        hs.recompute_delay(self.settings.policy)
        self._schedule(hs)
        return True

    # --- checkpoints ---------------------------------------------------------------------------------

    def snapshot(self, stored_rows: bool = True) -> dict[str, Any]:
        """Everything this shard knows, as plain data. Leased URLs are saved as queued: after a restore nobody
        holds their lease, so they must be fetched again (docs/architecture.md, invariant 4). The URLs in the queue
        store are in it as rows, or (``stored_rows=False``) only counted per host: the store is saved by its log
        (adapters/queue_segments.py) and replayed before ``restore``."""
        if self._bench is not None:
            # First: a store that refuses the pending lines (a full disk) puts them back in their workbenches,
            # where the hosts' saved queues below take them (saved before, they were counted as stored and were
            # in neither the rows nor the log: lost, and a resume waited for ever for rows that were not there).
            self._bench.flush()
        leased: dict[str, list[UrlEntry]] = {}
        for lease, hs in self._leases.values():
            if lease.kind != "robots":
                leased.setdefault(hs.key, []).append(lease.entry)
        # (leased URLs first: they were taken from the queue's head, and go back there)
        hosts = [hs.saved([*leased.get(hs.key, []), *hs.queue]) for hs in self._hosts.values()]  # (held inside)
        snapshot: dict[str, Any] = {
            "shard": self.shard_id,
            "next_lease_id": self._next_lease_id,
            "counters": dict(self.counters),
            "hosts": hosts,
            "due": self._due.saved(),
        }
        if self._bench is not None and stored_rows:  # the URLs past the workbenches: (host, score, block)
            snapshot["stored"] = [[host, key, row.decode()] for host, key, row in self._bench.stored_rows()]
        return snapshot

    def restore(self, snapshot: dict[str, Any]) -> None:
        """Load a snapshot into this (new, empty) shard."""
        self._next_lease_id = int(snapshot["next_lease_id"])
        self.counters.update(snapshot["counters"])
        restored: list[HostState] = []
        for saved in snapshot["hosts"]:
            hs, queue = HostState.from_saved(saved, self.settings.policy, self.settings.ua_token)
            # What happened after the checkpoint is unknown (a killed crawl may have just hit this host):
            # count a request as made right now.
            hs.clock_on_answer(self._clock())
            self._hosts[hs.key] = hs
            if hs.paused is not None:
                self._paused.add(hs.key)
            for entry in queue:
                self._enqueue(hs, entry)
            if "stored" not in snapshot and saved.get("stored") and self._bench is not None:
                hs.stored += saved["stored"]  # (the store holds them: replayed from its log)
                self._bench.stored += saved["stored"]
                best = self._bench.store.best(hs.key)
                hs.stored_best = min(hs.stored_best, float("inf") if best is None else best)
                self._queued += saved["stored"]
            restored.append(hs)
        self._restore_stored(snapshot.get("stored", []))
        if "due" in snapshot:
            self._due.restore(snapshot["due"])
        for hs in restored:
            held, hs.held = hs.held, []
            self._schedule(hs)
            self.push(held)  # under this run's budget: a larger one admits them, the rest are held again

    def _restore_stored(self, stored: list[list[Any]]) -> None:
        """A snapshot's stored URLs into this shard's store as they were (or into memory, without a store)."""
        for host, key, text in stored:
            if host == DUE_HOST:  # (the schedule's rows: core/due_queue.py)
                self._due.add_rows((float(key), line) for line in text.split("\n"))
                continue
            hs = self._hosts.get(host)
            if hs is None or self._bench is None:
                for line in text.split("\n"):
                    entry = decode(line)
                    self._enqueue(hs or self._host(entry.url), entry)
                continue
            self._bench.add_stored(hs, float(key), text.encode())
            self._queued += text.count("\n") + 1
        if self._bench is not None:
            self._bench.flush()

    # --- visibility ----------------------------------------------------------------------------------

    def host_table(self) -> list[dict[str, Any]]:
        now = self._clock()
        return [hs.row(now) for hs in self._hosts.values()]

    def summary(self) -> dict[str, int]:
        now = self._clock()
        due = self.next_due()
        ready = sum(1 for d, tok, hs in self._ready if hs.heap_token == tok and d <= now)
        ready += sum(1 for _, d, tok, hs in self._ranked if hs.heap_token == tok and d <= now)
        # Waiting: URLs queued, but not now (the politeness clock, a block, robots.txt, an answer pending).
        active = sum(1 for hs in self._hosts.values() if hs.queued and hs.paused is None and hs.closed is None)
        stored = self._bench.stored if self._bench is not None else 0
        return {
            "queued": self._queued,
            "queued_in_memory": self._queued - stored,
            "queued_on_disk": stored,
            "queued_in_memory_peak": self._in_memory_peak if self._bench is not None else self._queued,
            "queued_on_disk_peak": self._on_disk_peak,
            "held_over_budget": self._held,
            "queued_paused": self.queued_paused,
            "leased": len(self._leases),
            "hosts": len(self._hosts),
            "hosts_ready": ready,
            "hosts_waiting": active - ready,
            "hosts_paused_now": len(self._paused),
            "next_due_in_ms": -1 if due is None else int(max(0.0, due - now) * 1000),
            **self.schedule_summary(now),
        }

    def schedule_summary(self, now: float) -> dict[str, int]:
        """A continuous crawl's schedule: revisits waiting, due within the hour, and how overdue its first is."""
        first = self._due.best()
        return {
            "scheduled": self._due.count,
            "due_within_hour": self._due.due_within(now, 3600.0),
            "schedule_overdue_ms": int(max(0.0, now - first) * 1000) if first is not None else 0,
        }


def _count_live(heap: list[Any], limit: float | None, cap: int) -> int:
    """Live entries (token matching their host's) of a heap, counted up to ``cap``; with ``limit``, of the heap of
    hosts by due time, only those due by it: a walk down from the root that stops at entries due later (their
    children are too)."""
    count, stack, visits = 0, [0], 0
    size = len(heap)
    while stack and count < cap and visits < 4 * cap:
        i = stack.pop()
        if i >= size:
            continue
        entry = heap[i]
        visits += 1
        if limit is not None and entry[0] > limit:
            continue
        if entry[-1].heap_token == entry[-2]:
            count += 1
        stack += (2 * i + 1, 2 * i + 2)
    return count
