"""The seen-set split into partitions by fingerprint (pure: no Ray).

A URL's fingerprint is a 64-bit hash, so ``fingerprint % n`` spreads URLs evenly over ``n`` partitions; each
partition is a dedup actor that sees only its share. A batch is split once, each partition answers for its part
in one call, and the answers are put back in the batch's order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def partition_of(fingerprint: int, partitions: int) -> int:
    return fingerprint % partitions


def split(fingerprints: Sequence[int], partitions: int) -> list[list[int]]:
    """The batch's fingerprints per partition, each in the batch's order."""
    parts: list[list[int]] = [[] for _ in range(partitions)]
    for fp in fingerprints:
        parts[fp % partitions].append(fp)
    return parts


def merge_answers(fingerprints: Sequence[int], answers: Sequence[bytes], partitions: int) -> bytes:
    """One answer byte per fingerprint, in the batch's order, from each partition's answers for its part."""
    cursors = [0] * partitions
    out = bytearray(len(fingerprints))
    for i, fp in enumerate(fingerprints):
        p = fp % partitions
        out[i] = answers[p][cursors[p]]
        cursors[p] += 1
    if any(c != len(a) for c, a in zip(cursors, answers, strict=True)):
        raise ValueError("a partition answered for a different number of fingerprints than it was asked")
    return bytes(out)


# Figures that add up over partitions; the rest (rates, settings) are the same in each and kept as they are.
_SUMMED = frozenset(
    {"size", "checks", "hits", "memory_bytes", "expected_false_drops", "capacity", "capacity_now", "grown", "payloads"}
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
