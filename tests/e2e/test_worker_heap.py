"""A Ray worker process leaves its start-up heap out of full collections, once; a driver never does."""

from __future__ import annotations

import gc

import pytest
import ray

from raycrawl.actors.worker_heap import freeze_startup_heap

pytestmark = pytest.mark.usefixtures("ray_local")


@ray.remote(max_retries=0)
def frozen_before_and_after_more_objects() -> tuple[int, int]:
    freeze_startup_heap()
    first = gc.get_freeze_count()
    made_later = [[n] for n in range(5_000)]  # (tracked containers a second freeze would take too)
    freeze_startup_heap()
    assert made_later
    return first, gc.get_freeze_count()


def test_a_worker_freezes_its_start_up_heap_once_and_the_driver_never() -> None:
    first, second = ray.get(frozen_before_and_after_more_objects.remote())
    assert first > 10_000  # (a worker that has imported Ray tracks tens of thousands of objects)
    assert second == first  # what the worker made after its first freeze is collected as ever
    before = gc.get_freeze_count()
    freeze_startup_heap()
    assert gc.get_freeze_count() == before == 0  # (a driver -- a user's notebook -- keeps its collector as it was)
