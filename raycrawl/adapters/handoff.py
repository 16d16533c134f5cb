"""Exchanges handed from the fetch loop's thread to the calling thread a few at a time.

The fetch loop (adapters/fetcher.py) ends exchanges one by one; handing each to the caller as it ended woke the
caller's thread once a page (~1,800 times a second per fetch worker in an unthrottled crawl), and each wake-up
is a context switch and a hand-over of the GIL between the two threads. Gathered for ``window`` seconds from the
first one, they cost one wake-up per window. Nothing waits on the caller for politeness: a host's clock counts from
its exchange's end, recorded on the loop, and a run's next request is sent by the loop; results already wait for
their shard up to their host's settle time (core/settle_timing.py, counted from the exchange's end), which is never
shorter than the fetcher's window.
"""

from __future__ import annotations

import asyncio
import queue
from typing import Generic, TypeVar

Item = TypeVar("Item")


class Handoff(Generic[Item]):
    """Items put on the loop, taken by another thread in lists, at most ``window`` seconds after the first."""

    def __init__(self, loop: asyncio.AbstractEventLoop, window: float) -> None:
        self._loop = loop
        self._window = window
        self._gathered: list[Item] = []
        self._lists: queue.SimpleQueue[list[Item]] = queue.SimpleQueue()

    # --- on the loop ---------------------------------------------------------------------------------

    def put(self, item: Item) -> None:
        self._gathered.append(item)
        if len(self._gathered) == 1:
            if self._window > 0:
                self._loop.call_later(self._window, self.flush)
            else:
                self.flush()

    def flush(self) -> None:
        """Hand over what is gathered now (also when the loop is about to stop)."""
        if self._gathered:
            gathered, self._gathered = self._gathered, []
            self._lists.put(gathered)

    # --- on the taking thread ------------------------------------------------------------------------

    def take(self, timeout: float | None) -> list[Item]:
        """Every item handed over, waiting up to ``timeout`` for the first (raises queue.Empty when none came)."""
        items = self._lists.get(timeout=timeout)
        while True:
            try:
                items += self._lists.get_nowait()
            except queue.Empty:
                return items
