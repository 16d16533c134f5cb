"""The coordinator's state that its mixins (Recovery, Reporting) both use: declared once, owned by the
Coordinator, which sets every one of these in its ``__init__``."""

from __future__ import annotations

from typing import Any

from raycrawl.actors.metrics import CrawlMetrics
from raycrawl.actors.output_cut import OutputParts
from raycrawl.actors.seen_partitions import SeenPartitions
from raycrawl.adapters.snapshots import SnapshotStore
from raycrawl.config import CrawlConfig
from raycrawl.core.records import Lease
from raycrawl.core.stats import CrawlStats


class CoordinatorState:
    cfg: CrawlConfig
    out_dir: str
    store: SnapshotStore
    num_shards: int
    shards: list[Any]
    dedup: SeenPartitions
    output: OutputParts
    stats: CrawlStats
    metrics: CrawlMetrics
    _in_flight: dict[Any, dict[tuple[int, int], Lease]]  # each fetch task's stream, with its unreported leases
    _checkpoints: list[dict[str, float]]
    _checkpoint_error: str | None
