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

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from raycrawl.core.entry_lines import decode, decode_block, encode, lines_of
from raycrawl.core.hosts import HostState
from raycrawl.core.queue_store import QueueItem, QueueStore, QueueStoreFull
from raycrawl.core.records import UrlEntry

INFINITY = float("inf")
PENDING_BOUND = 100_000  # lines held back, in all, to make whole blocks (~10 MB)
__all__ = ["Workbench", "decode", "decode_block", "encode"]


@dataclass(slots=True)
class _Pending:
    """A host's lines on their way to the store, by score, in take order (put-backs: newest first)."""

    hs: HostState
    appends: dict[float, list[str]] = field(default_factory=dict)
    put_backs: dict[float, list[str]] = field(default_factory=dict)


class Workbench:
    def __init__(self, store: QueueStore, size: int, pending_bound: int = PENDING_BOUND) -> None:
        if size < 2:
            raise ValueError(f"a workbench holds at least 2 URLs per host, not {size}")
        self.store = store
        self.size = size
        self.low = size // 2  # refilled below this, one block at a time: a block holds at most this many
        self.full: str | None = None  # why the store refused a write (None: it never did)
        self.stored = 0  # URLs of all hosts in the store (or on their way to it)
        self.missing = 0  # URLs counted as stored that the store did not have (never, unless a checkpoint is bad)
        self._pending: dict[str, _Pending] = {}
        self._whole: set[str] = set()  # hosts with a whole block of appends pending, or a put-back
        self._pending_lines = 0
        self._pending_bound = pending_bound

    def add(self, hs: HostState, key: float, entry: UrlEntry) -> None:
        queue = hs.queue
        if hs.stored and key >= hs.stored_best:
            self._store(hs, key, encode(entry), front=False)
        elif queue.size < self.size:
            queue.push(key, entry)
        elif key >= queue.worst:  # (the newcomer would be the one to leave a full workbench)
            self._store(hs, key, encode(entry), front=False)
        else:
            queue.push(key, entry)
            worst = queue.worst
            self._store(hs, worst, encode(queue.pop_worst()), front=True)

    def add_stored(self, hs: HostState, key: float, block: bytes) -> None:
        """A block as a checkpoint saved it, behind the host's stored URLs (nothing enters the workbench)."""
        for line in lines_of(block):
            self._store(hs, key, line, front=False)

    def count_stored(self, hs: HostState, n: int) -> None:
        """``n`` URLs of the host that the store holds already (a restore's, replayed from the store's log)."""
        hs.stored += n
        self.stored += n
        best = self.store.best(hs.key)
        hs.stored_best = min(hs.stored_best, INFINITY if best is None else best)

    def _store(self, hs: HostState, key: float, line: str, front: bool) -> None:
        pending = self._pending.get(hs.key)
        if pending is None:
            pending = self._pending[hs.key] = _Pending(hs)
        groups = pending.put_backs if front else pending.appends
        lines = groups.get(key)
        if lines is None:
            lines = groups[key] = [line]
        else:
            lines.append(line)
        if front or len(lines) >= self.low:
            self._whole.add(hs.key)
        self._pending_lines += 1
        hs.stored += 1
        self.stored += 1
        if key < hs.stored_best:
            hs.stored_best = key

    def flush(self, hosts: Iterable[str] | None = None, whole_blocks: bool = False) -> None:
        """Write pending lines to the store, in blocks of up to ``low``: those of ``hosts`` (default: all), and
        with ``whole_blocks`` only full blocks of appends -- a host that gets one new URL a round then still gets a
        block of them, not a row per URL (the rest wait, up to ``pending_bound`` lines in all). What the store
        refuses goes back to its workbench (over the bound)."""
        if not self._pending:
            return
        if whole_blocks and self._pending_lines > self._pending_bound:
            whole_blocks = False
        if whole_blocks:  # (only hosts with something whole to write: not a look at every host each round)
            hosts, self._whole = self._whole, set()
        # (a copy even of all of them: written hosts leave ``_pending`` below, and a refusal needs them still)
        chosen = dict(self._pending) if hosts is None else {h: self._pending[h] for h in hosts if h in self._pending}
        appends: list[QueueItem] = []
        put_backs: list[QueueItem] = []
        step, written = self.low, 0
        for host, pending in list(chosen.items()):
            for key, lines in pending.put_backs.items():
                lines.reverse()  # (evicted newest first: taken oldest first; the last block given goes in front)
                chunks = [lines[i : i + step] for i in range(0, len(lines), step)]
                put_backs.extend((host, key, "\n".join(chunk).encode()) for chunk in reversed(chunks))
                written += len(lines)
            pending.put_backs = {}
            for key, lines in list(pending.appends.items()):
                cut = len(lines) - len(lines) % step if whole_blocks else len(lines)
                appends.extend((host, key, "\n".join(lines[i : i + step]).encode()) for i in range(0, cut, step))
                written += cut
                if cut == len(lines):
                    del pending.appends[key]
                elif cut:
                    pending.appends[key] = lines[cut:]
            if not pending.appends:
                del self._pending[host]
        self._pending_lines -= written
        for items, write in ((put_backs, self.store.put_back), (appends, self.store.push)):
            try:
                write(items)
            except QueueStoreFull as exc:
                self.full = str(exc)
                self._refused(items, chosen)

    def _refused(self, items: list[QueueItem], hosts: dict[str, _Pending]) -> None:
        for host, key, block in items:
            hs = hosts[host].hs
            for line in lines_of(block):
                hs.queue.push(key, decode(line))
                hs.stored -= 1
                self.stored -= 1
            hs.stored_best = self._best(host, self.store.best(host))

    def _best(self, host: str, in_store: float | None) -> float:
        """A host's best stored score: the store's, or a line's still on its way there."""
        pending = self._pending.get(host)
        scores = [*pending.appends, *pending.put_backs] if pending is not None else []
        return min(scores + ([in_store] if in_store is not None else []), default=INFINITY)

    def take(self, hs: HostState, n: int) -> list[UrlEntry]:
        """The host's best stored URLs, out of the store: whole blocks, until ``n`` or more, or all there are."""
        entries: list[UrlEntry] = []
        while hs.stored and len(entries) < n:
            entries += self.refill([hs], max(1, (n - len(entries)) // self.low))[hs.key]
        return entries

    def refill(self, hosts: list[HostState], blocks: int = 1) -> dict[str, list[UrlEntry]]:
        """The next ``blocks`` stored blocks of each host (each up to ``low`` URLs: one tops up a workbench below
        ``low``), out of the store in one call."""
        wanted = {hs.key: blocks for hs in hosts if hs.stored}
        if not wanted:
            return {hs.key: [] for hs in hosts}
        self.flush(wanted)  # (theirs, all of it: a host's rows in the store are all its stored URLs)
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
            self.stored -= len(entries)
            if not rows and hs.stored and hs.key not in self._pending:
                # Counted as stored, and the store has none of them (a checkpoint that disagrees with its log):
                # said, and forgotten -- a host waiting for rows that never come would keep the crawl from ending.
                self.missing += hs.stored
                self.stored -= hs.stored
                hs.stored = 0
            hs.stored_best = self._best(hs.key, best)  # (lines a full store refused may still be on their way)
        return out

    def stored_rows(self) -> Iterator[QueueItem]:
        """Every stored block, as its host, score and lines (for a checkpoint)."""
        self.flush()
        return self.store.items()
