"""The fetch task: a batch of leased URLs in, their results streamed out as they complete (a Ray generator
task). Stateless; no politeness of its own beyond each lease's not_before.

``max_retries=0``: Ray must not re-run a fetch on its own (that would send requests no shard paced). A task
that dies is reported by Ray, and the coordinator hands its leases back to their shards.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import ray

from raycrawl.adapters.fetcher import FetchSettings, fetcher_for
from raycrawl.core.records import FetchResult, Lease

NODE_ID_CHARS = 12


@ray.remote(max_retries=0)
def fetch_batch(settings: FetchSettings, leases: list[Lease], epoch: int) -> Iterator[list[FetchResult]]:
    node_id = ray.get_runtime_context().get_node_id()
    node = node_id[:NODE_ID_CHARS]
    for results in fetcher_for(settings).fetch_stream(leases, epoch):
        for result in results:
            result.node = node
            if result.warc is not None:
                result.warc.node = node_id  # (the cut sends this node the task that stores its WARC parts)
        yield results


@ray.remote(max_retries=0)
def warm_up(settings: FetchSettings, hold_s: float) -> int:
    """Start a worker process and its fetcher before the crawl needs them.

    Starting a worker (a new process importing Ray and raycrawl) costs about a second of CPU; in the middle
    of a crawl that stalls every host's clock on a small machine. Held briefly, so that tasks submitted
    together each get a process of their own.
    """
    fetcher_for(settings)
    time.sleep(hold_s)
    return os.getpid()
