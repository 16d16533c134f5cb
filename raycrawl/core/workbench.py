"""Where a host's queued URL waits: in memory, in the host's workbench (its ``HostQueue``: the next ``size`` URLs by
score), or in the shard's queue store (core/queue_store.py; on disk in a crawl: adapters/lmdb_queue.py).

The rule that keeps the order exact: a host's workbench holds a prefix of its queue -- no stored URL scores better
than one in the workbench, and among equal scores the workbench's came first. So a URL goes to the store when it
scores no better than the host's best stored one (behind it, as the newest), or when the workbench is full and it
scores no better than the workbench's worst; otherwise it enters the workbench, and a full workbench puts its worst
back in front of the store. The workbench is refilled from the store when it falls below half, when the frontier
schedules the host (after an ack, not while it leases): per host, only the stored count and best score stay in
memory.

Stored rows are blocks: the URLs of one host and score that one call of the frontier stored, up to half a workbench
each, one line per URL. A store's cost is per row (a key, a B+tree entry, a transaction's share), so a URL costs
little more than its line; a refill takes one block. Writes are gathered and made in one transaction per call of
the frontier (``flush``). A store with no room left (``QueueStoreFull``) loses nothing: what it refused stays in
memory and ``full`` says why, for the crawl to stop cleanly with a checkpoint.
"""

from __future__ import annotations

from collections.abc import Iterator

from raycrawl.core.entry_lines import decode, decode_block, encode, lines_of
from raycrawl.core.hosts import HostState
from raycrawl.core.queue_store import QueueItem, QueueStore, QueueStoreFull
from raycrawl.core.records import UrlEntry

INFINITY = float("inf")
_Pending = dict[tuple[str, float], list[str]]  # (host, score) -> lines, in take order
__all__ = ["Workbench", "decode", "decode_block", "encode"]


class Workbench:
    def __init__(self, store: QueueStore, size: int) -> None:
        if size < 2:
            raise ValueError(f"a workbench holds at least 2 URLs per host, not {size}")
        self.store = store
        self.size = size
        self.low = size // 2  # refilled below this, one block at a time: a block holds at most this many
        self.full: str | None = None  # why the store refused a write (None: it never did)
        self._appends: _Pending = {}
        self._put_backs: _Pending = {}  # (lines in eviction order: newest first)
        self._spilled: dict[str, HostState] = {}  # hosts with writes pending

    def add(self, hs: HostState, key: float, entry: UrlEntry) -> None:
        queue = hs.queue
        if hs.stored and key >= hs.stored_best:
            self._store(hs, key, encode(entry), self._appends)
        elif queue.size < self.size:
            queue.push(key, entry)
        elif key >= queue.worst:  # (the newcomer would be the one to leave a full workbench)
            self._store(hs, key, encode(entry), self._appends)
        else:
            queue.push(key, entry)
            worst = queue.worst
            self._store(hs, worst, encode(queue.pop_worst()), self._put_backs)

    def add_stored(self, hs: HostState, key: float, block: bytes) -> None:
        """A block as a checkpoint saved it, behind the host's stored URLs (nothing enters the workbench)."""
        for line in lines_of(block):
            self._store(hs, key, line, self._appends)

    def _store(self, hs: HostState, key: float, line: str, pending: _Pending) -> None:
        lines = pending.get((hs.key, key))
        if lines is None:
            pending[hs.key, key] = [line]
        else:
            lines.append(line)
        hs.stored += 1
        if key < hs.stored_best:
            hs.stored_best = key
        self._spilled[hs.key] = hs

    def _blocks(self, pending: _Pending, front: bool) -> list[QueueItem]:
        """Pending lines as blocks in the order the store's call takes them (put-backs: each block goes in front of
        the ones before it, so the last block given is taken first)."""
        items: list[QueueItem] = []
        step = self.low
        for (host, key), lines in pending.items():
            if front:
                lines.reverse()  # (evicted newest first: taken oldest first)
                chunks = [lines[i : i + step] for i in range(0, len(lines), step)]
                items.extend((host, key, "\n".join(chunk).encode()) for chunk in reversed(chunks))
            else:
                items.extend((host, key, "\n".join(lines[i : i + step]).encode()) for i in range(0, len(lines), step))
        return items

    def flush(self) -> None:
        """Make the pending writes; what the store refuses goes back to its workbench (over the bound)."""
        if not self._spilled:
            return
        put_backs, appends = self._blocks(self._put_backs, True), self._blocks(self._appends, False)
        spilled = self._spilled
        self._appends, self._put_backs, self._spilled = {}, {}, {}
        for items, write in ((put_backs, self.store.put_back), (appends, self.store.push)):
            try:
                write(items)
            except QueueStoreFull as exc:
                self.full = str(exc)
                for host, key, block in items:
                    hs = spilled[host]
                    for line in lines_of(block):
                        hs.queue.push(key, decode(line))
                        hs.stored -= 1
                    best = self.store.best(host) if hs.stored else None
                    hs.stored_best = INFINITY if best is None else best

    def take(self, hs: HostState, n: int) -> list[UrlEntry]:
        """The host's best stored URLs, out of the store: whole blocks, until ``n`` or more, or all there are."""
        entries: list[UrlEntry] = []
        while hs.stored and len(entries) < n:
            entries += self.refill([hs], max(1, (n - len(entries)) // self.low))[hs.key]
        return entries

    def refill(self, hosts: list[HostState], blocks: int = 1) -> dict[str, list[UrlEntry]]:
        """The next ``blocks`` stored blocks of each host (each up to ``low`` URLs: one tops up a workbench below
        ``low``), out of the store in one call."""
        self.flush()
        wanted = {hs.key: blocks for hs in hosts if hs.stored}
        if not wanted:
            return {hs.key: [] for hs in hosts}
        try:
            taken = self.store.take_each(wanted)
        except QueueStoreFull as exc:  # (nothing taken: the URLs stay stored, for after the stop)
            self.full = str(exc)
            return {hs.key: [] for hs in hosts}
        out: dict[str, list[UrlEntry]] = {}
        for hs in hosts:
            rows, best = taken.get(hs.key, ((), None))
            entries = out[hs.key] = [entry for block in rows for entry in decode_block(block)]
            hs.stored -= len(entries)
            hs.stored_best = INFINITY if best is None else best
        return out

    def stored_rows(self) -> Iterator[QueueItem]:
        """Every stored block, as its host, score and lines (for a checkpoint)."""
        self.flush()
        return self.store.items()
