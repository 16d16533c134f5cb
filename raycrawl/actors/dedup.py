"""DedupActor: the crawl's seen-set, answering for a whole batch of fingerprints per call.

Fingerprints travel as the raw bytes of an ``array('Q')`` and the answer as one byte per fingerprint:
two flat buffers instead of a pickled Python object per URL. A partition also keeps the payloads captured in the
crawl whose keys are its own (core/captures.py): fetch tasks ask it, once per batch of pages, which are duplicates.
"""

from __future__ import annotations

from array import array
from typing import Literal

import ray

from raycrawl.core.captures import Capture, CaptureRegistry, Claim
from raycrawl.core.partitions import pack_part, unpack_part
from raycrawl.core.seen import BloomSeenSet, ExactSeenSet, SeenSet


def pack_fingerprints(fps: list[int]) -> bytes:
    return array("Q", fps).tobytes()


@ray.remote(num_cpus=0, max_restarts=0)
class DedupActor:
    def __init__(self, kind: Literal["exact", "bloom"], capacity: int, error_rate: float) -> None:
        self._kind, self._capacity, self._error_rate = kind, capacity, error_rate
        self._seen: SeenSet = ExactSeenSet() if kind == "exact" else BloomSeenSet(capacity, error_rate)
        self._captures = CaptureRegistry()

    def snapshot(self) -> bytes:
        return pack_part(self._seen.to_bytes(), self._captures.to_bytes() if len(self._captures) else b"")

    def restore(self, data: bytes) -> None:
        seen, captures = unpack_part(data)
        if self._kind == "exact":
            self._seen = ExactSeenSet.from_bytes(seen)
        else:
            self._seen = BloomSeenSet.from_bytes(seen, self._capacity, self._error_rate)
        self._captures = CaptureRegistry.from_bytes(captures)

    def claim_payloads(self, claims: list[Claim]) -> list[Capture | None]:
        return self._captures.claim(claims)

    def add_new(self, packed: bytes) -> bytes:
        fps = array("Q")
        fps.frombytes(packed)
        return bytes(self._seen.add_new(fps))

    def stats(self) -> dict[str, float]:
        return self._seen.stats() | {"payloads": len(self._captures)}

    def node(self) -> str:
        """The Ray node this partition runs on."""
        return str(ray.get_runtime_context().get_node_id())
