"""The crawl's seen-set: "which of these fingerprints are new?", answered for a whole batch at once.

``ExactSeenSet`` keeps 64-bit fingerprints in a sorted numpy ``uint64`` array (8 bytes each) plus two smaller
sorted arrays of recent additions: the newest (at most ``_NEWEST``) takes each batch, and is merged into the middle
one, which is merged into the big one when past an eighth of it. A batch costs a merge into the small array (with
two levels, each batch was merged into an array of up to an eighth of the whole: at 8 M URLs, 0.44-0.74 ms a batch
of 60 on average, against 0.17-0.20 with three; what is left is the binary searches in the big array). That is
about 9 bytes per URL instead of the ~70 of a Python set of ints, and a whole batch is checked with one vectorised
binary search (``searchsorted``) per array instead of a Python-level loop per fingerprint.

``BloomSeenSet`` (pybloom-live) is smaller still but may call a new URL "seen" and so silently drop it
(rmax/scrapy-redis #144): it counts the expected number of such false drops so the operator can see it.
"""

from __future__ import annotations

import io
import json
import math
from array import array
from collections.abc import Iterable
from typing import Protocol, cast

import numpy as np
from numpy.typing import NDArray
from pybloom_live import BloomFilter, ScalableBloomFilter

_MIN_MERGE = 65_536
# The newest additions' array: each batch is merged into it, copying it (~8 us at its average size); past this it
# goes into the middle array (a copy of that, once per ~270 batches of 60 new URLs).
_NEWEST = 16_384


class SeenSet(Protocol):
    def add_new(self, fingerprints: Iterable[int]) -> list[bool]:
        """Mark each fingerprint seen; True for those not seen before (duplicates in the batch: first wins)."""
        ...

    def holds(self, fingerprints: Iterable[int]) -> list[bool]:
        """For each fingerprint, whether it is seen (nothing is marked)."""
        ...

    def __len__(self) -> int: ...

    def memory_bytes(self) -> int: ...

    def stats(self) -> dict[str, float]: ...

    def to_bytes(self) -> bytes:
        """The whole seen-set, for a checkpoint."""
        ...

    def take_added(self) -> bytes:
        """The fingerprints added since the last call (8 bytes each, little-endian): what a checkpoint that copies
        only what changed writes (core/seen_partition.py)."""
        ...


class ExactSeenSet:
    def __init__(self) -> None:
        self._sorted: NDArray[np.uint64] = _EMPTY
        self._recent: NDArray[np.uint64] = _EMPTY  # sorted too; merged into _sorted past an eighth of its size
        self._newest: NDArray[np.uint64] = _EMPTY  # ... and merged into _recent past _NEWEST
        self._added: list[NDArray[np.uint64]] = []  # since take_added
        self.checks = 0
        self.hits = 0

    def __len__(self) -> int:
        return len(self._sorted) + len(self._recent) + len(self._newest)

    def __contains__(self, fp: int) -> bool:
        return self.holds([fp])[0]

    def holds(self, fingerprints: Iterable[int]) -> list[bool]:
        return cast(list[bool], self._held(_as_array(fingerprints)).tolist())

    def _held(self, batch: NDArray[np.uint64]) -> NDArray[np.bool_]:
        return _members(self._sorted, batch) | _members(self._recent, batch) | _members(self._newest, batch)

    def add_new(self, fingerprints: Iterable[int]) -> list[bool]:
        batch = _as_array(fingerprints)
        # Each distinct fingerprint once, sorted, with where it first appears (a repeat in the batch is not new).
        distinct, first_at = np.unique(batch, return_index=True)
        new = ~self._held(distinct)
        mask = np.zeros(len(batch), dtype=bool)
        mask[first_at[new]] = True
        fresh = distinct[new]
        if len(fresh):
            self._newest = _merged(self._newest, fresh)
            self._added.append(fresh)
        if len(self._newest) > _NEWEST:
            self._recent, self._newest = _merged(self._recent, self._newest), _EMPTY
            if len(self._recent) > max(_MIN_MERGE, len(self._sorted) >> 3):
                self._merge()
        self.checks += len(batch)
        self.hits += len(batch) - len(fresh)
        return cast(list[bool], mask.tolist())

    def _merge(self) -> None:
        self._sorted = _merged(self._sorted, _merged(self._recent, self._newest))  # (the big array copied once)
        self._recent = self._newest = _EMPTY

    def memory_bytes(self) -> int:
        return int(self._sorted.nbytes + self._recent.nbytes + self._newest.nbytes)

    def fingerprints(self) -> NDArray[np.uint64]:
        """All fingerprints, sorted (for checkpoints)."""
        self._merge()
        return self._sorted

    def to_bytes(self) -> bytes:
        return self.fingerprints().astype("<u8", copy=False).tobytes()  # 8 bytes per URL, sorted

    def take_added(self) -> bytes:
        added = np.concatenate(self._added) if self._added else _EMPTY
        self._added = []
        return added.astype("<u8", copy=False).tobytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> ExactSeenSet:
        seen = cls()
        seen._sorted = np.frombuffer(data, dtype="<u8").astype(np.uint64, copy=False)
        return seen

    def stats(self) -> dict[str, float]:
        return {"size": len(self), "checks": self.checks, "hits": self.hits, "memory_bytes": self.memory_bytes()}


