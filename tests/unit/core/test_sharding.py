"""How many shards and partitions a crawl has, and which shard owns a host (core/sharding.py)."""

from __future__ import annotations

import zlib

from raycrawl.core.sharding import actor_counts, shard_for


def test_counts_follow_the_cpus_unless_asked_and_a_resume_keeps_its_own() -> None:
    assert actor_counts(None, None, cpus=1) == (2, 1)  # (at least two shards, one partition)
    assert actor_counts(None, None, cpus=32) == (32, 4)  # one shard a CPU, one partition per 8 CPUs
    assert actor_counts(5, 3, cpus=32) == (5, 3)
    # A resume routes hosts and fingerprints as its checkpoint did, whatever is asked now.
    assert actor_counts(5, 3, cpus=32, resumed=(7, 2)) == (7, 2)


def test_a_host_is_routed_by_crc32_never_by_the_per_process_salted_hash() -> None:
    assert shard_for("example.com", 16) == zlib.crc32(b"example.com") % 16 == 9
