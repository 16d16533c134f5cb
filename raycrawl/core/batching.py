"""How the coordinator cuts work: lease quotas per shard and leased URLs into fetch tasks."""

from __future__ import annotations

import math
from bisect import bisect_right

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
    window: float,
) -> list[list[Lease]]:
    """Cut staged leases (sorted by not_before, in place) into fetch tasks worth launching now.

    A task holds leases due within ``window`` of its first one, so it ends soon after it starts and its slot
    frees up; it is launched when full, or when its first URL is due within ``launch_slack`` (waiting longer
    would delay a request). At most ``free_tasks`` tasks; if more is due than ``free_tasks`` full tasks
    carry, tasks grow instead. Many hosts share a task.
    """
    if not staged or free_tasks <= 0:
        return []
    staged.sort(key=lambda lease: lease.not_before)
    batches: list[list[Lease]] = []
    while staged and len(batches) < free_tasks:
        start = max(now, staged[0].not_before)
        in_window = bisect_right([lease.not_before for lease in staged], start + window)
        size = max(batch_size, math.ceil(in_window / (free_tasks - len(batches))))
        if in_window < size and staged[0].not_before - now > launch_slack:
            break  # neither full nor due yet: more leases may join it
        take = max(1, min(size, in_window))
        batches.append(staged[:take])
        del staged[:take]
    return batches