_EMPTY: NDArray[np.uint64] = np.zeros(0, dtype=np.uint64)


def _as_array(fingerprints: Iterable[int]) -> NDArray[np.uint64]:
    if isinstance(fingerprints, array) and fingerprints.typecode == "Q":
        return np.frombuffer(fingerprints, dtype=np.uint64)  # (the dedup actor's packed batches: no copy)
    if isinstance(fingerprints, np.ndarray):
        return fingerprints.astype(np.uint64, copy=False)
    return np.fromiter(fingerprints, dtype=np.uint64)


def _members(haystack: NDArray[np.uint64], needles: NDArray[np.uint64]) -> NDArray[np.bool_]:
    """For each needle, whether the sorted ``haystack`` holds it: one binary search each, in C."""
    if not len(haystack):
        return np.zeros(len(needles), dtype=bool)
    at = np.searchsorted(haystack, needles)
    at[at == len(haystack)] = 0  # past the end: compare with any element (it cannot be equal)
    return cast(NDArray[np.bool_], haystack[at] == needles)


def _merged(a: NDArray[np.uint64], b: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """Two sorted arrays with no common element, as one sorted array (linear: a copy with gaps filled)."""
    return np.insert(a, np.searchsorted(a, b), b)


class BloomSeenSet:
    """A scalable Bloom filter (pybloom-live): past ``capacity`` it adds a filter twice as large at 0.9x the error
    rate, so a crawl that outgrows its estimate keeps deduplicating (a plain filter past capacity would have to
    call every URL new, or every URL seen). ``grown`` counts the filters added."""

    def __init__(self, capacity: int, error_rate: float) -> None:
        # The first filter gets exactly the configured rate (pybloom-live multiplies by its ratio, 0.9).
        self._filter = ScalableBloomFilter(capacity, error_rate / _RATIO, ScalableBloomFilter.SMALL_SET_GROWTH)
        self.capacity = capacity
        self.error_rate = error_rate
        self._added = array("Q")  # since take_added
        self.checks = 0
        self.hits = 0
        self.expected_false_drops = 0.0

    def __len__(self) -> int:
        return len(self._filter)

    @property
    def grown(self) -> int:
        return max(0, len(self._filter.filters) - 1)

    def _false_positive_rate(self) -> float:
        """The chance that a URL never seen is reported as seen now: 1 - the chance every filter says no."""
        miss = 1.0
        for f in self._filter.filters:
            k, m, n = f.num_slices, f.num_bits, f.count
            miss *= 1.0 - (1.0 - math.exp(-k * n / m)) ** k
        return 1.0 - miss

    def holds(self, fingerprints: Iterable[int]) -> list[bool]:
        bloom = self._filter
        return [fp.to_bytes(8, "big") in bloom for fp in fingerprints]

    def add_new(self, fingerprints: Iterable[int]) -> list[bool]:
        out: list[bool] = []
        add = self._filter.add
        p = self._false_positive_rate()
        for i, fp in enumerate(fingerprints):
            if i % 1024 == 0 and i:
                p = self._false_positive_rate()  # (it moves slowly: refreshed every 1,024 URLs of a batch)
            already = add(fp.to_bytes(8, "big"))
            if not already:
                self.expected_false_drops += p  # this new URL had that chance of being dropped as "seen"
                self._added.append(fp)
            out.append(not already)
        self.checks += len(out)
        self.hits += len(out) - sum(out)
        return out

    def memory_bytes(self) -> int:
        return int(sum(f.num_bits // 8 for f in self._filter.filters))

    def to_bytes(self) -> bytes:
        buffer = io.BytesIO()
        self._filter.tofile(buffer)
        header = json.dumps({"format": "scalable", "expected_false_drops": self.expected_false_drops}).encode()
        return len(header).to_bytes(4, "big") + header + buffer.getvalue()

    def take_added(self) -> bytes:
        added, self._added = self._added, array("Q")
        return np.frombuffer(added, dtype=np.uint64).astype("<u8", copy=False).tobytes()

    @classmethod
    def from_bytes(cls, data: bytes, capacity: int, error_rate: float) -> BloomSeenSet:
        size = int.from_bytes(data[:4], "big")
        header = json.loads(data[4 : 4 + size])
        seen = cls(capacity, error_rate)
        body = io.BytesIO(data[4 + size :])
        if header.get("format") == "scalable":
            seen._filter = ScalableBloomFilter.fromfile(body)
        else:  # a checkpoint from before the filter could grow: its one plain filter becomes the first
            seen._filter.filters = [BloomFilter.fromfile(body)]
        seen.expected_false_drops = header["expected_false_drops"]
        return seen

    def stats(self) -> dict[str, float]:
        return {
            "size": len(self),
            "checks": self.checks,
            "hits": self.hits,
            "memory_bytes": self.memory_bytes(),
            "expected_false_drops": round(self.expected_false_drops, 3),
            "capacity": self.capacity,
            "capacity_now": int(self._filter.capacity),
            "grown": self.grown,
            "error_rate": self.error_rate,
        }


_RATIO = 0.9  # pybloom-live's error-rate ratio between successive filters
