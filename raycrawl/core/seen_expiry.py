"""A seen-set whose marks expire (``--seen-ttl``): a URL seen long enough ago is new again, as with the visited
keys of the dedup design we started from (``SET key NX EX ttl``). Pure: the clock is injected.

Time is cut in spans of ``ttl / SPANS``; each span's marks go to a seen-set of their own (exact or Bloom: a
*generation*, as time-bucketed filters keep them). A fingerprint is seen while any live generation holds it, and a
generation dies ``SPANS`` spans after its own: a mark lasts at least ``ttl`` and less than ``ttl * (1 + 1/SPANS)``,
and expiring is dropping a whole generation (nothing per fingerprint). ``touch`` renews marks (a continuous
crawl's shard renews the URLs it schedules again, and again as they come due, core/shard_work.py, so a URL on the
schedule never comes back as new through a link as well).

Saved whole as every live generation with its span; what changed since the last save is the fingerprints added or
touched, replayed as touches (into the generation of the restore's time: a mark restored lasts a little longer, never
shorter).
"""

from __future__ import annotations

import json
import math
import time
from array import array
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from raycrawl.core.seen import SeenSet

SPANS = 4  # generations a ttl is cut into (memory: up to SPANS + 1 of them live)
Clock = Callable[[], float]


class ExpiringSeenSet:
    def __init__(self, make: Callable[[], SeenSet], ttl: float, clock: Clock = time.time) -> None:
        if not ttl > 0:
            raise ValueError(f"a seen-set's ttl is a duration > 0, not {ttl!r}")
        self._make = make
        self.ttl = ttl
        self.span = ttl / SPANS
        self._clock = clock
        self._generations: dict[int, SeenSet] = {}  # span index -> the marks made in it
        self._added = array("Q")  # added or touched since take_added
        self.expired = 0  # marks dropped with their generations
        self.checks = 0
        self.hits = 0

    def _current(self) -> tuple[int, SeenSet]:
        """The generation of now (made if new), after dropping the ones past their time."""
        now = math.floor(self._clock() / self.span)
        for old in [g for g in self._generations if g < now - SPANS]:
            self.expired += len(self._generations.pop(old))
        gen = self._generations.get(now)
        if gen is None:
            gen = self._generations[now] = self._make()
        return now, gen

    def add_new(self, fingerprints: Iterable[int]) -> list[bool]:
        """True for each fingerprint no live generation holds (first of repeats in the batch); those are marked."""
        fps = [int(fp) for fp in fingerprints]
        index, current = self._current()
        seen = np.zeros(len(fps), dtype=bool)
        for g, gen in self._generations.items():
            if g != index and len(gen):
                seen |= _holds(gen, fps)
        unseen = [fp for fp, was in zip(fps, seen.tolist(), strict=True) if not was]
        fresh = iter(current.add_new(unseen))
        out = [False if was else next(fresh) for was in seen.tolist()]
        self._added.extend(fp for fp, new in zip(fps, out, strict=True) if new)
        self.checks += len(fps)
        self.hits += len(fps) - sum(out)
        return out

    def touch(self, fingerprints: Iterable[int]) -> None:
        """Renew these marks: they last a ttl from now (marked in the current generation)."""
        fps = [int(fp) for fp in fingerprints]
        _, current = self._current()
        current.add_new(fps)
        self._added.extend(fps)

    def __len__(self) -> int:
        """Marks in all live generations (a touched fingerprint counts once per generation it is in)."""
        self._current()
        return sum(len(gen) for gen in self._generations.values())

    def memory_bytes(self) -> int:
        return sum(gen.memory_bytes() for gen in self._generations.values())

    def stats(self) -> dict[str, float]:
        inner: dict[str, float] = {}
        for gen in self._generations.values():
            for key, value in gen.stats().items():
                if key in ("expected_false_drops", "grown"):
                    inner[key] = inner.get(key, 0) + value
        return inner | {
            "size": len(self),
            "checks": self.checks,
            "hits": self.hits,
            "memory_bytes": self.memory_bytes(),
            "ttl_s": self.ttl,
            "generations": len(self._generations),
            "expired": self.expired,
        }

    def to_bytes(self) -> bytes:
        parts = [(g, gen.to_bytes()) for g, gen in sorted(self._generations.items())]
        header: dict[str, Any] = {"format": "generations", "span": self.span, "expired": self.expired,
                                  "sizes": [[g, len(data)] for g, data in parts]}  # fmt: skip
        encoded = json.dumps(header).encode()
        return len(encoded).to_bytes(4, "big") + encoded + b"".join(data for _, data in parts)

    def take_added(self) -> bytes:
        added, self._added = self._added, array("Q")
        return np.frombuffer(added, dtype=np.uint64).astype("<u8", copy=False).tobytes()

    @classmethod
    def from_bytes(
        cls, data: bytes, make: Callable[[], SeenSet], load: Callable[[bytes], SeenSet], ttl: float, clock: Clock
    ) -> ExpiringSeenSet:
        """A saved seen-set (``load`` reads one generation). Saved without generations (a crawl that did not
        expire marks before): everything it holds is one generation of now."""
        seen = cls(make, ttl, clock)
        size = int.from_bytes(data[:4], "big") if len(data) >= 4 else 0
        header = _header(data[4 : 4 + size]) if size < len(data) else None
        if header is None:
            seen._generations[math.floor(clock() / seen.span)] = load(data)
            return seen
        at = 4 + size
        scale = header["span"] / seen.span  # (a ttl changed on resume: generations keep their times)
        for g, length in header["sizes"]:
            seen._generations[math.floor(g * scale)] = load(data[at : at + length])
            at += length
        seen.expired = header.get("expired", 0)
        seen._current()
        return seen


def saved_with_generations(data: bytes) -> bool:
    """Whether a saved seen-set is an expiring one's (``to_bytes`` here), not a plain set's."""
    size = int.from_bytes(data[:4], "big") if len(data) >= 4 else 0
    return size < len(data) and _header(data[4 : 4 + size]) is not None


def _header(raw: bytes) -> dict[str, Any] | None:
    try:
        header = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    return header if isinstance(header, dict) and header.get("format") == "generations" else None


def _holds(gen: SeenSet, fps: list[int]) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """Which of ``fps`` the generation holds, without marking any."""
    return np.array(gen.holds(fps), dtype=bool)
