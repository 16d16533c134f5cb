"""How many frontier shards and seen-set partitions a crawl has, and which shard owns a host.

CRC32, never Python's ``hash()``: string hashing is salted per process, and every process (coordinator,
restarted actors, a resumed crawl) must route a host to the same shard.
"""

from __future__ import annotations

import zlib

# Seen-set partitions by default: one per this many CPUs of the cluster (a partition checks ~a million URLs a second,
# and a cluster of that many CPUs finds far fewer: more partitions only cost round trips).
CPUS_PER_PARTITION = 8


def shard_for(host: str, num_shards: int) -> int:
    return zlib.crc32(host.encode("utf-8")) % num_shards


def actor_counts(
    shards: int | None, partitions: int | None, cpus: int, resumed: tuple[int, int] | None = None
) -> tuple[int, int]:
    """(shards, seen-set partitions): a resumed crawl's, whatever is asked (hosts are routed by crc32(host) % shards
    and fingerprints by fp % partitions: other counts would send them elsewhere); else those asked, else one shard
    per CPU (at least 2) and one partition per ``CPUS_PER_PARTITION`` CPUs (at least 1)."""
    if resumed is not None:
        return resumed
    return shards or max(2, cpus), partitions or max(1, cpus // CPUS_PER_PARTITION)
