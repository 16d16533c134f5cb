"""The crawl's seen-set: "which of these fingerprints are new?", answered for a whole batch at once.

``ExactSeenSet`` keeps 64-bit fingerprints in a sorted ``array('Q')`` (8 bytes each) plus a small Python set
of recent additions that is merged in when it grows past an eighth of the array. That stays near 16 bytes
per URL instead of the ~70 of a Python set of ints, and a lookup is a C-level binary search.

``BloomSeenSet`` (pybloom-live) is smaller still but may call a new URL "seen" and so silently drop it
(rmax/scrapy-redis #144): it counts the expected number of such false drops so the operator can see it.
"""

from __future__ import annotations

import io
import json
import math
from array import array
from bisect import bisect_left
from collections.abc import Iterable
from itertools import chain
from typing import Protocol

from pybloom_live import BloomFilter

_MIN_MERGE = 65_536


class SeenSet(Protocol):
    def add_new(self, fingerprints: Iterable[int]) -> list[bool]:
        """Mark each fingerprint seen; True for those not seen before (duplicates in the batch: first wins)."""
        ...

    def __len__(self) -> int: ...

    def memory_bytes(self) -> int: ...

    def stats(self) -> dict[str, float]: ...

    def to_bytes(self) -> bytes:
        """The whole seen-set, for a checkpoint."""
        ...


class ExactSeenSet:
    def __init__(self) -> None:
        self._sorted = array("Q")
        self._recent: set[int] = set()
        self.checks = 0
        self.hits = 0

    def __len__(self) -> int:
        return len(self._sorted) + len(self._recent)

    def __contains__(self, fp: int) -> bool:
        if fp in self._recent:
            return True
        base = self._sorted
        i = bisect_left(base, fp)
        return i < len(base) and base[i] == fp

    def add_new(self, fingerprints: Iterable[int]) -> list[bool]:
        out: list[bool] = []
        recent = self._recent
        for fp in fingerprints:
            new = fp not in self
            if new:
                recent.add(fp)
            out.append(new)
        self.checks += len(out)
        self.hits += len(out) - sum(out)
        if len(recent) > max(_MIN_MERGE, len(self._sorted) >> 3):
            self._merge()
        return out

    def _merge(self) -> None:
        # Two sorted runs: Timsort merges them in linear time.
        self._sorted = array("Q", sorted(chain(self._sorted, sorted(self._recent))))
        self._recent = set()

    def memory_bytes(self) -> int:
        import sys

        recent = sys.getsizeof(self._recent) + 32 * len(self._recent)  # set table + int objects
        return self._sorted.buffer_info()[1] * self._sorted.itemsize + recent

    def fingerprints(self) -> array[int]:
        """All fingerprints, sorted (for checkpoints)."""
        self._merge()
        return array("Q", self._sorted)

    def to_bytes(self) -> bytes:
        return self.fingerprints().tobytes()  # 8 bytes per URL, sorted

    @classmethod
    def from_bytes(cls, data: bytes) -> ExactSeenSet:
        seen = cls()
        seen._sorted.frombytes(data)
        return seen

    def stats(self) -> dict[str, float]:
        return {"size": len(self), "checks": self.checks, "hits": self.hits, "memory_bytes": self.memory_bytes()}


class BloomSeenSet:
    def __init__(self, capacity: int, error_rate: float) -> None:
        self._filter = BloomFilter(capacity=capacity, error_rate=error_rate)
        self.capacity = capacity
        self.error_rate = error_rate
        self.checks = 0
        self.hits = 0
        self.expected_false_drops = 0.0
        self.over_capacity = 0

    def __len__(self) -> int:
        return int(self._filter.count)

    def _false_positive_rate(self) -> float:
        f = self._filter
        k, m, n = f.num_slices, f.num_bits, f.count
        return float((1.0 - math.exp(-k * n / m)) ** k)

    def add_new(self, fingerprints: Iterable[int]) -> list[bool]:
        out: list[bool] = []
        f = self._filter
        for fp in fingerprints:
            if f.count >= self.capacity:
                # pybloom-live raises past capacity; treating the URL as new costs at most a duplicate fetch.
                self.over_capacity += 1
                out.append(True)
                continue
            # Each new URL had this chance of being reported as seen and dropped.
            p = self._false_positive_rate()
            already = f.add(fp.to_bytes(8, "big"))
            if not already:
                self.expected_false_drops += p
            out.append(not already)
        self.checks += len(out)
        self.hits += len(out) - sum(out)
        return out

    def memory_bytes(self) -> int:
        return int(self._filter.num_bits // 8)

    def to_bytes(self) -> bytes:
        buffer = io.BytesIO()
        self._filter.tofile(buffer)
        header = json.dumps(
            {"expected_false_drops": self.expected_false_drops, "over_capacity": self.over_capacity}
        ).encode()
        return len(header).to_bytes(4, "big") + header + buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes, capacity: int, error_rate: float) -> BloomSeenSet:
        size = int.from_bytes(data[:4], "big")
        header = json.loads(data[4 : 4 + size])
        seen = cls(capacity, error_rate)
        seen._filter = BloomFilter.fromfile(io.BytesIO(data[4 + size :]))
        seen.expected_false_drops = header["expected_false_drops"]
        seen.over_capacity = header["over_capacity"]
        return seen

    def stats(self) -> dict[str, float]:
        return {
            "size": len(self),
            "checks": self.checks,
            "hits": self.hits,
            "memory_bytes": self.memory_bytes(),
            "expected_false_drops": round(self.expected_false_drops, 3),
            "over_capacity": self.over_capacity,
            "capacity": self.capacity,
            "error_rate": self.error_rate,
        }
