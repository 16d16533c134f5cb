"""One host's waiting URLs: lowest score first, and first come first served among equal scores.

A crawl has few distinct scores (by default a URL's depth), so the URLs wait in one FIFO per score, with a
small heap of the scores present. Pushing and popping are then O(1) for a score already present, where one
heap of (score, sequence, entry) tuples paid about 2·log2(n) tuple comparisons per URL -- the largest single
cost of leasing. The lowest score's FIFO is also kept at hand (``_head``): ``pop`` runs once per URL leased.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Iterator

from raycrawl.core.records import UrlEntry


class HostQueue:
    __slots__ = ("_buckets", "_head", "_scores", "size")

    def __init__(self) -> None:
        self._buckets: dict[float, deque[UrlEntry]] = {}
        self._scores: list[float] = []  # a heap of the keys of _buckets
        self._head: deque[UrlEntry] = deque()  # the bucket of the lowest score (an empty queue: a spare deque)
        self.size = 0  # read-only outside: len() without a call, for the frontier's per-URL bound check

    def __len__(self) -> int:
        return self.size

    def __bool__(self) -> bool:
        return self.size > 0

    def __iter__(self) -> Iterator[UrlEntry]:
        """Every entry, in the order ``pop`` would return them."""
        for score in sorted(self._scores):
            yield from self._buckets[score]

    def push(self, score: float, entry: UrlEntry) -> None:
        bucket = self._buckets.get(score)
        if bucket is None:
            bucket = self._buckets[score] = deque()
            heapq.heappush(self._scores, score)
            if self._scores[0] == score:
                self._head = bucket
        bucket.append(entry)
        self.size += 1

    @property
    def best(self) -> float:
        """The score of the entry ``pop`` returns next (inf when empty)."""
        return self._scores[0] if self._scores else float("inf")

    @property
    def worst(self) -> float:
        """The highest score queued (-inf when empty)."""
        return max(self._scores) if self._scores else float("-inf")

    def pop_worst(self) -> UrlEntry:
        """Take out the entry that would be fetched last: the newest of the highest score (IndexError if empty)."""
        score = max(self._scores)
        bucket = self._buckets[score]
        entry = bucket.pop()
        self.size -= 1
        if not bucket:
            del self._buckets[score]
            self._scores.remove(score)
            heapq.heapify(self._scores)
            self._head = self._buckets[self._scores[0]] if self._scores else deque()
        return entry

    def pop(self) -> UrlEntry:
        """The entry to fetch next (IndexError if the queue is empty)."""
        bucket = self._head
        entry = bucket.popleft()
        self.size -= 1
        if not bucket:
            del self._buckets[heapq.heappop(self._scores)]
            self._head = self._buckets[self._scores[0]] if self._scores else deque()
        return entry

    def remove_if(self, unwanted: Callable[[UrlEntry], bool]) -> list[UrlEntry]:
        """Take out (and return), in queue order, the entries ``unwanted`` selects; the others keep their order."""
        removed: list[UrlEntry] = []
        for score in sorted(self._scores):  # (the heap's list is in no useful order: a hint re-queues them in this)
            bucket = self._buckets[score]
            kept = deque(e for e in bucket if not unwanted(e))
            if len(kept) == len(bucket):
                continue
            removed.extend(e for e in bucket if unwanted(e))
            if kept:
                self._buckets[score] = kept
            else:
                del self._buckets[score]
        self._scores = list(self._buckets)
        heapq.heapify(self._scores)
        self._head = self._buckets[self._scores[0]] if self._scores else deque()
        self.size -= len(removed)
        return removed

    def clear(self) -> list[UrlEntry]:
        """Take out (and return) every entry, in order."""
        everything = list(self)
        self._buckets, self._scores, self._head, self.size = {}, [], deque(), 0
        return everything
