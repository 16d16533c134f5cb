"""The fetch task: batches of leased URLs in (as their shards packed them, actors/wire.py), each
result out to the shard that leased its URL, as its request completes. Stateless; no politeness of its own
beyond each lease's not_before.

``max_retries=0``: Ray must not re-run a fetch on its own (that would send requests no shard paced). A task
that dies is reported by Ray, and the coordinator has its shards take back the leases it did not settle.

The task ends only when every result it sent is settled: a task that ended has nothing on its way to a shard
(the coordinator's test that the crawl is at rest relies on it).

Before results go to their shards, the pages' payloads are claimed with the seen-set partitions (one call per
partition for all the pages sent together): a payload stored before under another URL is written as a revisit of
that capture (core/captures.py). A partition that does not answer costs only storage: the pages are written whole.
"""

from __future__ import annotations

import os
import time
from typing import Any

import ray
from ray.exceptions import GetTimeoutError, RayError

from raycrawl.actors.render import RenderCaller
from raycrawl.actors.wire import captures_of, leases_of, pack
from raycrawl.actors.worker_heap import freeze_startup_heap
from raycrawl.adapters.fetcher import Fetcher, fetcher_for
from raycrawl.core.captures import Capture, split_claims
from raycrawl.core.fetch_settings import FetchSettings
from raycrawl.core.settle_timing import SETTLE_SOONEST, Waiting

NODE_ID_CHARS = 12
CLAIM_TIMEOUT = 30.0  # seconds a partition may take to answer a batch's payload claims (then: written whole)

# What every task of a crawl shares -- its fetch settings and the actor handles (shards, partitions, renderers) --
# comes as references inside a list, which Ray leaves unresolved, and is fetched once per worker process: given as
# plain arguments, each task deserialised every actor handle again (~0.5 ms of a worker's CPU a task,
# benchmarks/README.md).
# Only the newest of each is kept (a rebuilt partition makes new handles; a finished crawl's go with the next).
_SHARED: dict[tuple[str, ...], list[Any]] = {}


def _shared(refs: list[Any]) -> list[Any]:
    key = tuple(ref.hex() for ref in refs)
    values = _SHARED.get(key)
    if values is None:
        values = ray.get(refs)
        _SHARED.clear()
        _SHARED[key] = values
    return values


@ray.remote(max_retries=0)
def fetch_batch(shared: list[Any], epoch: int, *batches: bytes) -> int:
    """``shared``: [a reference to the crawl's FetchSettings, one to its (shards, partitions, renderers)]."""
    settings: FetchSettings
    settings, handles = _shared(shared)
    shards, partitions, renderers = handles
    fetcher = fetcher_for(settings)
    freeze_startup_heap()  # (the worker is set up: actors/worker_heap.py)
    fetcher.renderer = RenderCaller(renderers) if renderers else None  # (the crawl's render pool: actors/render.py)
    hold = settings.revisit_duplicates and bool(partitions)
    node_id = ray.get_runtime_context().get_node_id()
    node = node_id[:NODE_ID_CHARS]
    leases = [lease for batch in batches for lease in leases_of(batch)]  # (packed by their shards: actors/wire.py)
    settling: list[Any] = []
    waiting = Waiting()  # (results go several a call, each within its host's time: core/settle_timing.py)

    def send() -> None:
        if hold:
            _write_held(fetcher, partitions)
        groups = waiting.take()
        for group in groups.values():
            for result in group:
                result.node = node
                if result.warc is not None:
                    result.warc.node = node_id  # (the cut sends this node the task that stores its WARC parts)
                if result.item is not None:
                    result.item.node = node_id  # (... and its items' lines)
        settling.extend(shards[shard].settle.remote(pack(group)) for shard, group in groups.items())

    for results in fetcher.fetch_stream(leases, epoch, tick=SETTLE_SOONEST, node=node_id, hold_pages=hold):
        now = time.time()  # (the results' ended_at is the wall clock's)
        waiting.add(results, now)
        if waiting.time_to_send(now):
            send()
    send()
    ray.get(settling)  # (a shard that died fails the task: the coordinator rolls the crawl back anyway)
    return len(leases)


def _write_held(fetcher: Fetcher, partitions: list[Any]) -> None:
    """The held pages' WARC, after their payload claims are answered (one call per partition, one wait)."""
    claims = fetcher.held_claims()
    if not claims:
        return
    firsts: list[Capture | None] = [None] * len(claims)
    by_partition = split_claims(claims, len(partitions))
    asked = [(at, partitions[p].claim_payloads.remote(pack([claims[i] for i in at]))) for p, at in by_partition.items()]
    try:
        answers = [captures_of(packed) for packed in ray.get([ref for _, ref in asked], timeout=CLAIM_TIMEOUT)]
    except (RayError, GetTimeoutError):  # (a partition lost, or being rebuilt: duplicates cost storage, not records)
        answers = [[None] * len(at) for at, _ in asked]
    for (at, _), answer in zip(asked, answers, strict=True):
        for i, first in zip(at, answer, strict=True):
            firsts[i] = first
    fetcher.write_held(firsts)


@ray.remote(max_retries=0)
def warm_up(settings: FetchSettings, hold_s: float) -> int:
    """Start a worker process and its fetcher before the crawl needs them.

    Starting a worker (a new process importing Ray and raycrawl) costs about a second of CPU; in the middle
    of a crawl that stalls every host's clock on a small machine. Held briefly, so that tasks submitted
    together each get a process of their own.
    """
    fetcher_for(settings)
    freeze_startup_heap()
    time.sleep(hold_s)
    return os.getpid()
