"""Exchanges handed from the fetch loop's thread to the caller's a few at a time (adapters/handoff.py)."""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Iterator

import pytest

from raycrawl.adapters.handoff import Handoff


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield loop
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


def put_all(loop: asyncio.AbstractEventLoop, handoff: Handoff[int], items: list[int]) -> None:
    def put() -> None:
        for item in items:
            handoff.put(item)

    loop.call_soon_threadsafe(put)


def test_items_ended_within_the_window_are_taken_together_in_order(loop: asyncio.AbstractEventLoop) -> None:
    handoff: Handoff[int] = Handoff(loop, window=0.05)
    put_all(loop, handoff, [1, 2, 3])
    assert handoff.take(timeout=10) == [1, 2, 3]
    put_all(loop, handoff, [4])  # (a new window opens with the next item)
    assert handoff.take(timeout=10) == [4]


def test_nothing_is_handed_over_before_its_window_ends_unless_flushed(loop: asyncio.AbstractEventLoop) -> None:
    handoff: Handoff[int] = Handoff(loop, window=3600)
    put_all(loop, handoff, [1, 2])
    with pytest.raises(queue.Empty):
        handoff.take(timeout=0.2)
    loop.call_soon_threadsafe(handoff.flush)  # (what a run cancelled as the loop closes does)
    assert handoff.take(timeout=10) == [1, 2]


def test_without_a_window_each_item_is_handed_over_as_it_comes(loop: asyncio.AbstractEventLoop) -> None:
    handoff: Handoff[int] = Handoff(loop, window=0)
    put_all(loop, handoff, [1, 2, 3])
    taken: list[int] = []
    while len(taken) < 3:
        taken += handoff.take(timeout=10)
    assert taken == [1, 2, 3]
