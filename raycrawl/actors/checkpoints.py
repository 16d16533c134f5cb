"""Taking and loading a checkpoint: one consistent cut of the shards, the seen-set and the coordinator.

The coordinator calls ``take`` only when the crawl is quiet (no fetch task running, every result settled and
recorded, no link held by a shard or on its way between shards), so the cut has no URL that is seen but not
queued: every URL the seen-set has seen is queued or leased in a shard (leased ones are saved as queued)
(docs/architecture.md, invariants 3 and 6).
"""

from __future__ import annotations

import json
import time
import zlib
from dataclasses import dataclass
from typing import Any

import ray

from raycrawl.actors.crew import Crew
from raycrawl.adapters.snapshots import SnapshotStore

FORMAT = 1


@dataclass(frozen=True, slots=True)
class Loaded:
    checkpoint_id: int
    state: dict[str, Any]  # the coordinator's part
    shards: list[bytes]
    dedup: list[bytes]  # one part per seen-set partition


def take(store: SnapshotStore, checkpoint_id: int, crew: Crew, state: dict[str, Any]) -> dict[str, float]:
    """Snapshot every actor (one batched ray.get), then commit all parts at once. Returns timing and size."""
    started = time.monotonic()
    shards, partitions = crew.snapshot_refs()
    blobs: list[bytes] = ray.get(shards + partitions)
    parts = {f"shard-{i}": blob for i, blob in enumerate(blobs[: len(shards)])}
    parts.update({f"dedup-{i}": blob for i, blob in enumerate(blobs[len(shards) :])})
    state = {**state, "dedup_partitions": len(partitions)}
    parts["coordinator"] = zlib.compress(json.dumps({"format": FORMAT, **state}).encode(), 3)
    written = store.commit(checkpoint_id, parts)
    return {"seconds": round(time.monotonic() - started, 4), "bytes": written}


def load(store: SnapshotStore) -> Loaded | None:
    latest = store.latest()
    if latest is None:
        return None
    checkpoint_id, parts = latest
    state = json.loads(zlib.decompress(parts["coordinator"]))
    shards = [parts[f"shard-{i}"] for i in range(state["num_shards"])]
    partitions = state.get("dedup_partitions")  # (a checkpoint from before partitions has one part, "dedup")
    dedup = [parts[f"dedup-{i}"] for i in range(partitions)] if partitions else [parts["dedup"]]
    return Loaded(checkpoint_id, state, shards, dedup)


def saved_state(store: SnapshotStore) -> dict[str, Any] | None:
    """The coordinator's part of the committed checkpoint alone (its settings, counts ...), without the shards
    and the seen-set: what a resume checks before it starts anything."""
    latest = store.latest(only=("coordinator",))
    if latest is None:
        return None
    state: dict[str, Any] = json.loads(zlib.decompress(latest[1]["coordinator"]))
    return state
