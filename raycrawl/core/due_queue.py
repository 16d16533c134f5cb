"""A shard's schedule of revisits: URLs fetched already, waiting for their due time (core/revisit_schedule.py).

They wait in the shard's queue store (core/queue_store.py), on its node's disk in a crawl, under a host name no
URL has (``DUE_HOST``: a netloc never holds a space) ordered by due time: a months-long crawl's schedule is bounded
by the disk, not by memory, and a checkpoint copies it with the rest of the store, by its log. Without a store (a
frontier kept in memory, ``--workbench 0``) they wait in a store of their own in memory, saved in the snapshot.

Each row is one URL (core/entry_lines.py): its ``Known`` carries its due time and the interval that set it. In
memory stays only a count per minute of due time, for "how many are due within the hour" (bounded by the longest
interval: 43,200 minutes for 30 days). A store with no room left (``QueueStoreFull``) loses nothing: what it refused
is held in memory (and saved with the shard), and ``full`` says why, for the crawl to stop cleanly.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from raycrawl.core.entry_lines import decode, encode
from raycrawl.core.queue_store import MemoryQueueStore, QueueItem, QueueStore, QueueStoreFull
from raycrawl.core.records import UrlEntry

DUE_HOST = " due"  # (a netloc never holds a space: no host's rows are these)
FIRST_TAKE = 32  # rows taken at a time, doubled while all of them are due


def due_of(entry: UrlEntry) -> float:
    known = entry.known
    return known.due if known is not None and known.due is not None else 0.0


class DueQueue:
    def __init__(self, store: QueueStore | None) -> None:
        self.private = store is None  # its own store in memory: its rows go in the snapshot
        self.store: QueueStore = store if store is not None else MemoryQueueStore()
        self.count = 0
        self._minutes: Counter[int] = Counter()  # due minute -> URLs
        self._held: list[UrlEntry] = []  # what a full store refused (due order), until a restart with room
        self.full: str | None = None  # why the store refused URLs (None: it never did)

    def add(self, entries: Iterable[UrlEntry]) -> None:
        """Schedule URLs (each ``known.due`` says when)."""
        added = list(entries)
        for entry in added:
            self._minutes[int(due_of(entry) // 60)] += 1
        self.count += len(added)
        rows: list[QueueItem] = [(DUE_HOST, due_of(e), encode(e).encode()) for e in added]
        if rows and not self._held:
            try:
                self.store.push(rows)
                return
            except QueueStoreFull as exc:  # (nothing of that push was stored)
                self.full = str(exc)
        self._held = sorted([*self._held, *added], key=due_of)

    def best(self) -> float | None:
        """The earliest due time (None: nothing scheduled)."""
        if not self.count:
            return None
        stored = self.store.best(DUE_HOST)
        if self._held and (stored is None or due_of(self._held[0]) < stored):
            return due_of(self._held[0])
        return stored

    def take_due(self, until: float, limit: int) -> list[UrlEntry]:
        """Up to ``limit`` URLs due by ``until``, earliest first, out of the schedule."""
        out: list[UrlEntry] = []
        mixed = bool(self._held)
        while self._held and due_of(self._held[0]) <= until and len(out) < limit:
            entry = self._held.pop(0)
            self._forget(due_of(entry))
            self.count -= 1
            out.append(entry)
        step = FIRST_TAKE
        while self.count > len(self._held) and len(out) < limit:
            best = self.store.best(DUE_HOST)
            if best is None or best > until:
                break
            rows, _ = self.store.take(DUE_HOST, min(step, limit - len(out)))
            entries = [decode(row.decode()) for row in rows]
            due = [e for e in entries if due_of(e) <= until]
            later = entries[len(due) :]  # (rows come earliest first: the rest are all later)
            if later:
                self.store.put_back([(DUE_HOST, due_of(e), encode(e).encode()) for e in reversed(later)])
            for entry in due:
                self._forget(due_of(entry))
            self.count -= len(due)
            out += due
            if later:
                break
            step *= 2
        if mixed:  # (held ones came first: in due order with the stored ones)
            out.sort(key=due_of)
        return out

    def due_within(self, now: float, seconds: float) -> int:
        """URLs due by ``now + seconds`` (overdue ones included)."""
        last = int((now + seconds) // 60)
        return sum(n for minute, n in self._minutes.items() if minute <= last)

    def _forget(self, due: float) -> None:
        minute = int(due // 60)
        left = self._minutes[minute] - 1
        if left > 0:
            self._minutes[minute] = left
        else:
            self._minutes.pop(minute, None)

    # --- checkpoints ---------------------------------------------------------------------------------

    def saved(self) -> dict[str, Any]:
        """The counts, and the rows when they are not in a store a log saves."""
        out: dict[str, Any] = {"count": self.count, "minutes": [[m, n] for m, n in self._minutes.items()]}
        if self.private:
            out["rows"] = [[order, row.decode()] for _, order, row in self.store.items()]
        if self._held:
            out["held"] = [encode(entry) for entry in self._held]
        return out

    def restore(self, saved: dict[str, Any]) -> None:
        """A saved schedule: its rows, or (replayed into the store already) their count."""
        if "rows" in saved:
            self.add_rows((float(order), line) for order, line in saved["rows"])
        else:
            self.count = self.store.count(DUE_HOST)
            self._minutes = Counter({int(m): int(n) for m, n in saved.get("minutes", [])})
            for line in saved.get("held", []):  # (counted in the minutes already: add() counts them again)
                self._forget(due_of(decode(line)))
        self.add(decode(line) for line in saved.get("held", []))

    def add_rows(self, rows: Iterable[tuple[float, str]]) -> None:
        """Rows as a snapshot kept them (their due, their line)."""
        self.add(decode(line) for _, line in rows)
