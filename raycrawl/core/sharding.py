"""Which frontier shard owns a host.

CRC32, never Python's ``hash()``: string hashing is salted per process, and every process (coordinator,
restarted actors, a resumed crawl) must route a host to the same shard.
"""

from __future__ import annotations

import zlib


def shard_for(host: str, num_shards: int) -> int:
    return zlib.crc32(host.encode("utf-8")) % num_shards
