"""Everything a frontier shard does, without Ray: the shard actor is a shell that makes this class's calls.

A shard owns its hosts (``FrontierShard``: queues, politeness clocks, robots.txt) and, now that no page passes
through the coordinator, the work that follows from its URLs:

- ``lease``: the round's leases and the ``ShardSummary`` the coordinator schedules by; leases are remembered by
  the batch they went out in, so a fetch task that dies hands back exactly its own (``release_batches``);
- ``settle``: results straight from the fetch task -- acked (the host's clock moves at once), then records
  (to the shard's page buffer), WARC spans kept, and the links they add, screened (traps, scope) and kept until
  the round's ``take_shares`` splits them by seen-set partition for the actor to ask;
- ``answered`` / ``receive``: the partitions' answers become new URLs for their hosts' owners; URLs from other
  shards are queued here;
- ``take_output``: at a checkpoint cut, the WARC spans and nodes of this interval, for the coordinator's cut.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from raycrawl.core.crawl_loop import ShardSummary
from raycrawl.core.demand import BACKLOG_CAP
from raycrawl.core.frontier import FrontierShard
from raycrawl.core.frontier_settings import FrontierSettings
from raycrawl.core.host_budget import BudgetClient
from raycrawl.core.lease_batches import NO_CHAIN, ChainAllowance, LeaseBatches
from raycrawl.core.link_routing import Handover, LinkRouter, PartitionShare
from raycrawl.core.outlinks import Candidates, screen
from raycrawl.core.parts import WarcLedger
from raycrawl.core.priority import Priority, Warn
from raycrawl.core.proxy_routes import ProxyPlan, ProxyRouter
from raycrawl.core.queue_store import QueueStore
from raycrawl.core.records import FetchResult, Known, Lease, Link, UrlEntry, WarcSpan, ack_of
from raycrawl.core.recrawl import known_of
from raycrawl.core.revisit_schedule import RevisitPolicy, change_of, scheduled_again
from raycrawl.core.scope import ScopeKind, ScopePolicy
from raycrawl.core.settle import RecordRules, Settled, settle, terminal_records
from raycrawl.core.sitemap_hints import SitemapHint, changefreq_of, score_bonus
from raycrawl.core.stats import CrawlStats
from raycrawl.core.traps import TrapRules
from raycrawl.core.urls import host_key, hostname

RecordSink = Callable[[list[dict[str, Any]]], None]
FIRST_HINTS_BOUND = 1_000_000  # sitemap hints kept per shard for pages' first intervals (~200 B each)
# URLs the seen-set has answered for through this shard, new or not, kept to know a link found again as a duplicate
# at once: asked again, the seen-set would say "not new" (without --seen-ttl its marks never expire, a rebuilt
# partition has them all, and a rollback makes new shards). Most links a page has are on other pages too (4 of 5 in
# the test web's): each skips screening, a fingerprint, its seen-set question and its answer. Bounded (~150 B a
# URL); once full it starts again, and what a page links to most comes back first.
ANSWERED_BOUND = 100_000


@dataclass(frozen=True, slots=True)
class ShardSetup:
    """What every shard of a crawl is made with (``actors/settings.py`` makes it from the crawl's config)."""

    frontier: FrontierSettings
    records: RecordRules
    traps: TrapRules
    scope: ScopeKind
    seeds: tuple[str, ...]
    allow: tuple[str, ...]
    deny: tuple[str, ...]
    shards: int
    partitions: int
    out: str = ""  # the output location (the actor writes its page parts there)
    filesystem: Any = None
    crawl_id: str = "crawl"
    priority: Priority = field(default_factory=Priority)  # the URLs' scores (core/priority.py)
    frontier_dir: str = ""  # where the shard's queue store goes on its node (""): the system's temporary directory)
    revisit: RevisitPolicy = field(default_factory=RevisitPolicy)  # a continuous crawl's (core/revisit_schedule.py)
    seen_ttl: float | None = None  # the seen-set's marks expire after this (core/seen_expiry.py); None: never
    shared_politeness: str | None = None  # a per-host budget shared with other crawls: "cluster" or a redis:// URL
    proxies: ProxyPlan = field(default_factory=ProxyPlan)  # which proxy carries which host (no credentials)


@dataclass(slots=True)
class ShardOutput:
    """This interval's WARC, for the checkpoint cut: spans of results that became output, and the nodes that
    wrote any (their buffers are cleaned even if nothing of theirs is kept)."""

    spans: list[WarcSpan] = field(default_factory=list)
    nodes: set[str] = field(default_factory=set)


class ShardWork:
    def __init__(
        self,
        shard_id: int,
        setup: ShardSetup,
        records: RecordSink,
        clock: Callable[[], float] = time.time,
        store: QueueStore | None = None,
        budget: BudgetClient | None = None,
        warn: Warn | None = None,
    ) -> None:
        """``warn``: how the operator's score function's failures are said (by default, not at all)."""
        self.shard_id = shard_id
        self.setup = setup
        self.frontier = FrontierShard(shard_id, setup.frontier, setup.priority.frontier_key(warn), clock, store, budget)
        self._budget = budget
        self.router = LinkRouter(shard_id, setup.shards, setup.partitions)
        self.scope = ScopePolicy(setup.scope, setup.seeds, setup.allow, setup.deny)
        self.proxies = ProxyRouter(setup.proxies, clock) if setup.proxies.used else None
        self._records = records
        self._clock = clock
        self._stats = CrawlStats(started_at=0.0)  # counted since the coordinator last asked
        self._since_cut = CrawlStats(started_at=0.0)  # what those answers carried since the last checkpoint
        self.last_round_at = 0.0  # when the coordinator last asked (a new one after a restart: how long it was away)
        self._ledger = WarcLedger()
        self._output = ShardOutput()
        self._batches = LeaseBatches(setup.frontier.run_length)  # which task each lease is with, and chaining
        self._horizon = 0.0  # the coordinator's lease horizon, as of its last call (chained leases reach as far)
        self._candidates: Candidates = {}  # links found since the last round, not asked about yet
        self._answered: set[str] | None = set() if setup.seen_ttl is None else None  # (ANSWERED_BOUND)
        self._known: dict[str, Known] = {}  # what an earlier crawl learned of some of them (a recrawl's seeds)
        self._latencies: list[float] = []  # of the results settled since the coordinator last asked (a metric)
        # What sitemaps said of pages on their way through the seen-set (given to the entries they become)
        self._hints: dict[str, SitemapHint] = {}
        # A continuous crawl's: what sitemaps said of pages not fetched yet, for their first interval (bounded;
        # not saved: after a restore a page's first interval is --revisit-after)
        self._first_hints: dict[str, SitemapHint] = {}

    # --- the coordinator's round ---------------------------------------------------------------------

    def lease(
        self,
        quota: int,
        horizon: float,
        drain: str | None,
        batch_id: int,
        finished: Sequence[int] = (),
        chain: ChainAllowance = NO_CHAIN,
    ) -> tuple[list[Lease], ShardSummary]:
        """``chain``: what this shard may hand to settling tasks until the next call (core/lease_batches.py)."""
        shard = self.frontier
        self.last_round_at = self._clock()
        self._horizon = horizon
        # (a politeness budget shared with other crawls: every request needs the registry's slot, asked per round)
        self._batches.grant(chain if self._budget is None else NO_CHAIN)
        for done in finished:  # (tasks that ended: their leases are all settled or released)
            self._batches.pop(done)
        shard.evict_idle()
        if drain is not None:
            shard.drain(drain)
        self._end_terminals()
        leases = shard.lease(quota, horizon) if quota > 0 else []
        came_due = shard.take_came_due()
        if came_due and self.setup.seen_ttl is not None:
            # Renewed again as it comes due, not only when it was scheduled: a URL that waits past its due time --
            # a crawl resumed after a stop, a slow start, a backlog -- keeps its mark until it is fetched, so a link
            # to it found meanwhile does not queue it a second time (core/seen_expiry.py).
            self.router.touch(came_due)
        if quota <= 0:
            shard.settle_budget()  # (slots shared with other crawls go back even while this one leases nothing)
        if leases:
            self._batches.add(batch_id, [lease.lease_id for lease in leases])
            self._choose_proxies(leases)
        summary = ShardSummary(
            leases=len(leases),
            earliest=min((lease.not_before for lease in leases), default=None),
            queued=shard.queued,
            queued_paused=shard.queued_paused,
            leased=shard.leased,
            held=self.router.held,
            next_due=shard.next_due(),
            sent=list(self.router.sent),
            received=list(self.router.received),
            buffered=self._ledger.largest,
            dead_partitions=self.router.held_partitions(),
            stats=self._stats,
            latencies=self._latencies,
            best_waiting=shard.best_waiting(horizon),
            store_full=shard.store_full,
            budget_unavailable=shard.budget_unavailable,
            # (a round that leased less than its quota left no due host unleased: the walk only when it ran out)
            due_backlog=shard.due_backlog(horizon, BACKLOG_CAP) if len(leases) >= quota else 0,
        )
        if shard.scheduled:
            schedule = shard.schedule_summary(self._clock())
            summary.scheduled, summary.due_within_hour = schedule["scheduled"], schedule["due_within_hour"]
            summary.schedule_overdue = schedule["schedule_overdue_ms"] / 1000
        self._since_cut.add(self._stats)
        self._stats, self._latencies = CrawlStats(started_at=0.0), []
        return leases, summary

    def take_over(self, reason: str, running: Collection[int] = ()) -> tuple[int, CrawlStats, float]:
        """A new coordinator (the last one died): every lease out goes back but those of the batches of fetch tasks
        still ``running`` (the launcher's: the new coordinator waits for them) -- the others died -- and what this
        shard counted for the crawl since the last checkpoint is told again. (Leases taken back, counts, when the
        last coordinator last asked.)"""
        leased = self.frontier.leased
        self.release_batches([b for b in self._batches if b not in running], reason)
        return leased - self.frontier.leased, self._since_cut, self.last_round_at

    def checkpointed(self) -> None:
        """A checkpoint committed: it holds what the partitions took as new, and the crawl's counters, so far."""
        self.router.checkpointed()
        self._since_cut = CrawlStats(started_at=0.0)

    def release_batches(self, batch_ids: Iterable[int], reason: str) -> None:
        """A fetch task died: the leases of its batches not settled yet go back (their hosts back off)."""
        for batch_id in batch_ids:
            self.frontier.release(self._batches.pop(batch_id), reason)
        self._end_terminals()

    def _choose_proxies(self, leases: list[Lease]) -> None:
        if self.proxies is not None:
            for lease in leases:  # (a run's leases all go through the proxy its host has now)
                lease.proxy = self.proxies.choose(hostname(host_key(lease.entry.url)))

    def _chain(self, settled: list[int], chain: bool) -> list[Lease]:
        """The leases the settling task earned with ``settled`` (core/lease_batches.py): hosts due by the horizon,
        as a round would lease them, added to the batch that earned them. None when the task asks for none."""
        quotas = self._batches.settled(settled, self._clock())
        if not chain or not quotas:
            return []
        out: list[Lease] = []
        for batch, quota in quotas.items():
            leases = self.frontier.lease(quota, self._horizon)
            if not leases:
                break  # (no host due: none for the other batches either)
            self._batches.chained(batch, [lease.lease_id for lease in leases])
            self._choose_proxies(leases)
            out += leases
        self._stats.events["leases_chained"] += len(out)
        return out

    # --- results, straight from the fetch task -------------------------------------------------------

    def settle(self, results: list[FetchResult], chain: bool = True) -> list[Lease]:
        """Ack the results, record the ones that count, and keep their links for the next ``take_shares``. A run's
        leases that were not sent go back to their queues (core/runs.py). Returns the leases chained to the task
        (``chain``: it takes them; core/lease_batches.py)."""
        settled = [r.lease.lease_id for r in results]
        if self.proxies is not None:
            results = self._reroute(results)
        if any(r.unsent for r in results):
            unsent = [r.lease.lease_id for r in results if r.unsent]
            self.frontier.give_back(unsent)
            self._stats.events["run_given_back"] += len(unsent)
            results = [r for r in results if not r.unsent]
        reply = self.frontier.ack([ack_of(r) for r in results])
        out = Settled()
        settle(results, reply, self.setup.records, self._stats, out, self._clock())
        self._ledger.keep(out.kept)
        for node in out.seen_nodes:
            self._ledger.saw(node)
        self._output.spans.extend(out.kept)
        self._output.nodes.update(out.seen_nodes)
        if self.setup.revisit.revisit:  # (before the records are written: each says when its page is due again)
            self._schedule_again(out.visits)
        self._records(out.records)
        self._end_terminals()  # (a robots.txt answer may have ended URLs queued for its host)
        self._latencies.extend(out.latencies)
        for result in results:
            if result.hints:
                self._take_hints(result.hints)
        self.offer(out.links)
        return self._chain(settled, chain)

    def _reroute(self, results: list[FetchResult]) -> list[FetchResult]:
        """What each answer says of its proxy; a request that failed at the proxy (not reached, credentials refused)
        goes back to its queue as never sent -- the target did not see it, so neither its attempts nor its host's
        clock move -- while its pool has another proxy to try."""
        assert self.proxies is not None
        kept: list[FetchResult] = []
        back: list[int] = []
        for r in results:
            host = hostname(host_key(r.lease.entry.url))
            outcome = self.proxies.report(host, r.lease.proxy, r.status, r.error) if not r.unsent else None
            if outcome is not None and outcome != "ok":
                self._stats.events[f"proxy_{outcome}"] += 1
                if outcome != "banned" and self.proxies.can_retry_elsewhere(host):
                    back.append(r.lease.lease_id)
                    continue
            kept.append(r)
        if back:
            self.frontier.give_back(back)
            self._stats.events["proxy_retried_elsewhere"] += len(back)
        return kept

    def _schedule_again(self, visits: list[tuple[FetchResult, dict[str, Any]]]) -> None:
        """A continuous crawl: each page kept is due again after its interval (core/revisit_schedule.py), asked
        for conditionally then, with what this visit learned; how late a revisit was sent is counted."""
        policy, now = self.setup.revisit, self._clock()
        again: list[tuple[UrlEntry, bool | None]] = []
        for result, record in visits:
            entry = result.lease.entry
            before = entry.known
            if before is not None and before.due is not None and result.sent_at:
                self._stats.revisit_lag = max(self._stats.revisit_lag, result.sent_at - before.due)
            if not scheduled_again(record["outcome"], record["status"], result.lease.kind):
                continue
            change = change_of(record["outcome"], before is not None and before.sha256 is not None)
            answered = result.ended_at or result.responded_at or now
            if change == "first" and self._first_hints:  # (seeded by what its sitemap said)
                hint = self._first_hints.pop(entry.url, None)
                lastmod = hint[0] if hint is not None else None
                unchanged_for = answered - lastmod if lastmod is not None else None
                interval = policy.first(entry.url, changefreq_of(hint) if hint else None, unchanged_for)
            else:
                interval = policy.next(entry.url, before.interval if before is not None else None, change)
            known = dataclasses.replace(known_of(record), interval=interval, due=answered + interval)
            record["revisit_in_s"] = round(interval, 3)
            revisit = UrlEntry(entry.url, entry.depth, entry.parent, 0, entry.redirects, entry.requested, "page", known)
            again.append((revisit, None if change == "first" else change == "changed"))
        if again:
            self.frontier.schedule(again)
            if self.setup.seen_ttl is not None:  # (on the schedule: never new again through a link)
                self.router.touch(entry.url for entry, _ in again)

    def _take_hints(self, hints: dict[str, SitemapHint]) -> None:
        """A sitemap's hints for this shard's pages: the queued ones take them now, the rest when the seen-set
        says they are new (core/sitemap_hints.py)."""
        router = self.router
        mine = {url: hint for url, hint in hints.items() if router.owner(url) == self.shard_id}
        if mine:
            self.frontier.apply_hints(mine)
            self._hints.update(mine)
            if self.setup.revisit.revisit and len(self._first_hints) < FIRST_HINTS_BOUND:
                self._first_hints.update((u, h) for u, h in mine.items() if h[0] is not None or changefreq_of(h))

    def offer(self, links: list[Link], known: dict[str, Known] | None = None) -> None:
        """Candidate links (outlinks, or seeds), screened by trap rules and scope; the first found of each URL
        is kept until the next ``take_shares``, with what ``known`` says of it (a recrawl's seeds)."""
        found = self._candidates
        if self._answered:
            links = self._unanswered(links, self._answered)
        for url, info in screen(links, self.setup.traps, self.scope, self._stats.dropped).items():
            if url not in found:
                found[url] = info
                if known and url in known:
                    self._known[url] = known[url]

    def _unanswered(self, links: list[Link], answered: set[str]) -> list[Link]:
        """The links the seen-set has not answered for here yet; the others are counted as the duplicates they are."""
        fresh = [link for link in links if link[0] not in answered]
        if len(fresh) < len(links):
            self._stats.events["duplicate_links"] += len(links) - len(fresh)
            if self._hints:  # (what a sitemap said of a page already answered for: applied when it was queued)
                for link in links:
                    if link[0] in answered:
                        self._hints.pop(link[0], None)
        return fresh

    def take_shares(self) -> dict[int, PartitionShare]:
        """The links found since the last call, split by seen-set partition: the actor asks each partition once
        per coordinator round (one call per round instead of one per settled batch: a Ray call costs more than
        the links it carries)."""
        found, self._candidates = self._candidates, {}
        known, self._known = self._known, {}
        return self.router.split(found, known)

    def answered(self, partition: int, share: PartitionShare, answer: bytes) -> dict[int, list[UrlEntry]]:
        """A partition's answer: the new URLs by owner shard (this one's already queued here)."""
        new = self.router.answered(partition, share, answer)
        self._stats.events["duplicate_links"] += len(share.entries) - len(new)
        if self._answered is not None:
            if len(self._answered) > ANSWERED_BOUND:
                self._answered = set()
            self._answered.update(entry.url for entry in share.entries)
        if self._hints:
            hints, now = self._hints, self._clock()
            for entry in new:
                hint = hints.get(entry.url)
                if hint is not None:
                    entry.hint = score_bonus(hint, now)
            for entry in share.entries:  # (answered: new ones carry their hint, the others had it applied)
                hints.pop(entry.url, None)
        by_owner = self.router.by_owner(new)
        mine = by_owner.pop(self.shard_id, None)
        if mine is not None:
            self.receive(mine, self.shard_id)
        return by_owner

    def receive(self, entries: list[UrlEntry], sender: int, incarnation: int = 0) -> None:
        """New URLs for this shard's hosts from ``sender`` (of its ``incarnation``: a batch a lost shard sent
        before it died, come after its successor took over, is dropped -- the successor finds them again)."""
        if not self.router.got(sender, entries, incarnation):
            self._stats.events["batches_of_a_lost_shard_dropped"] += 1
            return
        self.frontier.push(entries)
        self._end_terminals()

    # --- a lost shard ----------------------------------------------------------------------------------

    def hand_over(self, lost: int, incarnation: int) -> Handover:
        """Shard ``lost`` is rebuilt (core/link_routing.py ``hand_over``)."""
        return self.router.hand_over(lost, incarnation)

    def succeed(self, handovers: Sequence[Handover], marks: Mapping[int, Sequence[int]], incarnation: int) -> None:
        """This shard, restored from the last checkpoint, takes a lost one's place: the URLs the others sent it
        since are queued again, and what it took as new since is found again (core/link_routing.py ``succeed``)."""
        self.router.succeed(handovers, marks, incarnation)
        for handover in handovers:
            self.frontier.push(handover.sent)
        self._end_terminals()

    def restored(self) -> None:
        """Restored from a checkpoint, as the seen-set was: what it answered here since is to be asked again."""
        if self._answered is not None:
            self._answered = set()

    def retry(self, entries: list[UrlEntry]) -> None:
        """Dead letters (URLs that ended in error), crawled again: they are in the seen-set already."""
        self.frontier.retry(entries)
        self._end_terminals()

    def requeue(self, entries: list[UrlEntry]) -> None:
        """URLs the seen-set has already taken (a checkpoint's pending pushes, from before shards routed links)."""
        self.frontier.push(entries)
        self._end_terminals()

    def _end_terminals(self) -> None:
        terminals = self.frontier.take_terminals()
        if terminals:
            self._records(terminal_records(terminals, self._clock(), self._stats, self.setup.records))
        found = self.frontier.take_discovered()  # (robots.txt answers name sitemaps)
        if found:
            self.offer(found)

    # --- checkpoints ---------------------------------------------------------------------------------

    def take_output(self) -> ShardOutput:
        out, self._output = self._output, ShardOutput()
        self._ledger.clear()
        return out

    def proxy_health(self) -> list[dict[str, Any]]:
        """Each proxy as this shard's hosts found it (core/proxy_routes.py ``merge_health`` adds up the shards)."""
        return self.proxies.health() if self.proxies is not None else []

    def counts(self) -> dict[str, int]:
        return dict(self.frontier.counters) | self.frontier.summary()
