"""The coordinator's part of a checkpoint, typed: written in one place (the coordinator's cut), read as
attributes wherever a checkpoint is restored or a resume is checked. Older checkpoints read too (the fields they
lack take what those crawls meant)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

FORMAT = 1


@dataclass(frozen=True, slots=True)
class CheckpointState:
    num_shards: int  # hosts are routed by crc32(host) % num_shards: a resume keeps it
    dedup: str  # the seen-set's kind ("exact" or "bloom")
    dedup_partitions: int  # fingerprints are routed by fp % partitions: a resume keeps it
    config: dict[str, Any] = field(default_factory=dict)  # the crawl's settings (config.saved_settings)
    scope_hosts: list[str] = field(default_factory=list)  # the hosts the crawl's seeds put in its scope
    parts: list[str] = field(default_factory=list)  # the output as of this cut (actors/output_cut.py)
    stats: dict[str, Any] = field(default_factory=dict)  # CrawlStats.to_dict
    # URL rows that waited in the coordinator when links still passed through it (older checkpoints only).
    pushes: list[list[Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, **asdict(self)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CheckpointState:
        return cls(
            num_shards=int(d["num_shards"]),
            dedup=str(d.get("dedup", "exact")),
            # (a checkpoint from before partitions has one seen-set part)
            dedup_partitions=int(d.get("dedup_partitions") or 1),
            config=dict(d.get("config") or {}),
            scope_hosts=list(d.get("scope_hosts", [])),
            parts=list(d.get("parts", [])),
            stats=dict(d.get("stats", {})),
            pushes=list(d.get("pushes", [])),
        )

    @property
    def saved_settings(self) -> dict[str, Any]:
        """The settings a resume runs with (checkpoints from before settings were saved hold only the seen-set's
        kind)."""
        return self.config or {"dedup": self.dedup}
