"""The fetch task: a batch of leased URLs in, a batch of results out. Stateless; no politeness of its own.

``max_retries=0``: Ray must not re-run a fetch on its own (that would send requests no shard paced). A task
that dies is reported by Ray, and the coordinator hands its leases back to their shards.
"""

from __future__ import annotations

import ray

from raycrawl.adapters.fetcher import FetchSettings, fetcher_for
from raycrawl.core.records import FetchResult, Lease


@ray.remote(max_retries=0)
def fetch_batch(settings: FetchSettings, leases: list[Lease]) -> list[FetchResult]:
    return fetcher_for(settings).fetch_batch(leases)
