"""When a fetch task sends its results to their shards (core/settle_timing.py): several a call, each within what its
host allows."""

from __future__ import annotations

import pytest

from raycrawl.core.records import FetchResult, Lease, LeaseKind, UrlEntry
from raycrawl.core.settle_timing import (
    SETTLE_BATCH,
    SETTLE_BYTES,
    SETTLE_LATEST,
    SETTLE_SOONEST,
    Waiting,
    settle_within,
)


def lease(kind: LeaseKind = "page", gap: float = 0.0, shard: int = 0) -> Lease:
    return Lease(1, shard, kind, 0.0, 60.0, UrlEntry("http://a.test/", 0), gap=gap)


@pytest.mark.parametrize(
    ("gap", "within"),
    [
        (5.0, SETTLE_LATEST),  # a polite host: its next slot is far off
        (0.25, 0.0625),  # a quarter of the delay, so the next lease is made before the slot
        (0.01, SETTLE_SOONEST),  # never sooner than this
        (0.0, SETTLE_LATEST),  # no delay: no slot to keep, the crawl is bound by CPU
    ],
)
def test_a_pages_answer_waits_at_most_a_quarter_of_its_hosts_delay(gap: float, within: float) -> None:
    assert settle_within(lease(gap=gap)) == pytest.approx(within)


def test_a_robots_answer_goes_at_once_whatever_the_delay() -> None:
    assert settle_within(lease("robots", gap=5.0)) == SETTLE_SOONEST == settle_within(lease("robots"))


def result(gap: float = 0.0, shard: int = 0, size: int = 100) -> FetchResult:
    return FetchResult(lease=lease(gap=gap, shard=shard), status=200, size=size)


def test_results_go_when_the_first_ones_time_is_up_each_to_its_shard() -> None:
    waiting = Waiting()
    waiting.add([result(gap=5.0, shard=1)], now=10.0)  # (may wait SETTLE_LATEST: until 10.1)
    waiting.add([result(gap=0.25, shard=0), result(gap=5.0, shard=1)], now=10.02)  # (a quarter of 0.25 s: 10.0825)
    assert not waiting.time_to_send(10.08)
    assert waiting.time_to_send(10.0825)
    groups = waiting.take()
    assert {shard: len(group) for shard, group in groups.items()} == {0: 1, 1: 2}
    assert not waiting.time_to_send(1e9) and waiting.take() == {}  # nothing left to send


def test_many_results_or_large_bodies_go_at_once() -> None:
    many = Waiting()
    many.add([result(gap=5.0) for _ in range(SETTLE_BATCH)], now=0.0)
    assert many.time_to_send(0.0)
    large = Waiting()
    large.add([result(gap=5.0, size=SETTLE_BYTES // 2)], now=0.0)
    assert not large.time_to_send(0.0)
    large.add([result(gap=5.0, size=SETTLE_BYTES // 2)], now=0.0)
    assert large.time_to_send(0.0)


def test_a_results_wait_counts_from_its_exchanges_end_not_from_when_it_was_handed_over() -> None:
    waiting = Waiting()
    ended = FetchResult(lease=lease(gap=0.25), status=200, size=100, ended_at=100.0)
    waiting.add([ended], now=100.05)  # (handed over 50 ms after its end: due at 100.0625, not 100.1125)
    assert not waiting.time_to_send(100.06)
    assert waiting.time_to_send(100.0625)
    later = Waiting()  # a wall clock that stepped back: never later than from when it came
    later.add([FetchResult(lease=lease(gap=0.25), status=200, size=100, ended_at=200.0)], now=100.0)
    assert later.time_to_send(100.0625)
