"""DedupActor: the crawl's seen-set, answering for a whole batch of fingerprints per call.

Fingerprints travel as the raw bytes of an ``array('Q')`` and the answer as one byte per fingerprint:
two flat buffers instead of a pickled Python object per URL.
"""

from __future__ import annotations

from array import array
from typing import Literal

import ray

from raycrawl.core.seen import BloomSeenSet, ExactSeenSet, SeenSet


def pack_fingerprints(fps: list[int]) -> bytes:
    return array("Q", fps).tobytes()


@ray.remote(num_cpus=0, max_restarts=0)
class DedupActor:
    def __init__(self, kind: Literal["exact", "bloom"], capacity: int, error_rate: float) -> None:
        self._kind, self._capacity, self._error_rate = kind, capacity, error_rate
        self._seen: SeenSet = ExactSeenSet() if kind == "exact" else BloomSeenSet(capacity, error_rate)

    def snapshot(self) -> bytes:
        return self._seen.to_bytes()

    def restore(self, data: bytes) -> None:
        if self._kind == "exact":
            self._seen = ExactSeenSet.from_bytes(data)
        else:
            self._seen = BloomSeenSet.from_bytes(data, self._capacity, self._error_rate)

    def add_new(self, packed: bytes) -> bytes:
        fps = array("Q")
        fps.frombytes(packed)
        return bytes(self._seen.add_new(fps))

    def stats(self) -> dict[str, float]:
        return self._seen.stats()

    def node(self) -> str:
        """The Ray node this partition runs on."""
        return str(ray.get_runtime_context().get_node_id())
