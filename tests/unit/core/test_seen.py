import random
from array import array

from hypothesis import given
from hypothesis import strategies as st

from raycrawl.core import seen as seen_module
from raycrawl.core.seen import BloomSeenSet, ExactSeenSet

fingerprints = st.integers(0, 2**64 - 1)
# Few distinct values, so batches repeat each other and themselves; 0 and 2**64-1 are the edges of the order.
small_pool = st.sampled_from([0, 1, 2, 3, 2**63, 2**64 - 2, 2**64 - 1]) | st.integers(0, 40)


def test_exact_seen_set_answers_batches() -> None:
    seen = ExactSeenSet()
    assert seen.add_new([1, 2, 2, 3]) == [True, True, False, True]
    assert seen.add_new([3, 4]) == [False, True]
    assert len(seen) == 4
    assert seen.stats()["hits"] == 2


@given(st.lists(st.lists(small_pool | fingerprints, max_size=30), max_size=30), st.integers(1, 8), st.integers(0, 4))
def test_exact_seen_set_agrees_with_a_python_set(batches: list[list[int]], merge_at: int, newest_at: int) -> None:
    """The first sighting of a fingerprint is new, every later one (in the batch or after) is not, across
    merges of the newest additions into the recent ones, of those into the sorted array, and a checkpoint round
    trip."""
    old, seen_module._MIN_MERGE = seen_module._MIN_MERGE, merge_at
    old_newest, seen_module._NEWEST = seen_module._NEWEST, newest_at
    try:
        seen, model = ExactSeenSet(), set()
        for i, batch in enumerate(batches):
            expected = []
            for fp in batch:
                expected.append(fp not in model)
                model.add(fp)
            packed = array("Q", batch)  # (the dedup actor's form, on odd batches)
            assert seen.add_new(packed if i % 2 else batch) == expected
            assert len(seen) == len(model)
            if i % 5 == 4:
                seen = ExactSeenSet.from_bytes(seen.to_bytes())
        assert all(fp in seen for fp in model)
    finally:
        seen_module._MIN_MERGE, seen_module._NEWEST = old, old_newest


def test_exact_seen_set_survives_merges() -> None:
    rng = random.Random(7)
    fps = [rng.getrandbits(64) for _ in range(200_000)]
    seen = ExactSeenSet()
    for i in range(0, len(fps), 5000):
        assert all(seen.add_new(fps[i : i + 5000]))
    assert not any(seen.add_new(fps[::97]))
    assert len(seen) == len(fps)
    restored = ExactSeenSet.from_bytes(seen.to_bytes())
    assert not any(restored.add_new(fps[::13]))


def test_exact_seen_set_is_compact_at_a_million_urls() -> None:
    """Measured by the allocator (tracemalloc), not by the set's own estimate: <= 40 bytes per URL."""
    import tracemalloc

    rng = random.Random(1)
    batches = [[rng.getrandbits(64) for _ in range(10_000)] for _ in range(100)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        seen = ExactSeenSet()
        for batch in batches:
            seen.add_new(batch)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(seen) == 1_000_000
    print(f"exact seen-set: {held / 1e6:.1f} bytes per URL at 1M URLs (own estimate {seen.memory_bytes() / 1e6:.1f})")
    assert held / 1_000_000 <= 40


def test_bloom_counts_expected_false_drops() -> None:
    bloom = BloomSeenSet(capacity=10_000, error_rate=0.01)
    new = bloom.add_new(range(5000))
    assert sum(new) >= 4950  # a few may be falsely reported as seen: that is what is being counted
    assert not any(bloom.add_new(range(100)))
    stats = bloom.stats()
    assert 0 < stats["expected_false_drops"] < 50
    assert stats["hits"] >= 100


def test_seen_sets_round_trip_through_bytes() -> None:
    exact = ExactSeenSet()
    exact.add_new(range(1000))
    back = ExactSeenSet.from_bytes(exact.to_bytes())
    assert len(back) == 1000 and not any(back.add_new(range(1000))) and back.add_new([5000]) == [True]
    bloom = BloomSeenSet(capacity=5000, error_rate=0.001)
    bloom.add_new(range(1000))
    restored = BloomSeenSet.from_bytes(bloom.to_bytes(), 5000, 0.001)
    assert not any(restored.add_new(range(1000)))
    assert restored.expected_false_drops == bloom.expected_false_drops


def test_a_bloom_filter_past_its_capacity_grows_and_never_calls_everything_new() -> None:
    bloom = BloomSeenSet(capacity=1000, error_rate=0.001)
    first = bloom.add_new(range(10_000))  # ten times its capacity
    assert sum(first) >= 9_900 and bloom.grown >= 3
    # Everything seen stays seen: a filter past capacity that called URLs new would refetch all of these.
    assert sum(bloom.add_new(range(10_000))) == 0
    # And new URLs are still new, at about the configured rate of false drops.
    fresh = bloom.add_new(range(10_000, 20_000))
    assert sum(fresh) >= 9_900
    stats = bloom.stats()
    assert stats["capacity_now"] >= 20_000 and stats["expected_false_drops"] < 100
    back = BloomSeenSet.from_bytes(bloom.to_bytes(), 1000, 0.001)
    assert back.grown == bloom.grown and sum(back.add_new(range(20_000))) == 0


def test_a_checkpoint_of_the_earlier_plain_bloom_filter_still_loads() -> None:
    import io
    import json

    from pybloom_live import BloomFilter

    plain = BloomFilter(capacity=5000, error_rate=0.001)
    for fp in range(1000):
        plain.add(fp.to_bytes(8, "big"))
    buffer = io.BytesIO()
    plain.tofile(buffer)
    header = json.dumps({"expected_false_drops": 0.5, "over_capacity": 0}).encode()
    old = len(header).to_bytes(4, "big") + header + buffer.getvalue()
    restored = BloomSeenSet.from_bytes(old, 5000, 0.001)
    assert not any(restored.add_new(range(1000))) and restored.expected_false_drops == 0.5
    assert all(restored.add_new(range(5000, 5010)))
