"""Issue 33: seen marks that expire (core/seen_expiry.py), exact and Bloom, on an injected clock, without Ray."""

from __future__ import annotations

import pytest
from conftest import FakeClock
from hypothesis import given, settings
from hypothesis import strategies as st

from raycrawl.core.partitions import unpack_part
from raycrawl.core.seen import BloomSeenSet, ExactSeenSet, SeenSet
from raycrawl.core.seen_expiry import SPANS, ExpiringSeenSet
from raycrawl.core.seen_partition import SeenPartition

TTL = 100.0


def inner(kind: str) -> SeenSet:
    return ExactSeenSet() if kind == "exact" else BloomSeenSet(10_000, 1e-6)


@pytest.mark.parametrize("kind", ["exact", "bloom"])
def test_a_mark_lasts_its_ttl_then_the_url_is_new_again(kind: str) -> None:
    clock = FakeClock(1_000_000.0)
    seen = ExpiringSeenSet(lambda: inner(kind), TTL, clock)
    assert seen.add_new([1, 2, 2]) == [True, True, False]
    clock.now += TTL - 0.001
    assert seen.add_new([1, 3]) == [False, True]
    clock.now += TTL * (1 + 1 / SPANS)  # (at most a span more than the ttl)
    assert seen.add_new([1, 2]) == [True, True]
    assert seen.stats()["expired"] >= 2


@pytest.mark.parametrize("kind", ["exact", "bloom"])
def test_a_touched_mark_lasts_a_ttl_from_its_touch(kind: str) -> None:
    clock = FakeClock(1_000_000.0)
    seen = ExpiringSeenSet(lambda: inner(kind), TTL, clock)
    seen.add_new([7, 8])
    clock.now += TTL * 0.9
    seen.touch([7])
    clock.now += TTL * 0.9  # (1.8 ttl after 8 was seen: gone; 0.9 ttl after 7 was touched: still there)
    assert seen.add_new([7, 8]) == [False, True]


EVENTS = st.lists(st.tuples(st.floats(0.0, 3 * TTL), st.sampled_from(["add", "touch"]), st.integers(0, 5)), max_size=40)


@settings(max_examples=200, deadline=None)
@given(events=EVENTS)
def test_a_fingerprint_is_new_exactly_when_no_mark_of_it_is_younger_than_the_ttl(
    events: list[tuple[float, str, int]],
) -> None:
    """The model: a mark made at t is seen at t' when t' - t < ttl and not when t' - t >= ttl + ttl / SPANS (between,
    either is right: generations are dropped whole)."""
    clock = FakeClock(1_000_000.0)
    start = clock.now
    seen = ExpiringSeenSet(ExactSeenSet, TTL, clock)
    marked: dict[int, float] = {}
    for at, op, fp in sorted(events, key=lambda e: e[0]):
        clock.now = start + at
        age = clock.now - marked[fp] if fp in marked else None
        if op == "touch":
            seen.touch([fp])
            marked[fp] = clock.now
            continue
        new = seen.add_new([fp])[0]
        if age is not None and age < TTL:
            assert not new, (fp, age)
        elif age is None or age >= TTL * (1 + 1 / SPANS):
            assert new, (fp, age)
        if new:
            marked[fp] = clock.now


@pytest.mark.parametrize("kind", ["exact", "bloom"])
def test_a_partition_with_an_expiry_is_saved_and_restored_whole_and_by_its_changes(kind: str) -> None:
    clock = FakeClock(1_000_000.0)

    def partition() -> SeenPartition:
        return SeenPartition(kind, 10_000, 1e-6, ttl=TTL, clock=clock)  # type: ignore[arg-type]

    def packed(*fps: int) -> bytes:
        from array import array

        return array("Q", fps).tobytes()

    first = partition()
    first.add_new(packed(1, 2))
    clock.now += TTL / 2
    whole = first.whole()
    first.add_new(packed(3))
    first.touch(packed(1))
    changes = [first.take_changes()]
    again = partition()
    again.restore(whole, changes)
    assert again.add_new(packed(1, 2, 3, 4)) == bytes([0, 0, 0, 1])
    clock.now += TTL * 0.8  # (2 was seen 1.3 ttl ago; 1 was touched, 3 added, 0.8 ttl ago)
    assert again.add_new(packed(1, 2, 3)) == bytes([0, 1, 0])
    assert unpack_part(whole)[0][:4] != b""  # (saved with its generations)


def test_a_plain_checkpoint_restored_with_an_expiry_counts_its_marks_from_the_restore() -> None:
    clock = FakeClock(1_000_000.0)
    plain = SeenPartition("exact", 1000, 0.01)
    from array import array

    plain.add_new(array("Q", [5, 6]).tobytes())
    expiring = SeenPartition("exact", 1000, 0.01, ttl=TTL, clock=clock)
    expiring.restore(plain.whole())
    assert expiring.add_new(array("Q", [5, 7]).tobytes()) == bytes([0, 1])
    clock.now += TTL * 2
    assert expiring.add_new(array("Q", [5]).tobytes()) == bytes([1])
    # ... and an expiring one restored by a crawl without an expiry keeps the marks it has (5, just made again),
    # not those that expired (6, 7).
    kept = SeenPartition("exact", 1000, 0.01)
    kept.restore(expiring.whole())
    assert kept.add_new(array("Q", [5, 7, 6]).tobytes()) == bytes([0, 1, 1])
