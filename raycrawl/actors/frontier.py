"""FrontierShardActor: a FrontierShard made remote. The shard is the single source of truth for its hosts."""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from typing import Any

import ray

from raycrawl.core.frontier import FrontierSettings, FrontierShard, ShardReply
from raycrawl.core.records import Ack, UrlEntry


@ray.remote(num_cpus=0, max_restarts=0)
class FrontierShardActor:
    def __init__(self, shard_id: int, settings: FrontierSettings) -> None:
        self._shard = FrontierShard(shard_id, settings)

    def exchange(
        self, acks: Sequence[Ack], pushes: Sequence[UrlEntry], max_leases: int, horizon: float, drain: str | None
    ) -> ShardReply:
        return self._shard.exchange(acks, pushes, max_leases, horizon, drain)

    def release(self, lease_ids: Sequence[int], reason: str) -> None:
        self._shard.release(lease_ids, reason)

    def control(self, action: str, host: str, *args: Any) -> bool:
        """pause_host(host, reason) / resume_host(host) / set_delay(host, seconds or None)."""
        method = {"pause_host": self._shard.pause_host, "resume_host": self._shard.resume_host}.get(action)
        if method is not None:
            return bool(method(host, *args))
        return self._shard.set_delay(host, *args)

    def snapshot(self) -> bytes:
        return zlib.compress(json.dumps(self._shard.snapshot()).encode(), 3)

    def restore(self, data: bytes) -> None:
        self._shard.restore(json.loads(zlib.decompress(data)))

    def hosts(self) -> list[dict[str, Any]]:
        return self._shard.host_table()

    def counters(self) -> dict[str, int]:
        return dict(self._shard.counters) | self._shard.summary()
