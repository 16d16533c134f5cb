"""Whether a URL pushed to a shard joins its host's queue: a closed host ends it with its verdict, robots.txt may
forbid it, a sitemap counts against its host's bound, a page against its host's budgets (held past them for a
resume with a larger one, or ended), and a full queue sheds its lowest-scored URL (or the newcomer).

What is shed or refused is counted (docs/architecture.md, invariant 5) and ends as a terminal record (invariant 2).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

from raycrawl.core.frontier_settings import ACCEPTED_BUDGET, HOST_BUDGET, SITEMAP_BOUND, FrontierSettings
from raycrawl.core.hosts import HostState
from raycrawl.core.records import UrlEntry
from raycrawl.core.robots_lifecycle import DENIED, denies
from raycrawl.core.shard_queues import EndFn, ScoreFn, ShardQueues
from raycrawl.core.urls import host_key

HOST_QUEUE_FULL = "per-host queue full"


class Admission:
    def __init__(
        self, settings: FrontierSettings, queues: ShardQueues, score: ScoreFn, end: EndFn, counters: Counter[str]
    ) -> None:
        self.settings = settings
        self.queues = queues
        self.score: Callable[[UrlEntry], float] = score
        self.end = end
        self.counters = counters
        self._budgets = settings.max_pages_per_host is not None or settings.max_accepted_per_host is not None
        # (read for every URL: held here rather than looked up through settings each time)
        self._per_host, self._total, self._add = (
            settings.max_queue_per_host,
            settings.max_queue_total,
            queues.add_within,
        )

    def admit(
        self,
        entries: Iterable[UrlEntry],
        hosts: dict[str, HostState],
        meet: Callable[[str], HostState],
        revisits: bool,
    ) -> dict[str, HostState]:
        """Queue each URL for its host (``hosts``, or ``meet``: a host met now), or end (or hold) it; returns the
        hosts whose queues changed. (Runs for every URL pushed: what it reads is held in locals, and a plain page
        of an open host, with no budget to count, is told apart without a call.)"""
        touched: dict[str, HostState] = {}
        budgets, per_host, total, add, score = self._budgets, self._per_host, self._total, self._add, self.score
        for entry in entries:
            hs = hosts.get(host_key(entry.url)) or meet(entry.url)
            robots = hs.robots
            if (
                hs.closed is not None
                or entry.kind != "page"
                or (budgets and not revisits)
                or (robots is not None and robots.verdict == "parsed" and not robots.allows(entry.request_url))
            ) and self._turned_away(hs, entry, revisits):
                continue
            if hs.queue.size + hs.stored >= per_host:
                if self._shed(hs, entry):
                    touched[hs.key] = hs
                continue
            if not add(hs, entry, score(entry), total):
                self.counters["shed_frontier_full"] += 1
                self.end(entry, "out_of_budget", "frontier full")
                continue
            if entry.kind == "page" and not revisits:  # (a sitemap is not a page: the budget does not count it)
                hs.admitted += 1
            touched[hs.key] = hs
        return touched

    def _shed(self, hs: HostState, entry: UrlEntry) -> bool:
        """The host's queue is full: the lowest-scored URL makes room (a full queue sheds from its end, not the
        newcomer), or the newcomer goes; True: it took the newcomer."""
        self.counters["shed_host_queue"] += 1
        key = self.score(entry)
        if hs.stored or key >= hs.queue.worst:  # (a stored queue's worst is on disk: the newcomer goes)
            self.end(entry, "out_of_budget", HOST_QUEUE_FULL)
            return False
        self.end(self.queues.replace_worst(hs, entry, key), "out_of_budget", HOST_QUEUE_FULL)
        return True

    def _turned_away(self, hs: HostState, entry: UrlEntry, revisits: bool) -> bool:
        """The URL ends (or is held past a budget) before its host's queue: the host closed, robots.txt forbids it,
        a bound or budget of its host is reached. A sitemap counts against its own bound; a revisit was admitted
        once already."""
        s = self.settings
        if hs.closed is not None:
            self.end(entry, hs.closed[0], hs.closed[1])
        elif denies(hs.robots, entry):
            self.counters["robots_denied"] += 1
            self.end(entry, "robots_denied", DENIED)
        elif entry.kind == "sitemap":
            if hs.sitemaps >= s.max_sitemaps_per_host:
                self.counters["sitemaps_over_bound"] += 1
                self.end(entry, "out_of_budget", SITEMAP_BOUND)
                return True
            hs.sitemaps += 1
            hs.clock_sitemaps_came()  # (what the pages waited for is here: the host's own clock again)
            return False
        elif revisits:
            return False
        elif s.max_pages_per_host is not None and hs.admitted >= s.max_pages_per_host:
            self.over_budget(hs, entry, HOST_BUDGET)
        elif s.max_accepted_per_host is not None and hs.accepted >= s.max_accepted_per_host:
            self.over_budget(hs, entry, ACCEPTED_BUDGET)
        else:
            return False
        return True

    def over_budget(self, hs: HostState, entry: UrlEntry, budget: str) -> None:
        """A URL past one of its host's budgets. A budget is a limit, not a verdict: held (and saved) for a
        --resume with a larger one, or with --leftovers record (or a full hold) ended out_of_budget."""
        if self.settings.hold_over_budget and self.queues.hold(hs, entry, self.settings.max_queue_per_host):
            self.counters["held_host_budget"] += 1
            return
        self.counters["rejected_host_budget"] += 1
        self.end(entry, "out_of_budget", budget)

    def accepted_enough(self, hs: HostState) -> None:
        """The host gave max_accepted_per_host accepted pages: the rest of its queue goes past the budget."""
        for entry in self.queues.take_all(hs):
            self.over_budget(hs, entry, ACCEPTED_BUDGET)
