"""The coordinator's decisions, as a pure class (injected clock, no Ray): the crawl loop without its I/O.

The coordinator schedules and never touches a page. Each round it asks every shard for leases (a quota each,
from the crawl's fetch capacity) and gets back, besides the leases themselves (which stay in Ray's object store
and go from the shard to the fetch task as a reference), a ``ShardSummary``: how many leases, when the first is
due, the shard's counts, and the counters of the crawl's work that the shard did since the last round. Fetch
tasks send their results to the shards that leased the URLs, and shards send the new URLs they find to the
shards that own them (``core/link_routing.py``); none of it passes here.

What this class decides:

- a round's plan: which quota for which shard, whether the crawl is draining (a budget ran out with
  ``leftovers = "record"``) or quiescing (a checkpoint is due, or the operator stopped);
- which staged lease batches to launch as fetch tasks, and when: a task carries many shards' batches, and is
  launched when full or when its first URL is due;
- what a fetch task that died leaves behind: its batches, whose leases go back to their shards;
- when the crawl is at rest -- no task running or staged, no link held or travelling between shards -- so that a
  checkpoint is a consistent cut, and when it is over: at rest, and nothing queued or leased anywhere;
- when the next round must start at the latest.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from raycrawl.core.batching import split_quota
from raycrawl.core.demand import fetch_demand
from raycrawl.core.lease_batches import NO_CHAIN, ChainAllowance
from raycrawl.core.link_routing import all_delivered
from raycrawl.core.rollover import period_label, period_of
from raycrawl.core.round_timing import RoundNeeds, round_window
from raycrawl.core.stats import CrawlStats

LAUNCH_SLACK = 0.05  # launch a partly filled task this long before its first URL is due
# Leases due now that fill no task are shared among the free task slots, and tasks chain only once as many run as
# the leases out are worth, in shares of at least this many: one task holding them all kept one worker's CPU busy
# while the other idled (the unthrottled crawl: 5.0 s against 1.3 s of CPU; benchmarks/README.md, issue 51). ~300
# no-delay leases keep a worker busy here; a share much smaller is not worth another task and its settle calls.
MIN_SHARE = 128


def shares(leases: int, slots: int) -> int:
    """The tasks ``leases`` are worth in shares of at least MIN_SHARE, in at most ``slots`` (0: under one share)."""
    return min(slots, leases // MIN_SHARE)


LAG_WINDOW = 60.0  # seconds over which the freshness lag counts how late revisits were sent


@dataclass(slots=True)
class ShardSummary:
    """A shard's answer to the round's lease call (with it, its lease batch: ``StagedBatch.packed``)."""

    leases: int = 0  # in this call's batch
    earliest: float | None = None  # the batch's first not_before
    queued: int = 0
    queued_paused: int = 0
    leased: int = 0  # leases out (staged, in a task, or not yet acked)
    held: int = 0  # links waiting for a seen-set partition to be rebuilt
    next_due: float | None = None
    sent: list[int] = field(default_factory=list)  # batches of new URLs sent to each shard
    received: list[int] = field(default_factory=list)  # ... received from each
    buffered: int = 0  # bytes of output buffered since the last cut (the largest buffer)
    dead_partitions: list[int] = field(default_factory=list)  # seen-set partitions that did not answer it
    stats: CrawlStats = field(default_factory=lambda: CrawlStats(started_at=0.0))  # counted since the last call
    latencies: list[float] = field(default_factory=list)  # seconds to the response, of pages settled since then
    best_waiting: float | None = None  # with priorities: the best key of a host due but not leased (lower: better)
    store_full: str | None = None  # why the shard's queue store refused URLs (a full disk): the crawl stops
    budget_unavailable: str | None = None  # why the shared politeness budget did not answer: its hosts wait
    due_backlog: int = 0  # hosts due within the horizon that no lease took (core/demand.py)
    # A continuous crawl's schedule (core/due_queue.py): revisits waiting for their time, those due within the hour,
    # and how long ago the first of them was due (0: none is overdue)
    scheduled: int = 0
    due_within_hour: int = 0
    schedule_overdue: float = 0.0


@dataclass(frozen=True, slots=True)
class LoopSettings:
    """What the loop's decisions depend on (the crawl's settings of these names: config/ takes these defaults)."""

    max_tasks_in_flight: int = 64  # a ceiling: tasks launch as demand and the cluster's CPUs allow (core/demand.py)
    # (a fetch task costs a process's Ray calls whatever it carries; and the leases out are at most this many a task
    # slot: 512 a CPU, so that a no-delay host whose run ended has room for its next -- benchmarks/README.md, issue 51)
    fetch_batch_size: int = 512
    lease_horizon: float = 0.3  # seconds ahead a lease may reach: a host due that soon is leased now
    checkpoint_interval: float = 30.0
    max_part_bytes: int = 1 << 30  # a cut is forced when this much output waits in buffers
    max_pages: int | None = None
    max_accepted: int | None = None  # pages whose items were accepted (issue 47)
    extracting: bool = False  # the crawl has an extractor (its status says what was accepted)
    time_limit: float | None = None
    leftovers: Literal["keep", "record"] = "keep"
    rollover: float | None = None  # output by period (core/rollover.py): a cut as each period ends


@dataclass(slots=True)
class StagedBatch:
    shard: int
    batch_id: int
    leases: int
    earliest: float
    packed: object = None  # the leases, as the caller keeps them (for the coordinator: bytes, actors/wire.py)


@dataclass(slots=True)
class RoundPlan:
    quotas: list[int]  # per shard
    batch_ids: list[int]  # per shard: the id its leases of this round are known by
    drain: str | None  # end everything queued with this detail
    quiescing: bool
    chains: list[ChainAllowance] = field(default_factory=list)  # per shard: what it may chain until the next round


class CrawlLoop:
    def __init__(self, cfg: LoopSettings, shards: int, clock: Callable[[], float] = time.time) -> None:
        self.cfg = cfg
        self.shards = shards
        self._clock = clock
        self.stats = CrawlStats(started_at=clock())
        self.summaries: list[ShardSummary | None] = [None] * shards
        # What each shard counted since the last committed checkpoint (a shard lost is rebuilt from that checkpoint:
        # its counts since are taken back, and its pages counted again when they are fetched again)
        self.since_cut = [CrawlStats(started_at=0.0) for _ in range(shards)]
        self.staged: list[StagedBatch] = []
        self.tasks: dict[Hashable, list[StagedBatch]] = {}
        self._next_batch = 1
        self.rounds = 0
        self._closed_since = 0  # leases of tasks that ended since the last summaries
        self._rotation = 0
        self.stop_reason: str | None = None  # a budget ran out and leftovers are recorded: queued ends out_of_budget
        self.user_stop: str | None = None  # the operator stopped (or a budget, leftovers kept): checkpoint, end
        self.disk_full: str | None = None  # a shard's queue store refused URLs: stopped as by the operator
        self.budget_unavailable: str | None = None  # the shared politeness budget did not answer a shard's last round
        self.paused: str | None = None
        self.final_drain: str | None = None
        self.checkpoint_due = False
        self._last_checkpoint = clock()
        self._quiesce_started = 0.0
        self._last_quiesce = 0.0
        self.task_capacity: int | None = None  # tasks the cluster's CPUs hold (the coordinator says; None: no bound)
        self._lags: list[tuple[float, float]] = []  # (when, how late) revisits were sent, over the last LAG_WINDOW
        self._chain_granted = 0  # leases the last round let the shards chain (taken as chained: summaries lag them)
        self._recent_grants = (0, 0)  # what each shard might chain in the last two rounds (a lost one's may be unseen)

    # --- stopping --------------------------------------------------------------------------------------

    def stop(self, reason: str) -> None:
        if self.user_stop is None:
            self.user_stop = reason

    def operator_said(self) -> dict[str, str | None]:
        """The operator's stop and pause, as this loop holds them (kept where a restarted coordinator finds them)."""
        return {"stop": self.user_stop, "paused": self.paused}

    def heed(self, said: Mapping[str, str | None]) -> None:
        """What the operator said to an earlier loop of this crawl (``operator_said``) holds for this one: a
        roll-back makes the loop anew, a restarted coordinator makes its own -- a stop asked just before a loss must
        still end the crawl."""
        self.user_stop = self.user_stop or said.get("stop")
        if "paused" in said:
            self.paused = said["paused"]

    def budget_stop(self, reason: str) -> None:
        """A budget ran out. By default the crawl stops as on the operator's stop (queued URLs stay queued, a
        ``--resume`` with a larger budget goes on); with ``leftovers = "record"`` every queued URL ends as an
        out_of_budget record."""
        if self.cfg.leftovers == "keep":
            self.stop(reason)
        elif self.stop_reason is None:
            self.stop_reason = reason

    def check_limits(self) -> None:
        cfg, now = self.cfg, self._clock()
        if cfg.time_limit is not None and now - self.stats.started_at >= cfg.time_limit:
            self.budget_stop("time limit reached")
        if cfg.max_pages is not None and self.stats.pages_fetched >= cfg.max_pages:
            self.budget_stop("max-pages reached")
        if cfg.max_accepted is not None and self.stats.accepted >= cfg.max_accepted:
            self.budget_stop("max-accepted reached")

    # --- a round ---------------------------------------------------------------------------------------

    def plan(self) -> RoundPlan:
        """The round's calls: every shard is asked, each with its share of the lease budget."""
        self.check_limits()
        self.rounds += 1
        cfg = self.cfg
        now = self._clock()
        interval = cfg.checkpoint_interval
        # Quiesce early by as long as the last quiesce took, so cuts are at most `interval` apart: what a crash
        # can cost is then at most one interval of work. A buffer past the part size: cut now.
        if not self.checkpoint_due and (
            (interval and now - self._last_checkpoint >= interval - self._last_quiesce)
            or self.buffered > cfg.max_part_bytes
            or (cfg.rollover and period_of(now, cfg.rollover) != period_of(self._last_checkpoint, cfg.rollover))
        ):
            self.checkpoint_due = True
            self._quiesce_started = now
        drain = self.stop_reason or self.final_drain
        quiescing = self.checkpoint_due or self.user_stop is not None
        budget = 0 if (drain or quiescing or self.paused) else self.lease_budget()
        # The round's spare capacity goes first to the shards whose waiting host scores best (with priorities).
        waiting = [
            (s.best_waiting, i) for i, s in enumerate(self.summaries) if s is not None and s.best_waiting is not None
        ]
        quotas = split_quota(budget, self.shards, self._rotation, [i for _, i in sorted(waiting)])
        self._rotation += 1
        ids = list(range(self._next_batch, self._next_batch + self.shards))
        self._next_batch += self.shards
        room = self._page_room()  # (less the last round's grant, before it is replaced)
        self._chain_granted = 0
        chain = NO_CHAIN if (drain or quiescing or self.paused) else self._chain_allowance(room, sum(quotas))
        self._recent_grants = (self._recent_grants[1], chain.leases or 0)
        return RoundPlan(quotas, ids, drain, quiescing, [chain] * self.shards)

    def _chain_allowance(self, room: int | None, quotas: int) -> ChainAllowance:
        """What each shard may hand settling tasks until the next round (core/lease_batches.py): none while staged
        batches wait for a task to end (a task that chains runs on), within what the page budgets leave after this
        round's quotas, and never past the time limit. None either while a ranked host waits (``best_waiting``):
        then the round's capacity goes to the best-scored hosts across shards, not to the settling shard's own; nor
        while fewer tasks run than the leases out are worth (``shares``): the running ones would keep them all, and
        the round shares them among free slots (``to_launch``)."""
        running = len(self.tasks)
        if (self.staged and running >= self.task_ceiling) or running < shares(self.leased, self.task_ceiling):
            return NO_CHAIN
        if any(s.best_waiting is not None for s in self.latest):
            return NO_CHAIN
        cfg = self.cfg
        until = self.stats.started_at + cfg.time_limit if cfg.time_limit is not None else None
        # (never more than the tasks hold: a bound, so a lost shard's recovery can say what it may have chained)
        each = self.task_ceiling * cfg.fetch_batch_size
        if room is not None:
            each = min(each, max(0, room - quotas) // self.shards)
            self._chain_granted = each * self.shards
        return ChainAllowance(each, until)

    def _page_room(self) -> int | None:
        """Leases the page budgets still allow (None: no budget): every lease the summaries count is taken as a page
        to come (robots ones make it stricter), and so is every lease the last round let the shards chain (which
        those summaries may not count yet)."""
        cfg, rooms = self.cfg, []
        if cfg.max_pages is not None:
            rooms.append(cfg.max_pages - self.stats.pages_fetched - self.leased)
        if cfg.max_accepted is not None:
            # Exact as --max-pages is: never more pages out than could still be accepted, so no accepted page
            # is ever one too many (a crawl that rejects most pages leases fewer at a time near the end).
            rooms.append(cfg.max_accepted - self.stats.accepted - self.leased)
        return min(rooms) - self._chain_granted if rooms else None

    def lease_budget(self) -> int:
        cfg = self.cfg
        # The fetch capacity: leases out as of the last summaries, less those of tasks that ended since (a task
        # ends only when its results are settled: its leases are closed, and the next summaries say so). A few
        # may be counted twice for a round; the capacity is a target, not a bound (tasks in flight are).
        out = max(0, self.leased - self._closed_since)
        budget = self.task_ceiling * cfg.fetch_batch_size - out
        room = self._page_room()
        if room is not None:
            budget = min(budget, room)
        return max(0, budget)

    def answered(
        self, plan: RoundPlan, summaries: Sequence[ShardSummary | None], batches: Sequence[object]
    ) -> CrawlStats:
        """The round's answers (in shard order; None: a shard that was lost), with each shard's lease batch as the
        caller keeps it; returns what the shards counted since the last round (already added to the crawl's
        counters)."""
        moved = CrawlStats(started_at=0.0)
        self._closed_since = 0
        self.budget_unavailable = next((s.budget_unavailable for s in summaries if s and s.budget_unavailable), None)
        for shard, (summary, packed) in enumerate(zip(summaries, batches, strict=True)):
            if summary is None:
                continue
            self.summaries[shard] = summary
            if summary.store_full is not None and self.disk_full is None:
                # (the URLs it refused wait in the shard's memory: the stop's checkpoint keeps them)
                self.disk_full = f"shard {shard}: {summary.store_full}"
                self.stop(f"disk full ({self.disk_full})")
            moved.add(summary.stats)
            self.since_cut[shard].add(summary.stats)
            summary.stats = CrawlStats(started_at=0.0)
            if summary.leases:
                earliest = summary.earliest if summary.earliest is not None else self._clock()
                self.staged.append(StagedBatch(shard, plan.batch_ids[shard], summary.leases, earliest, packed))
        self.stats.add(moved)
        if moved.revisit_lag > 0:
            self._lags.append((self._clock(), moved.revisit_lag))
        return moved

    # --- fetch tasks -----------------------------------------------------------------------------------

    def to_launch(self) -> list[list[StagedBatch]]:
        """Staged batches cut into fetch tasks worth launching now (none while quiescing: the cut waits only for
        the tasks already running; staged leases are saved as queued). A task holds batches due within the lease
        horizon of its first one; it is launched when full or when its first URL is due within LAUNCH_SLACK (then
        what is due is shared among the free slots: MIN_SHARE); at most ``task_ceiling`` tasks run; if more is due
        than that many full tasks carry, they grow."""
        cfg = self.cfg
        free = self.task_ceiling - len(self.tasks)
        if self.checkpoint_due or self.user_stop is not None or free <= 0 or not self.staged:
            return []
        now = self._clock()
        window = max(LAUNCH_SLACK, cfg.lease_horizon - LAUNCH_SLACK)
        staged = sorted(self.staged, key=lambda b: b.earliest)
        out: list[list[StagedBatch]] = []
        while staged and len(out) < free:
            start = max(now, staged[0].earliest)
            in_window = [b for b in staged if b.earliest <= start + window]
            urls = sum(b.leases for b in in_window)
            slots = free - len(out)
            size = max(cfg.fetch_batch_size, math.ceil(urls / slots))
            if urls < size:
                if staged[0].earliest - now > LAUNCH_SLACK:
                    break  # neither full nor due yet: more batches may join it
                size = math.ceil(urls / max(1, shares(urls, slots)))  # due now: shared among the free slots
            task: list[StagedBatch] = []
            taken = 0
            for batch in in_window:
                if task and taken + batch.leases > size:
                    break
                task.append(batch)
                taken += batch.leases
            out.append(task)
            chosen = {id(b) for b in task}
            staged = [b for b in staged if id(b) not in chosen]
        launched = {id(b) for task in out for b in task}
        self.staged = [b for b in self.staged if id(b) not in launched]
        return out

    def adopt(self, key: Hashable, batches: list[StagedBatch]) -> None:
        """A fetch task launched by a coordinator that died, still running: waited for as this one's own."""
        self.tasks[key] = batches

    def launched(self, key: Hashable, batches: list[StagedBatch]) -> None:
        self.tasks[key] = batches
        self.stats.count_task(sum(b.leases for b in batches))
        self.stats.peak_tasks_in_flight = max(self.stats.peak_tasks_in_flight, len(self.tasks))

    def lost_shards(self, lost: Collection[int]) -> int:
        """Shards that were lost are rebuilt from the last checkpoint: their staged batches go (their leases died
        with them), their counts since that checkpoint are taken back; how many pages may be fetched again (those
        they recorded since, and those leased when last asked)."""
        self.staged = [b for b in self.staged if b.shard not in lost]
        again = 0
        for shard in lost:
            summary, self.summaries[shard] = self.summaries[shard], None
            again += summary.leased if summary is not None else 0
            # (and what it chained since that summary: within the grants of its round and of the one it missed)
            again += sum(self._recent_grants)
            since, self.since_cut[shard] = self.since_cut[shard], CrawlStats(started_at=0.0)
            self.stats.take_back(since)
            again += sum(since.outcomes.values())
        return again

    def cut_committed(self) -> None:
        """A checkpoint committed: it holds every shard's counts so far."""
        self.since_cut = [CrawlStats(started_at=0.0) for _ in range(self.shards)]

    def task_ended(self, key: Hashable) -> list[StagedBatch]:
        """A fetch task ended; its batches (the caller releases their unsettled leases if it failed)."""
        batches = self.tasks.pop(key, [])
        self._closed_since += sum(b.leases for b in batches)
        return batches

    @property
    def task_ceiling(self) -> int:
        """Tasks that may run at once: the operator's ceiling, or fewer when the cluster's CPUs hold fewer."""
        cap = self.cfg.max_tasks_in_flight
        return cap if self.task_capacity is None else min(cap, self.task_capacity)

    def demand(self) -> int:
        """Fetch tasks worth running now, from the last summaries (core/demand.py)."""
        backlog = sum(s.due_backlog for s in self.latest)
        return fetch_demand(self.leased, backlog, self.queued, self.cfg.fetch_batch_size, self.cfg.max_tasks_in_flight)

    # --- the crawl's state ------------------------------------------------------------------------------

    @property
    def latest(self) -> list[ShardSummary]:
        return [s for s in self.summaries if s is not None]

    @property
    def queued(self) -> int:
        return sum(s.queued for s in self.latest)

    @property
    def leased(self) -> int:
        return sum(s.leased for s in self.latest)

    @property
    def scheduled(self) -> int:
        return sum(s.scheduled for s in self.latest)

    def freshness(self) -> dict[str, float | int]:
        """A continuous crawl's freshness: revisits waiting and due within the hour, and the freshness lag -- how
        overdue the most overdue page is: the schedule's first if its time has passed, or the latest a revisit was
        sent in the last minute (one that waited in its host's queue behind the host's delay)."""
        now = self._clock()
        self._lags = [(at, lag) for at, lag in self._lags if at > now - LAG_WINDOW]
        overdue = max((s.schedule_overdue for s in self.latest), default=0.0)
        lag = max([overdue, *(lag for _, lag in self._lags)])
        return {
            "scheduled": self.scheduled,
            "due_within_hour": sum(s.due_within_hour for s in self.latest),
            "freshness_lag_s": round(lag, 3),
        }

    @property
    def buffered(self) -> int:
        return max((s.buffered for s in self.latest), default=0)

    def dead_partitions(self) -> list[int]:
        return sorted({p for s in self.latest for p in s.dead_partitions})

    def at_rest(self) -> bool:
        """No fetch task running, no link held or on its way: what the shards and the seen-set hold is a
        consistent cut (leased URLs are saved as queued). Read from this round's summaries of every shard."""
        latest = self.latest
        if self.tasks or len(latest) < self.shards or any(s.held for s in latest):
            return False
        return all_delivered([s.sent for s in latest], [s.received for s in latest])

    def over(self) -> bool:
        """The crawl is over: at rest, nothing leased or staged, nothing queued but on paused hosts -- and those
        are ended first (one more round drains them, saying why each host was paused)."""
        if self.staged or not self.at_rest() or self.leased or self.scheduled:
            return False  # (a continuous crawl waits for its next revisit: it ends by a limit or a stop)
        active = self.queued - sum(s.queued_paused for s in self.latest)
        if active:
            return False
        if self.queued:
            self.final_drain = "frontier exhausted"
            return False
        return True

    def checkpoint_now(self) -> None:
        """A checkpoint as soon as the crawl is at rest, whatever the interval says (launching stops until then)."""
        if not self.checkpoint_due:
            self.checkpoint_due = True
            self._quiesce_started = self._clock()

    @property
    def last_quiesce(self) -> float:
        """Seconds the last checkpoint waited for the crawl to be at rest: from the stop of leasing to the cut."""
        return self._last_quiesce

    def cut_period(self) -> str | None:
        """With ``rollover``: the period the interval being cut began in (its parts' directory), else None. Asked
        before ``checkpointed``."""
        rollover = self.cfg.rollover
        return period_label(self._last_checkpoint, rollover) if rollover else None

    def checkpointed(self) -> None:
        now = self._clock()
        if self.checkpoint_due:
            self._last_quiesce = min(now - self._quiesce_started, self.cfg.checkpoint_interval / 2)
        self.checkpoint_due = False
        self._last_checkpoint = now

    def wake_at(self, round_started: float) -> tuple[float, float]:
        """(earliest, latest): the next round starts no sooner than the first and no later than the second;
        between them, when a fetch task ends (core/round_timing.py)."""
        dues = [s.next_due for s in self.latest if s.next_due is not None] if self.paused is None else []
        needs = RoundNeeds(
            dues=dues,
            lease_horizon=self.cfg.lease_horizon,
            staged_earliest=min((b.earliest for b in self.staged), default=None),
            launch_slack=LAUNCH_SLACK,
            leased=self.leased > 0,
            # the last round let the shards chain, and every slot has a task: no round is needed to lease or launch
            chains_carry=self._recent_grants[1] > 0 and not self.staged and len(self.tasks) >= self.task_ceiling,
        )
        return round_window(self._clock(), round_started, needs)
