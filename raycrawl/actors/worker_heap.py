"""A Ray worker process's start-up heap, taken out of Python's full garbage collections once it is set up.

A worker that has imported Ray, aiohttp, pyarrow and raycrawl tracks ~80,000 container objects that live as long
as the process. Every full (generation 2) collection walked them all: 35 ms on an idle machine, 50-200 ms in a
crawl on two busy cores, several times in a few seconds in each fetch worker, shard and seen-set partition at
once -- about a second of CPU and a stall of every host in a 6,000-page crawl (benchmarks/README.md, issue 51).
``gc.freeze()`` moves what is tracked now to a permanent generation no collection walks; objects made later are
collected as before, and a frozen one is still freed when its last reference goes (only cycles among frozen
objects are never collected). Done once per process, after its imports and set-up, and never in a driver (a
user's notebook keeps its own collector as it was).
"""

from __future__ import annotations

import gc

import ray

_frozen = False


def freeze_startup_heap() -> None:
    """In a Ray worker process, the first time only: what is tracked now is left out of later collections."""
    global _frozen
    if _frozen or ray.get_runtime_context().worker.mode != ray.WORKER_MODE:
        return
    _frozen = True
    gc.freeze()
