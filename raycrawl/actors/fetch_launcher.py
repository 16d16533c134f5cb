"""FetchLauncher: the process that submits the crawl's fetch tasks, so that they outlive their coordinator.

Ray ends a task whose owner -- the process that submitted it -- dies. Submitted by the coordinator, the fetch tasks
under way died with it, and their leases' pages were fetched again after its restart. Submitted here (a detached
actor of the crawl's crew, actors/crew_registry.py), they go on while a restarted coordinator comes back, settle
their results with the shards as always, and the new coordinator waits for them as its own (``running``): a
coordinator's restart costs no page fetched twice. The coordinator holds the tasks' references as a borrower.
"""

from __future__ import annotations

import functools
import os
from typing import Any

import ray

from raycrawl.actors import crew_registry
from raycrawl.actors.fetch_task import fetch_batch
from raycrawl.actors.worker_heap import freeze_startup_heap

# A fetch task to submit: (its options, the crawl's shared references, the epoch, its lease batches' references,
# and each batch as (shard, batch id, leases) -- what a restarted coordinator needs to wait for it)
TaskSpec = tuple[dict[str, Any], list[Any], int, list[Any], list[tuple[int, int, int]]]


@ray.remote(num_cpus=0, max_restarts=0)
class FetchLauncher:
    def __init__(self, owner: str | None = None) -> None:
        """``owner``: the crawl's coordinator's name; this detached actor ends itself once it is gone for good."""
        self._running: dict[str, tuple[Any, list[tuple[int, int, int]]]] = {}
        if owner is not None:
            crew_registry.watch_owner(owner, functools.partial(os._exit, 0))
        freeze_startup_heap()

    def launch(self, specs: list[TaskSpec]) -> list[list[Any]]:
        """Submit the tasks; each one's reference, in a list (so the caller gets the reference, not its value)."""
        self._forget_ended()
        out = []
        for options, shared, epoch, refs, batches in specs:
            task = fetch_batch.options(**options).remote(shared, epoch, *refs)
            self._running[task.hex()] = (task, batches)
            out.append([task])
        return out

    def running(self) -> list[tuple[list[Any], list[tuple[int, int, int]]]]:
        """The tasks not ended yet, each (its reference in a list, its batches)."""
        self._forget_ended()
        return [([task], batches) for task, batches in self._running.values()]

    def node(self) -> str:
        return str(ray.get_runtime_context().get_node_id())

    def _forget_ended(self) -> None:
        tasks = [task for task, _ in self._running.values()]
        if tasks:
            ended, _ = ray.wait(tasks, num_returns=len(tasks), timeout=0)
            for task in ended:
                self._running.pop(task.hex(), None)
