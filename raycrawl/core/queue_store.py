"""A shard's queued URLs, host by host in score order: the contract a store keeps, whether it holds them in memory
(``MemoryQueueStore``, here) or on disk (``adapters/lmdb_queue.py``), so that a frontier can keep only a small
workbench of each host's next URLs in memory and the rest where there is room (issue 30).

Rows are opaque bytes (the frontier's encoding of a queued URL). Within a host, ``take`` returns the lowest
``order`` first, and among equal orders the first pushed first; it removes what it returns, so a row pushed once
is taken once. A row taken and not fetched (a lease released) is pushed again.

Keys sort as the store's order: the host, a separator no host contains, the order as a sortable 64-bit integer,
and the push's sequence number (``queue_key``).
"""

from __future__ import annotations

import heapq
import struct
from collections.abc import Iterable, Sequence
from typing import Protocol

# (host, order -- lower is taken first --, row)
QueueItem = tuple[str, float, bytes]

_SEPARATOR = b"\x00"  # (a netloc never holds NUL)
_TAIL = struct.Struct(">QQ")  # sortable order, sequence


class QueueStoreFull(Exception):
    """The store has no room for a push (its disk or its map is full); nothing of that push was stored."""


def sortable_order(order: float) -> int:
    """``order`` as an unsigned 64-bit integer that sorts as the float does (IEEE 754's bits, sign flipped for
    positive numbers, all bits flipped for negative ones)."""
    bits = int(struct.unpack(">Q", struct.pack(">d", order + 0.0))[0])  # (+0.0: -0.0 sorts as 0.0)
    return bits ^ 0xFFFFFFFFFFFFFFFF if bits >> 63 else bits | 0x8000000000000000


def host_prefix(host: str) -> bytes:
    return host.encode() + _SEPARATOR


def queue_key(host: str, order: float, sequence: int) -> bytes:
    return host_prefix(host) + _TAIL.pack(sortable_order(order), sequence)


class QueueStore(Protocol):
    def push(self, items: Sequence[QueueItem]) -> None:
        """Store every item, or none (QueueStoreFull)."""

    def take(self, host: str, n: int) -> list[bytes]:
        """The host's next ``n`` rows (fewer when it has fewer), removed from the store."""

    def count(self, host: str) -> int: ...

    def total(self) -> int: ...

    def hosts(self) -> Iterable[str]:
        """The hosts with at least one row."""


class MemoryQueueStore:
    """The contract kept in memory: a heap per host (as the frontier keeps its queues today)."""

    def __init__(self) -> None:
        self._heaps: dict[str, list[tuple[int, int, bytes]]] = {}
        self._sequence = 0
        self._total = 0

    def push(self, items: Sequence[QueueItem]) -> None:
        for host, order, row in items:
            self._sequence += 1
            heapq.heappush(self._heaps.setdefault(host, []), (sortable_order(order), self._sequence, row))
        self._total += len(items)

    def take(self, host: str, n: int) -> list[bytes]:
        heap = self._heaps.get(host)
        if not heap:
            return []
        rows = [heapq.heappop(heap)[2] for _ in range(min(n, len(heap)))]
        if not heap:
            del self._heaps[host]
        self._total -= len(rows)
        return rows

    def count(self, host: str) -> int:
        return len(self._heaps.get(host, ()))

    def total(self) -> int:
        return self._total

    def hosts(self) -> Iterable[str]:
        return list(self._heaps)
