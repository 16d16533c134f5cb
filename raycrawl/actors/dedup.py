"""DedupActor: the crawl's seen-set, answering for a whole batch of fingerprints per call.

Fingerprints travel as the raw bytes of an ``array('Q')`` and the answer as one byte per fingerprint:
two flat buffers instead of a pickled Python object per URL. A partition also keeps the payloads captured in the
crawl whose keys are its own (core/captures.py): fetch tasks ask it, once per batch of pages, which are duplicates.
With the crawl's storage, a checkpoint copies only what changed in the partition since the last one
(adapters/seen_segments.py); without, the partition is the checkpoint's part, whole.
"""

from __future__ import annotations

import functools
import os
from array import array

import ray

from raycrawl.actors import crew_registry
from raycrawl.actors.wire import claims_of, pack
from raycrawl.actors.worker_heap import freeze_startup_heap
from raycrawl.adapters.seen_segments import SeenSegments, refs_of
from raycrawl.adapters.snapshots import StoreUnavailable
from raycrawl.adapters.storage import StorageError, open_storage
from raycrawl.core.seen_partition import SeenKind, SeenPartition


def pack_fingerprints(fps: list[int]) -> bytes:
    return array("Q", fps).tobytes()


def unpack_fingerprints(packed: bytes) -> list[int]:
    fps = array("Q")
    fps.frombytes(packed)
    return fps.tolist()


# No task events for its many calls (as the frontier shards': actors/frontier.py).
@ray.remote(num_cpus=0, max_restarts=0, enable_task_events=False)
class DedupActor:
    def __init__(
        self,
        kind: SeenKind,
        capacity: int,
        error_rate: float,
        partition: int = 0,
        out: str | None = None,
        filesystem: str | None = None,
        ttl: float | None = None,
        owner: str | None = None,
    ) -> None:
        """``owner``: the crawl's coordinator's name; this detached actor ends itself once it is gone for good
        (actors/crew_registry.py)."""
        self._id = partition
        self._state = SeenPartition(kind, capacity, error_rate, ttl)  # (ttl: marks expire, core/seen_expiry.py)
        storage = open_storage(out, filesystem) if out else None
        self._segments = SeenSegments(storage, partition, self._state) if storage is not None else None
        if owner is not None:
            crew_registry.watch_owner(owner, functools.partial(os._exit, 0))  # (nothing of it outlives the crawl)
        freeze_startup_heap()

    def snapshot(self) -> tuple[bytes, int]:
        """The checkpoint's part of this partition, and the bytes it wrote to the crawl's storage for it."""
        if self._segments is None:
            return self._state.whole(), 0
        try:
            return self._segments.checkpoint(), self._segments.written
        except StorageError as exc:
            raise StoreUnavailable(f"seen-set partition {self._id} cannot write its changes: {exc}") from None

    def checkpointed(self) -> None:
        self._state.checkpointed()
        if self._segments is not None:
            self._segments.committed()

    def restore(self, data: bytes) -> None:
        refs = refs_of(data)
        if refs is None:
            self._state.restore(data)
            return
        if self._segments is None:
            raise StoreUnavailable("a checkpoint whose seen-set is in the crawl's storage, and no storage to read")
        try:
            self._segments.restore(refs)
        except StorageError as exc:
            raise StoreUnavailable(f"seen-set partition {self._id} cannot be restored: {exc}") from None

    def claim_payloads(self, packed: bytes) -> bytes:
        """A fetch task's claims, packed (actors/wire.py); the answers, packed the same way."""
        return pack(self._state.claim_payloads(claims_of(packed)))

    def add_new(self, packed: bytes, asker: int | None = None, incarnation: int = 0) -> bytes:
        return self._state.add_new(packed, asker, incarnation)

    def lost_shard(self, shard: int, shards: int, incarnation: int) -> tuple[bytes, bool]:
        """A frontier shard was lost (core/seen_partition.py ``lost_shard``)."""
        return self._state.lost_shard(shard, shards, incarnation)

    def touch(self, packed: bytes) -> None:
        """Renew marks (a continuous crawl's URLs scheduled again: they must not come back as new)."""
        self._state.touch(packed)

    def stats(self) -> dict[str, float]:
        return self._state.stats()

    def node(self) -> str:
        """The Ray node this partition runs on."""
        return str(ray.get_runtime_context().get_node_id())

    def close(self) -> None:
        if self._segments is not None:
            self._segments.close()
