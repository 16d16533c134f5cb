"""The seen-set split into partitions by fingerprint (pure: no Ray).

A URL's fingerprint is a 64-bit hash, so ``fingerprint % n`` spreads URLs evenly over ``n`` partitions; each
partition is a dedup actor that sees only its share: a shard asks each partition about its share of a batch in one
call (core/link_routing.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def partition_of(fingerprint: int, partitions: int) -> int:
    """The partition that owns a fingerprint (shards route links by it: core/link_routing.py; payload keys too:
    core/captures.py)."""
    return fingerprint % partitions


# Figures that add up over partitions; the rest (rates, settings) are the same in each and kept as they are.
_SUMMED = frozenset(
    {
        "size",
        "checks",
        "hits",
        "memory_bytes",
        "expected_false_drops",
        "capacity",
        "capacity_now",
        "grown",
        "payloads",
        "expired",
    }
)


def merge_stats(stats: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The seen-set's figures as one: sizes and counts summed; settings (the error rate) as they are."""
    merged: dict[str, Any] = {}
    for part in stats:
        for key, value in part.items():
            if key in _SUMMED:
                merged[key] = merged.get(key, 0) + value
            else:
                merged.setdefault(key, value)
    if "expected_false_drops" in merged:
        merged["expected_false_drops"] = round(merged["expected_false_drops"], 3)
    merged["partitions"] = len(stats)
    return merged


# A partition's checkpoint part: its seen-set, and (when it holds any) the payloads it has seen captured
# (core/captures.py). A part that does not start with this is a seen-set alone, as every part was before.
_FRAMED = b"raycrawl-partition\x00"


def pack_part(seen: bytes, captures: bytes) -> bytes:
    if not captures:
        return seen
    return _FRAMED + len(seen).to_bytes(8, "big") + seen + captures


def unpack_part(part: bytes) -> tuple[bytes, bytes]:
    """(seen-set, captures) of a checkpoint part."""
    if not part.startswith(_FRAMED):
        return part, b""
    at = len(_FRAMED)
    size = int.from_bytes(part[at : at + 8], "big")
    at += 8
    return part[at : at + size], part[at + size :]
