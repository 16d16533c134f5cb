"""How long a fetch task's result may wait for others to its shard (actors/fetch_task.py): its host's to say."""

from __future__ import annotations

import pytest

from raycrawl.actors.fetch_task import SETTLE_LATEST, SETTLE_SOONEST, settle_within
from raycrawl.core.records import Lease, LeaseKind, UrlEntry


def lease(kind: LeaseKind = "page", gap: float = 0.0) -> Lease:
    return Lease(1, 0, kind, 0.0, 60.0, UrlEntry("http://a.test/", 0), gap=gap)


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
