"""How the coordinator cuts work: lease quotas per shard and leased URLs into fetch tasks."""

from __future__ import annotations

import math
from collections.abc import Sequence

from raycrawl.core.records import Lease


def split_quota(total: int, parts: int, rotation: int) -> list[int]:
    """``total`` spread over ``parts`` as evenly as possible; the remainder goes to rotating parts."""
    base, extra = divmod(max(0, total), parts)
    return [base + (1 if (i - rotation) % parts < extra else 0) for i in range(parts)]


def take_batches(
    staged: list[Lease],
    free_tasks: int,
    batch_size: int,
    now: float,
    launch_slack: float,
) -> list[list[Lease]]:
    """Cut staged leases (sorted by not_before, in place) into fetch tasks worth launching now.

    A task is launched when it would be full, or when its earliest URL is due within ``launch_slack``:
    waiting for more URLs then would delay a request. Never more than ``free_tasks`` tasks; when the
    staged URLs exceed ``free_tasks`` full batches, batches grow instead. Many hosts share a task.
    """
    if not staged or free_tasks <= 0:
        return []
    staged.sort(key=lambda lease: lease.not_before)
    size = max(batch_size, math.ceil(len(staged) / free_tasks))
    batches: list[list[Lease]] = []
    while staged and len(batches) < free_tasks:
        if len(staged) < size and staged[0].not_before - now > launch_slack:
            break
        batches.append(staged[:size])
        del staged[:size]
    return batches


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0
