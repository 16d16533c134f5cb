"""Which of a shard's hosts may be leased next, and when: the ready-heap of hosts by due time, and -- when scores
say more than depth -- the ranking of the hosts due by a lease's horizon by their best queued URL.

A host is in here at most once live: ``HostState.heap_token`` names its live entry (tokens are unique over the
shard and start at 1, so two entries never tie and a host is never compared; 0: not in here). An entry whose
token its host no longer holds is stale and skipped where it is met. This module alone writes ``heap_token``.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Any

from raycrawl.core.hosts import HostState


class DueHosts:
    def __init__(self, rank: bool) -> None:
        # Rank hosts by their best URL only when scores say more than depth (that ranking costs ~25% of leasing,
        # measured with benchmarks/micro.py's frontier rate).
        self.rank = rank
        self._ready: list[tuple[float, int, HostState]] = []  # (due, token, host)
        # Hosts due by a lease's horizon, best queued score first: when there are more of them than a lease may
        # take, the hosts whose best URL scores best go first. (score, due, token, host)
        self._ranked: list[tuple[float, float, int, HostState]] = []
        self._tokens = 0

    def put(self, hs: HostState, due: float) -> None:
        """The host may be leased from ``due`` on (an older entry of it becomes stale)."""
        if hs.heap_token and hs.heap_due == due and not self.rank:
            # Its live entry stands: a push to a host already waiting adds no entry (a shard that takes ten thousand
            # links a second would otherwise fill its heap with stale ones faster than leases pop them).
            return
        self._tokens += 1
        hs.heap_token, hs.heap_due = self._tokens, due
        heapq.heappush(self._ready, (due, self._tokens, hs))

    @staticmethod
    def drop(hs: HostState) -> None:
        """The host may not be leased now (its entry, if any, is stale)."""
        hs.heap_token = 0

    def clear(self, hosts: Iterable[HostState]) -> None:
        """None of ``hosts`` may be leased now (a drained shard's)."""
        for hs in hosts:
            hs.heap_token = 0
        self._ready, self._ranked = [], []

    def pop(self, limit: float) -> HostState | None:
        """The next host due by ``limit`` (soonest first, or best first when ranked), taken out; None: none is."""
        if self.rank:
            self.rank_due(limit)
            top = self._ranked_top()
            if top is None:
                return None
            heapq.heappop(self._ranked)
            hs = top[3]
        else:
            ready = self._ready
            while True:
                if not ready:
                    return None
                due, token, hs = ready[0]
                live = hs.heap_token == token
                if live and due > limit:
                    return None
                heapq.heappop(ready)
                if live:
                    break
        hs.heap_token = 0
        return hs

    def next_due(self) -> float | None:
        """When the earliest host here may be leased (a ranked one is due by an earlier horizon: now, in effect)."""
        top = self._ranked_top()
        soonest = top[1] if top else None
        while self._ready:
            due, token, hs = self._ready[0]
            if hs.heap_token == token:
                return due if soonest is None else min(due, soonest)
            heapq.heappop(self._ready)
        return soonest

    def rank_due(self, limit: float) -> None:
        """Every host due by ``limit`` joins the ranking (by its best URL), with its token."""
        ready, ranked = self._ready, self._ranked
        while ready:
            due, token, hs = ready[0]
            if due > limit and hs.heap_token == token:
                break
            heapq.heappop(ready)
            if hs.heap_token == token:
                heapq.heappush(ranked, (hs.queue.best, due, token, hs))

    def best_waiting(self, limit: float) -> float | None:
        """The best key of a ranked host due by ``limit``; None unranked, or when no host waits."""
        if not self.rank:
            return None
        self.rank_due(limit)
        top = self._ranked_top()
        return top[0] if top else None

    def backlog(self, limit: float, cap: int) -> int:
        """Hosts due by ``limit``, counted up to ``cap``; costs O(what it counts), not O(hosts)."""
        if self.rank:
            self.rank_due(limit)
            return _count_live(self._ranked, None, cap)  # (every ranked host is due)
        return _count_live(self._ready, limit, cap)

    def ready_now(self, now: float) -> int:
        """Hosts here due by ``now`` (a full scan: for summaries)."""
        ready = sum(1 for d, tok, hs in self._ready if hs.heap_token == tok and d <= now)
        return ready + sum(1 for _, d, tok, hs in self._ranked if hs.heap_token == tok and d <= now)

    def _ranked_top(self) -> tuple[float, float, int, HostState] | None:
        """The ranking's first live entry (stale ones above it are dropped), or None."""
        ranked = self._ranked
        while ranked and ranked[0][3].heap_token != ranked[0][2]:
            heapq.heappop(ranked)
        return ranked[0] if ranked else None


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
