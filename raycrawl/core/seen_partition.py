"""One seen-set partition's state -- its fingerprints and the payload captures it answers for -- saved whole or as
what changed since the last save (docs/architecture.md, "Checkpoints").

The whole state is the checkpoint part every partition wrote before (``pack_part`` of the seen-set and the
captures). What changed is the same frame around the fingerprints added since the last save (8 bytes each) and the
capture rows set since. ``restore`` takes a whole state and the changes after it, in order: the same state again.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from typing import Literal

from raycrawl.core.captures import Capture, CaptureRegistry, Claim
from raycrawl.core.partitions import pack_part, unpack_part
from raycrawl.core.seen import BloomSeenSet, ExactSeenSet, SeenSet

SeenKind = Literal["exact", "bloom"]


class SeenPartition:
    def __init__(self, kind: SeenKind, capacity: int, error_rate: float) -> None:
        self._kind, self._capacity, self._error_rate = kind, capacity, error_rate
        self.seen: SeenSet = self._empty()
        self.captures = CaptureRegistry()

    def _empty(self) -> SeenSet:
        return ExactSeenSet() if self._kind == "exact" else BloomSeenSet(self._capacity, self._error_rate)

    def add_new(self, packed: bytes) -> bytes:
        """Fingerprints as the raw bytes of an ``array('Q')``; one byte each: 1 if it was new."""
        fps = array("Q")
        fps.frombytes(packed)
        return bytes(self.seen.add_new(fps))

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
        if whole is None:
            self.seen, self.captures = self._empty(), CaptureRegistry()
        else:
            seen, captured = unpack_part(whole)
            if self._kind == "exact":
                self.seen = ExactSeenSet.from_bytes(seen)
            else:
                self.seen = BloomSeenSet.from_bytes(seen, self._capacity, self._error_rate)
            self.captures = CaptureRegistry.from_bytes(captured)
        for change in changes:
            added, captured = unpack_part(change)
            self.add_new(added)
            self.captures.apply(captured)
        self.take_changes()  # (restored, not changed)

    def stats(self) -> dict[str, float]:
        return self.seen.stats() | {"payloads": len(self.captures)}
