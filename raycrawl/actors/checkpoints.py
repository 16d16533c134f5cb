"""Taking and loading a checkpoint: one consistent cut of the shards, the seen-set and the coordinator.

The coordinator calls ``take`` only when the crawl is at rest (no fetch task running, every result settled and
recorded, no link held by a shard or on its way between shards), so the cut has no URL that is seen but not
queued: every URL the seen-set has seen is queued or leased in a shard (leased ones are saved as queued)
(docs/architecture.md, invariants 3 and 6).
"""

from __future__ import annotations

import json
import time
import zlib
from dataclasses import dataclass

import ray

from raycrawl.actors.crew import Crew
from raycrawl.adapters.snapshots import SnapshotStore
from raycrawl.core.checkpoint_state import CheckpointState


@dataclass(frozen=True, slots=True)
class Loaded:
    checkpoint_id: int
    state: CheckpointState  # the coordinator's part
    shards: list[bytes]
    dedup: list[bytes]  # one part per seen-set partition


def take(store: SnapshotStore, checkpoint_id: int, crew: Crew, state: CheckpointState) -> dict[str, float]:
    """Snapshot every actor (one batched ray.get), then commit all parts at once. Returns timing and size: the
    bytes of the parts and of the files the actors wrote beside them (what changed in queues and seen-sets)."""
    started = time.monotonic()
    shards, partitions = crew.snapshot_refs()
    answers: list[tuple[bytes, int]] = ray.get(shards + partitions)
    blobs = [blob for blob, _ in answers]
    files = sum(written for _, written in answers)
    parts = {f"shard-{i}": blob for i, blob in enumerate(blobs[: len(shards)])}
    parts.update({f"dedup-{i}": blob for i, blob in enumerate(blobs[len(shards) :])})
    if state.dedup_partitions != len(partitions) or state.num_shards != len(shards):
        raise ValueError(f"checkpoint state for {state.num_shards} shards and {state.dedup_partitions} partitions")
    parts["coordinator"] = zlib.compress(json.dumps(state.to_dict()).encode(), 3)
    written = store.commit(checkpoint_id, parts)
    return {"seconds": round(time.monotonic() - started, 4), "bytes": written + files, "files_bytes": files}


def load(store: SnapshotStore) -> Loaded | None:
    latest = store.latest()
    if latest is None:
        return None
    checkpoint_id, parts = latest
    raw = json.loads(zlib.decompress(parts["coordinator"]))
    state = CheckpointState.from_dict(raw)
    shards = [parts[f"shard-{i}"] for i in range(state.num_shards)]
    # (a checkpoint from before partitions has one part, "dedup")
    dedup = [parts[f"dedup-{i}"] for i in range(state.dedup_partitions)] if "dedup" not in parts else [parts["dedup"]]
    return Loaded(checkpoint_id, state, shards, dedup)


def saved_state(store: SnapshotStore) -> CheckpointState | None:
    """The coordinator's part of the committed checkpoint alone (its settings, counts ...), without the shards
    and the seen-set: what a resume checks before it starts anything."""
    latest = store.latest(only=("coordinator",))
    if latest is None:
        return None
    return CheckpointState.from_dict(json.loads(zlib.decompress(latest[1]["coordinator"])))
