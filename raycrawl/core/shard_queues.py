"""A shard's queued URLs, and their count: each host's queue in memory (its workbench when a queue store holds the
rest: core/workbench.py), the store, the URLs held past their host's budget, and the schedule of revisits not yet
due (core/due_queue.py).

``ShardQueues`` alone moves the shard's queued count: every URL in goes through ``add`` (or a restore's counted
rows), every URL out through ``pop``, ``pop_run``, ``take_all``, ``take_where``, ``remove_if`` or a refill that
ends it. The count is what says when a crawl is done: three losses of the past were this number and the queues
disagreeing (docs/architecture.md, invariant 2).
"""

from __future__ import annotations

import dataclasses
import sys
from collections import Counter
from collections.abc import Callable, Iterator

from raycrawl.core.due_queue import DueQueue
from raycrawl.core.hosts import HostState
from raycrawl.core.queue_store import QueueItem, QueueStore
from raycrawl.core.records import Outcome, UrlEntry
from raycrawl.core.robots_lifecycle import DENIED, denies
from raycrawl.core.workbench import Workbench, decode

ScoreFn = Callable[[UrlEntry], float]
EndFn = Callable[[UrlEntry, Outcome, str], None]  # a URL's terminal record: the shard's


class ShardQueues:
    def __init__(
        self, store: QueueStore | None, workbench: int, score: ScoreFn, end: EndFn, counters: Counter[str]
    ) -> None:
        # With a store, a host's queue in memory is its workbench (core/workbench.py); without, it holds everything.
        self.bench = Workbench(store, workbench) if store is not None else None
        self.bench_size = workbench if store is not None else sys.maxsize
        self.due = DueQueue(store)  # revisits waiting for their time (a continuous crawl's: core/due_queue.py)
        self._score = score
        self._end = end
        self.counters = counters
        self._queued = 0
        self._held = 0  # URLs past their host's page budget, held for a resume with a larger one
        self._in_memory_peak = 0  # the most queued URLs the workbenches held at once (seen at leases)
        self._on_disk_peak = 0  # ... and the store

    @property
    def count(self) -> int:
        return self._queued

    @property
    def held(self) -> int:
        return self._held

    @property
    def stored(self) -> int:
        return self.bench.stored if self.bench is not None else 0

    @property
    def full(self) -> str | None:
        """Why the queue store refused URLs (they wait in memory), or None."""
        return (self.bench.full if self.bench is not None else None) or self.due.full

    def peaks(self) -> tuple[int, int]:
        """The most URLs the workbenches held at once, and the store (without a store: the count now, and 0)."""
        if self.bench is None:
            return self._queued, 0
        return self._in_memory_peak, self._on_disk_peak

    # --- in ------------------------------------------------------------------------------------------

    def add(self, hs: HostState, entry: UrlEntry) -> None:
        """Queue the URL for its host, whatever is queued already (a retry, a URL given back, a restore's)."""
        self.add_within(hs, entry, self._score(entry), sys.maxsize)

    def add_within(self, hs: HostState, entry: UrlEntry, key: float, bound: int) -> bool:
        """Queue the URL for its host under the score ``key``, unless ``bound`` URLs are queued in memory already (a
        store's disk is its own bound); False: not queued."""
        if hs.queue.size < self.bench_size and not hs.stored:
            if self._queued >= bound and self.bench is None:
                return False
            hs.queue.push(key, entry)
        else:
            self.bench.add(hs, key, entry)  # type: ignore[union-attr]  # (a bound below maxsize: a store)
        self._queued += 1
        return True

    def requeue(self, hs: HostState, entry: UrlEntry) -> None:
        """A URL whose fetch failed, queued again with one attempt more (``max_attempts`` bounds them)."""
        self.add(hs, dataclasses.replace(entry, attempts=entry.attempts + 1))
        self.counters["retries"] += 1

    def replace_worst(self, hs: HostState, entry: UrlEntry, key: float) -> UrlEntry:
        """A full in-memory queue takes ``entry`` in place of its lowest-scored URL, which it returns."""
        worst = hs.queue.pop_worst()
        hs.queue.push(key, entry)
        return worst

    def hold(self, hs: HostState, entry: UrlEntry, bound: int) -> bool:
        """Keep a URL past its host's budget for a resume with a larger one (False: ``bound`` are held already)."""
        if len(hs.held) >= bound:
            return False
        hs.held.append(entry)
        self._held += 1
        return True

    def take_held(self, hs: HostState) -> list[UrlEntry]:
        """A restored host's held URLs, to be pushed again under this run's budget."""
        held, hs.held = hs.held, []
        return held

    def count_stored(self, hs: HostState, n: int) -> None:
        """A restored host's ``n`` URLs that its store holds already (replayed from the store's log)."""
        bench = self.bench
        assert bench is not None
        bench.count_stored(hs, n)
        self._queued += n

    def add_stored(self, hs: HostState, key: float, text: str) -> None:
        """A checkpoint's stored block (one line per URL) into the store as it was."""
        assert self.bench is not None
        self.bench.add_stored(hs, key, text.encode())
        self._queued += text.count("\n") + 1

    # --- out -----------------------------------------------------------------------------------------

    def pop(self, hs: HostState) -> UrlEntry:
        self._queued -= 1
        return hs.queue.pop()

    def pop_run(self, hs: HostState, size: int) -> list[UrlEntry]:
        """Up to ``size`` next URLs of the host, its workbench topped up from the store as they go."""
        queue = hs.queue
        if not hs.stored:  # (all in memory: no refill between them)
            out = [queue.pop() for _ in range(min(size, queue.size))]
        else:
            out = []
            while len(out) < size:
                self.top_up(hs)
                if not queue:
                    break
                out.append(queue.pop())
        self._queued -= len(out)
        return out

    def take_all(self, hs: HostState) -> list[UrlEntry]:
        """Every URL queued for the host, its workbench's and those in the store."""
        entries = hs.queue.clear()
        if hs.stored:
            entries += self.bench.take(hs, hs.stored)  # type: ignore[union-attr]  # (stored: a store)
        self._queued -= len(entries)
        return entries

    def remove_if(self, hs: HostState, unwanted: Callable[[UrlEntry], bool]) -> list[UrlEntry]:
        """The URLs in the host's workbench that ``unwanted`` selects, taken out."""
        removed = hs.queue.remove_if(unwanted)
        self._queued -= len(removed)
        return removed

    def take_where(self, hs: HostState, wanted: Callable[[UrlEntry], bool]) -> list[UrlEntry]:
        """The host's URLs that ``wanted`` selects, stored ones included, taken out in queue order; the stored ones
        it leaves go back through the workbench's rule (core/workbench.py) in their order."""
        stored = self.bench.take(hs, hs.stored) if self.bench is not None and hs.stored else []
        self._queued -= len(stored)
        for entry in stored:
            if not wanted(entry):
                self.add(hs, entry)
        return [*self.remove_if(hs, wanted), *(entry for entry in stored if wanted(entry))]

    # --- the store -----------------------------------------------------------------------------------

    def top_up(self, hs: HostState) -> None:
        """A workbench below half refilled from the store (after a lease most were refilled in a batch)."""
        if hs.stored and hs.queue.size < self.bench_size // 2:
            self.refill([hs])

    def flush(self, touched: list[HostState] | None = None) -> None:
        """Pending writes made (with ``touched``: whole blocks only, and those hosts' workbenches topped up)."""
        if self.bench is None:
            return
        if touched is None:
            self.bench.flush()
            return
        self.bench.flush(whole_blocks=True)
        self.refill(touched)

    def refill(self, hosts: list[HostState]) -> None:
        """Workbenches below half topped up from the store, one block each, in one call; URLs robots.txt forbids
        (rules that came after they were stored) end here."""
        bench = self.bench
        if bench is None:
            return
        low = [hs for hs in hosts if hs.stored and hs.queue.size < bench.low]
        while low:
            missing = bench.missing
            refilled = bench.refill(low)
            if bench.missing > missing:
                self._queued -= bench.missing - missing
                self.counters["stored_missing"] += bench.missing - missing
            again: list[HostState] = []
            for hs in low:
                entries = refilled[hs.key]
                for entry in entries:
                    if denies(hs.robots, entry):
                        self._queued -= 1
                        self.counters["robots_denied"] += 1
                        self._end(entry, "robots_denied", DENIED)
                    else:
                        hs.queue.push(self._score(entry), entry)
                # A block robots.txt forbade entirely leaves the workbench empty with URLs still stored: the next
                # block now, or the host is never scheduled again (not queued in memory) and the crawl never ends.
                if entries and hs.stored and not hs.queue:
                    again.append(hs)
            low = again

    def note_peaks(self) -> None:
        if self.bench is not None:  # (what the workbenches hold -- bounded by hosts -- and what the store does)
            self._in_memory_peak = max(self._in_memory_peak, self._queued - self.bench.stored)
            self._on_disk_peak = max(self._on_disk_peak, self.bench.stored)

    def stored_rows(self) -> Iterator[QueueItem]:
        assert self.bench is not None
        return self.bench.stored_rows()


__all__ = ["ShardQueues", "decode"]
