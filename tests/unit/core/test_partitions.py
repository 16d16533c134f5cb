"""The seen-set's partitioning (core/partitions.py): pure, no Ray."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from raycrawl.core.partitions import merge_stats, partition_of
from raycrawl.core.seen import ExactSeenSet


def split(fingerprints: list[int], partitions: int) -> list[list[int]]:
    parts: list[list[int]] = [[] for _ in range(partitions)]
    for fp in fingerprints:
        parts[partition_of(fp, partitions)].append(fp)
    return parts


def merge_answers(fingerprints: list[int], answers: list[bytes], partitions: int) -> bytes:
    cursors = [0] * partitions
    out = bytearray(len(fingerprints))
    for i, fp in enumerate(fingerprints):
        p = partition_of(fp, partitions)
        out[i] = answers[p][cursors[p]]
        cursors[p] += 1
    return bytes(out)


@given(st.lists(st.integers(0, 2**64 - 1), max_size=300), st.integers(1, 9))
def test_partitioned_answers_are_the_answers_of_one_seen_set(fps: list[int], partitions: int) -> None:
    """Any batch, any partition count: asking each partition for its share and merging the answers is the same as
    asking one seen-set for the whole batch (duplicates within the batch included)."""
    whole = ExactSeenSet()
    expected = bytes(whole.add_new(fps))
    sets = [ExactSeenSet() for _ in range(partitions)]
    parts = split(fps, partitions)
    assert all(partition_of(fp, partitions) == p for p, part in enumerate(parts) for fp in part)
    answers = [bytes(s.add_new(part)) if part else b"" for s, part in zip(sets, parts, strict=True)]
    assert merge_answers(fps, answers, partitions) == expected


def test_partitions_share_the_urls_evenly() -> None:
    rng = random.Random(7)
    counts = [len(part) for part in split([rng.getrandbits(64) for _ in range(80_000)], 8)]
    assert max(counts) < 1.05 * min(counts)


def test_stats_add_up_and_settings_stay() -> None:
    merged = merge_stats(
        [
            {"size": 3, "checks": 10, "hits": 2, "memory_bytes": 100, "error_rate": 0.001, "grown": 1},
            {"size": 4, "checks": 5, "hits": 1, "memory_bytes": 50, "error_rate": 0.001, "grown": 0},
        ]
    )
    assert merged == {
        "size": 7, "checks": 15, "hits": 3, "memory_bytes": 150, "error_rate": 0.001, "grown": 1, "partitions": 2,
    }  # fmt: skip
