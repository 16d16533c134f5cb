"""A shard's queued URLs, host by host in score order: the contract a store keeps, whether it holds them in memory
(``MemoryQueueStore``, here) or on disk (``adapters/lmdb_queue.py``), so that a frontier keeps only a small
workbench of each host's next URLs in memory and the rest where there is room (core/workbench.py).

Rows are opaque bytes (the frontier's encoding of a queued URL). Within a host, ``take`` returns the lowest
``order`` first; among equal orders a host's rows are a deque: ``push`` appends (after every row of that host and
order), ``put_back`` prepends (before every one, the items of one call each before the ones already put back --
as ``deque.appendleft`` would, one after the other). ``take`` removes what it returns, so a row stored once is
taken once.

Keys sort as the store's order: the host, a separator no host contains, the order as a sortable 64-bit integer,
and a sequence number -- growing from ``FIRST_APPEND`` for pushes, shrinking from below it for put-backs
(``queue_key``).
"""

from __future__ import annotations

import heapq
import struct
from collections.abc import Iterable, Iterator, Sequence
from typing import Protocol

# (host, order -- lower is taken first --, row)
QueueItem = tuple[str, float, bytes]

_SEPARATOR = b"\x00"  # (a netloc never holds NUL)
_TAIL = struct.Struct(">QQ")  # sortable order, sequence
FIRST_APPEND = 1 << 62  # the first push's sequence; put-backs count down from FIRST_APPEND - 1
_SIGN = 0x8000000000000000
_ALL = 0xFFFFFFFFFFFFFFFF


class QueueStoreFull(Exception):
    """The store has no room for a push (its disk or its map is full); nothing of that push was stored."""


class QueueKeyRefused(ValueError):
    """A row whose key the store cannot take (too long): a fault in what was pushed, never a full disk (a crawl
    stopped as "disk full" would resume into the same wall). Nothing of that push was stored. Canonical hosts are
    at most 253 characters (core/urls.py), so a crawl's keys always fit."""


def sortable_order(order: float) -> int:
    """``order`` as an unsigned 64-bit integer that sorts as the float does (IEEE 754's bits, sign flipped for
    positive numbers, all bits flipped for negative ones)."""
    bits = int(struct.unpack(">Q", struct.pack(">d", order + 0.0))[0])  # (+0.0: -0.0 sorts as 0.0)
    return bits ^ _ALL if bits >> 63 else bits | _SIGN


def order_of(sortable: int) -> float:
    """The float ``sortable_order`` made ``sortable`` from."""
    bits = sortable ^ _SIGN if sortable >> 63 else sortable ^ _ALL
    return float(struct.unpack(">d", struct.pack(">Q", bits))[0])


def host_prefix(host: str) -> bytes:
    return host.encode() + _SEPARATOR


def queue_key(host: str, order: float, sequence: int) -> bytes:
    return host_prefix(host) + _TAIL.pack(sortable_order(order), sequence)


def order_of_key(key: bytes) -> float:
    return order_of(_TAIL.unpack(key[-_TAIL.size :])[0])


class QueueStore(Protocol):
    def push(self, items: Sequence[QueueItem]) -> None:
        """Store every item, each after the rows of its host and order; all or none (QueueStoreFull)."""

    def put_back(self, items: Sequence[QueueItem]) -> None:
        """Store every item, each before the rows of its host and order; all or none (QueueStoreFull)."""

    def take(self, host: str, n: int) -> tuple[list[bytes], float | None]:
        """The host's next ``n`` rows (fewer when it has fewer), removed from the store, and the order of the row
        that is then next (None: the host has no more)."""

    def take_each(self, wanted: dict[str, int]) -> dict[str, tuple[list[bytes], float | None]]:
        """``take`` for many hosts at once (one transaction: a store's cost is per call more than per row)."""

    def best(self, host: str) -> float | None:
        """The order of the row ``take`` would return next (None: the host has none)."""

    def count(self, host: str) -> int: ...

    def total(self) -> int: ...

    def hosts(self) -> Iterable[str]:
        """The hosts with at least one row."""

    def items(self) -> Iterator[QueueItem]:
        """Every row, host by host in take order, without taking any (the store must not change meanwhile)."""


class MemoryQueueStore:
    """The contract kept in memory: a heap per host."""

    def __init__(self) -> None:
        self._heaps: dict[str, list[tuple[float, int, bytes]]] = {}
        self._appended = FIRST_APPEND - 1
        self._put_back = FIRST_APPEND
        self._total = 0

    def push(self, items: Sequence[QueueItem]) -> None:
        for host, order, row in items:
            self._appended += 1
            heapq.heappush(self._heaps.setdefault(host, []), (order + 0.0, self._appended, row))
        self._total += len(items)

    def put_back(self, items: Sequence[QueueItem]) -> None:
        for host, order, row in items:
            self._put_back -= 1
            heapq.heappush(self._heaps.setdefault(host, []), (order + 0.0, self._put_back, row))
        self._total += len(items)

    def take(self, host: str, n: int) -> tuple[list[bytes], float | None]:
        heap = self._heaps.get(host)
        if not heap:
            return [], None
        rows = [heapq.heappop(heap)[2] for _ in range(min(n, len(heap)))]
        self._total -= len(rows)
        if not heap:
            del self._heaps[host]
            return rows, None
        return rows, heap[0][0]

    def take_each(self, wanted: dict[str, int]) -> dict[str, tuple[list[bytes], float | None]]:
        return {host: self.take(host, n) for host, n in wanted.items()}

    def best(self, host: str) -> float | None:
        heap = self._heaps.get(host)
        return heap[0][0] if heap else None

    def count(self, host: str) -> int:
        return len(self._heaps.get(host, ()))

    def total(self) -> int:
        return self._total

    def hosts(self) -> Iterable[str]:
        return list(self._heaps)

    def items(self) -> Iterator[QueueItem]:
        for host, heap in self._heaps.items():
            for order, _, row in sorted(heap):
                yield host, order, row
