"""One seen-set partition's state -- its fingerprints and the payload captures it answers for -- saved whole or as
what changed since the last save (docs/architecture.md, "Checkpoints").

The whole state is the checkpoint part every partition wrote before (``pack_part`` of the seen-set and the
captures). What changed is the same frame around the fingerprints added since the last save (8 bytes each) and the
capture rows set since. ``restore`` takes a whole state and the changes after it, in order: the same state again.
"""

from __future__ import annotations

import itertools
import time
from array import array
from collections.abc import Callable
from typing import Literal

from raycrawl.core.captures import Capture, CaptureRegistry, Claim
from raycrawl.core.partitions import pack_part, unpack_part
from raycrawl.core.seen import BloomSeenSet, ExactSeenSet, SeenSet
from raycrawl.core.seen_expiry import ExpiringSeenSet, saved_with_generations
from raycrawl.core.sharding import shard_for
from raycrawl.core.urls import host_key

SeenKind = Literal["exact", "bloom"]
Clock = Callable[[], float]


UNBOUNDED_TTL = 100 * 365 * 86400.0  # (marks saved with an expiry, restored by a crawl without one: kept)
# New marks kept between two checkpoints, by the shard that made them, for a lost shard's rebuild (8 bytes each);
# past it (a crawl with rare checkpoints) they stop and a lost shard rolls the crawl back instead
SINCE_CUT_MARKS = 4_000_000


class SeenPartition:
    def __init__(
        self, kind: SeenKind, capacity: int, error_rate: float, ttl: float | None = None, clock: Clock = time.time
    ) -> None:
        self._kind, self._capacity, self._error_rate = kind, capacity, error_rate
        self._ttl, self._clock = ttl, clock  # marks expire after ttl (core/seen_expiry.py); None: never
        self.seen: SeenSet | ExpiringSeenSet = self._empty()
        self.captures = CaptureRegistry()
        # The marks each shard made since the last committed checkpoint (a shard that is lost is rebuilt from that
        # checkpoint: these are the URLs it had taken as new since, core/link_routing.py ``reclaim``)
        self._since: dict[int, array[int]] = {}
        self._since_kept: int | None = 0  # marks in it; None: past SINCE_CUT_MARKS, none kept until the next checkpoint
        self._incarnations: dict[int, int] = {}  # each rebuilt shard's incarnation: an older one's asks mark nothing

    def _inner(self) -> SeenSet:
        return ExactSeenSet() if self._kind == "exact" else BloomSeenSet(self._capacity, self._error_rate)

    def _load(self, data: bytes) -> SeenSet:
        if self._kind == "exact":
            return ExactSeenSet.from_bytes(data)
        return BloomSeenSet.from_bytes(data, self._capacity, self._error_rate)

    def _empty(self) -> SeenSet | ExpiringSeenSet:
        return self._inner() if self._ttl is None else ExpiringSeenSet(self._inner, self._ttl, self._clock)

    def add_new(self, packed: bytes, asker: int | None = None, incarnation: int = 0) -> bytes:
        """Fingerprints as the raw bytes of an ``array('Q')``; one byte each: 1 if it was new. ``asker``: the shard
        asking, whose new marks are kept until the next checkpoint commits; an ask of a shard's ``incarnation``
        older than one rebuilt since (a call of a process that died, come late) marks nothing."""
        fps = _unpacked(packed)
        if asker is not None and incarnation < self._incarnations.get(asker, 0):
            return bytes(len(fps))
        answer = bytes(self.seen.add_new(fps))
        if asker is not None and self._since_kept is not None:
            marks = self._since.setdefault(asker, array("Q"))
            before = len(marks)
            marks.extend(itertools.compress(fps, answer))
            self._since_kept += len(marks) - before
            if self._since_kept > SINCE_CUT_MARKS:
                self._since, self._since_kept = {}, None
        return answer

    def lost_shard(self, shard: int, shards: int, incarnation: int) -> tuple[bytes, bool]:
        """Shard ``shard`` (of ``shards``) was lost, and is rebuilt as ``incarnation``: the marks it made since the
        last checkpoint, in all its incarnations (packed), and whether it can be rebuilt alone -- the marks were all
        kept, and the captures its URLs set since could be undone (core/captures.py ``lost``)."""
        self._incarnations[shard] = max(incarnation, self._incarnations.get(shard, 0))
        if self._since_kept is None:
            return b"", False
        marks = self._since.get(shard, array("Q"))
        undone = self.captures.lost(lambda url: shard_for(host_key(url), shards) == shard)
        return marks.tobytes(), undone

    def checkpointed(self) -> None:
        """A checkpoint committed: it holds every mark and capture so far."""
        self._since, self._since_kept = {}, 0
        self.captures.checkpointed()

    def touch(self, packed: bytes) -> None:
        """Renew these marks (with an expiry: they last a ttl from now; without, they are marked)."""
        fps = _unpacked(packed)
        if isinstance(self.seen, ExpiringSeenSet):
            self.seen.touch(fps)
        else:
            self.seen.add_new(fps)

    def claim_payloads(self, claims: list[Claim]) -> list[Capture | None]:
        return self.captures.claim(claims)

    def whole(self) -> bytes:
        """Everything, as one checkpoint part (what was changed before it is no longer "changed")."""
        return self.whole_later()()

    def whole_later(self) -> Callable[[], bytes]:
        """Everything as it is now, encoded when called: the seen-set is copied now (8 bytes a fingerprint, in C),
        the captures' rows too (a dict copy); encoding them can wait for another thread."""
        self.take_changes()
        seen, captures = self.seen.to_bytes(), self.captures.copy()
        return lambda: pack_part(seen, captures.to_bytes() if len(captures) else b"")

    def take_changes(self) -> bytes:
        """What changed since the last ``whole`` or ``take_changes`` (b"" for nothing)."""
        added, captured = self.seen.take_added(), self.captures.take_changes()
        return pack_part(added, captured) if added or captured else b""

    def restore(self, whole: bytes | None, changes: list[bytes] = []) -> None:  # noqa: B006 (never mutated)
        """The state ``whole`` (None: empty) and ``changes`` made after it, in order."""
        self._since, self._since_kept = {}, 0
        if whole is None:
            self.seen, self.captures = self._empty(), CaptureRegistry()
        else:
            seen, captured = unpack_part(whole)
            if self._ttl is not None or saved_with_generations(seen):
                ttl = self._ttl or UNBOUNDED_TTL
                self.seen = ExpiringSeenSet.from_bytes(seen, self._inner, self._load, ttl, self._clock)
            else:
                self.seen = self._load(seen)
            self.captures = CaptureRegistry.from_bytes(captured)
        for change in changes:
            added, captured = unpack_part(change)
            self.touch(added)  # (marks made or renewed after the whole: renewed again, never shortened)
            self.captures.apply(captured)
        self.take_changes()  # (restored, not changed)

    def stats(self) -> dict[str, float]:
        return self.seen.stats() | {"payloads": len(self.captures)}


def _unpacked(packed: bytes) -> array[int]:
    fps = array("Q")
    fps.frombytes(packed)
    return fps
