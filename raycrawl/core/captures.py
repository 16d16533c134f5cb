"""Payloads this crawl has stored: the first URL each payload was captured under (pure: no Ray).

The same bytes come back under other URLs all the time: ``/`` and ``/index.html``, session or sort parameters,
print views, mirrors on other hosts. A page whose payload was already stored under another URL in this crawl is
written to WARC as a ``revisit`` record of the identical-payload-digest profile naming that first capture (WARC 1.1
6.7.2, what Heritrix's duplicate reduction writes) instead of the body again; its output record says which URL
(``duplicate_of``).

The registry is kept by the seen-set partitions, each for the payloads that ``partition_of_key`` gives it, and saved
with them at every checkpoint. A checkpoint is cut only when no fetch is under way, so every capture it names was
settled, and its output committed, in that checkpoint; a rollback restores both together. (A partition rebuilt
between checkpoints forgets the captures named since the last one: their payloads are then stored whole again,
which costs bytes, never a record.)

Keys are the first 16 bytes of the payload's sha256: a collision (2^-64 for a billion payloads) would be needed to
write a revisit for a payload that was never stored. An entry costs ~250 bytes of a partition's memory.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from raycrawl.core.partitions import partition_of
from raycrawl.core.records import compact_pickle

KEY_BYTES = 16


@compact_pickle  # (claims cross Ray by the batch, one per page: core/records.py)
@dataclass(frozen=True, slots=True)
class Capture:
    """A stored payload's response record: the URL it was requested as, the record's id and its WARC-Date."""

    url: str
    record_id: str
    date: str


# (payload key, the capture that would be the first of it) -- one claim of a fetch task, for one page
Claim = tuple[bytes, Capture]


def payload_key(sha256_hex: str) -> bytes:
    return bytes.fromhex(sha256_hex[: 2 * KEY_BYTES])


def partition_of_key(key: bytes, partitions: int) -> int:
    return partition_of(int.from_bytes(key[:8], "big"), partitions)


def split_claims(claims: Sequence[Claim], partitions: int) -> dict[int, list[int]]:
    """The claims' positions by the partition that answers for them."""
    by_partition: dict[int, list[int]] = {}
    for i, (key, _) in enumerate(claims):
        by_partition.setdefault(partition_of_key(key, partitions), []).append(i)
    return by_partition


class CaptureRegistry:
    """The first capture of each payload key this partition answers for."""

    def __init__(self) -> None:
        self._first: dict[bytes, tuple[str, str, str]] = {}
        self._changed: set[bytes] = set()  # keys set since take_changes
        # Since the last committed checkpoint: each key set, with what it held at that checkpoint (a lost shard's
        # captures go back to it), and the keys a revisit was told to name (those cannot go back)
        self._prior: dict[bytes, tuple[str, str, str] | None] = {}
        self._named: set[bytes] = set()

    def __len__(self) -> int:
        return len(self._first)

    def claim(self, claims: Sequence[Claim]) -> list[Capture | None]:
        """For each claim: None when its capture is the payload's first (it is stored whole, and others will refer
        to it), else the first capture, which its revisit record is to name.

        A URL claiming a payload it already holds is fetching it again (a lease that expired, a URL crawled again
        after a rollback): its new capture replaces the old, which may not be in the output."""
        answers: list[Capture | None] = []
        for key, capture in claims:
            first = self._first.get(key)
            if first is None or first[0] == capture.url:
                if key not in self._prior:
                    self._prior[key] = first
                self._first[key] = (capture.url, capture.record_id, capture.date)
                self._changed.add(key)
                answers.append(None)
            else:
                if key in self._prior:
                    self._named.add(key)
                answers.append(Capture(*first))
        return answers

    def checkpointed(self) -> None:
        """A checkpoint committed: it holds every capture so far."""
        self._prior, self._named = {}, set()

    def lost(self, owned: Callable[[str], bool]) -> bool:
        """A frontier shard was lost: the captures set since the last checkpoint by its URLs (``owned``) were never
        committed, and go back to what the checkpoint held. False, and nothing changed, when a revisit record was
        told to name one of them (that record would name nothing: the crawl must go back whole)."""
        lost = [key for key in self._prior if owned(self._first[key][0])]
        if any(key in self._named for key in lost):
            return False
        for key in lost:
            prior = self._prior.pop(key)
            self._changed.discard(key)
            if prior is None:
                del self._first[key]
            else:
                self._first[key] = prior
        return True

    def to_bytes(self) -> bytes:
        return _encode(self._first.items())

    def copy(self) -> CaptureRegistry:
        """The rows as they are now (a dict copy: cheap), to encode elsewhere while this one changes."""
        registry = CaptureRegistry()
        registry._first = dict(self._first)
        return registry

    def take_changes(self) -> bytes:
        """The keys set since the last call, as ``to_bytes`` encodes them (b"" for none): applied in order after
        the whole registry of an earlier cut, they make this one (``apply``)."""
        changed, self._changed = self._changed, set()
        return _encode((key, self._first[key]) for key in changed) if changed else b""

    def apply(self, data: bytes) -> None:
        """Rows of ``to_bytes`` or ``take_changes``, set over what is here (not counted as changes)."""
        if data:
            for key, url, record_id, date in json.loads(zlib.decompress(data)):
                self._first[bytes.fromhex(key)] = (url, record_id, date)

    @classmethod
    def from_bytes(cls, data: bytes) -> CaptureRegistry:
        registry = cls()
        registry.apply(data)
        return registry


def _encode(items: Iterable[tuple[bytes, tuple[str, str, str]]]) -> bytes:
    rows = [[key.hex(), *first] for key, first in items]
    return zlib.compress(json.dumps(rows, separators=(",", ":")).encode(), 3)
