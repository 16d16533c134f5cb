"""The fetch task: batches of leased URLs in (as their shards packed them, actors/wire.py), each
result out to the shard that leased its URL, as its request completes. Stateless; no politeness of its own
beyond each lease's not_before.

``max_retries=0``: Ray must not re-run a fetch on its own (that would send requests no shard paced). A task
that dies is reported by Ray, and the coordinator has its shards take back the leases it did not settle.

The task ends only when every result it sent is settled: a task that ended has nothing on its way to a shard
(the coordinator's test that the crawl is at rest relies on it). A settle's reply may hand the task more leases: a
host's next run, chained to the task that settled its last (core/lease_batches.py); they join the stream.

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

from raycrawl.actors import dedup, frontier  # noqa: F401  (see warm_up)
from raycrawl.actors.render import RenderCaller
from raycrawl.actors.wire import captures_of, leases_of, pack
from raycrawl.actors.worker_heap import freeze_startup_heap
from raycrawl.adapters.fetcher import Fetcher, fetcher_for
from raycrawl.core.captures import Capture, split_claims
from raycrawl.core.fetch_settings import FetchSettings
from raycrawl.core.records import FetchResult, Lease
from raycrawl.core.settle_timing import SETTLE_SOONEST, Waiting

NODE_ID_CHARS = 12
CLAIM_TIMEOUT = 30.0  # seconds a partition may take to answer a batch's payload claims (then: written whole)
# A task takes leases chained by its shards this long, then ends with what it has: a slot for launches waiting, and
# the crawl's newest actor handles (a rebuilt partition, the render pool as it follows its queue) for the next task.
CHAIN_FOR = 10.0

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
    leases = [lease for batch in batches for lease in leases_of(batch)]  # (packed by their shards: actors/wire.py)
    out = _Settling(fetcher, shards, partitions if hold else None, node_id, len(leases))
    stream = fetcher.fetch_stream(leases, epoch, tick=SETTLE_SOONEST, node=node_id, hold_pages=hold, more=out.more)
    for results in stream:
        out.add(results)
    return out.taken


class _Settling:
    """A task's results on their way to their shards, and the leases the shards chain to it in their replies."""

    def __init__(self, fetcher: Fetcher, shards: list[Any], partitions: list[Any] | None, node_id: str, taken: int):
        """``partitions``: the seen-set's, when the pages' WARC waits for their payload claims (else None)."""
        self._fetcher, self._shards, self._partitions = fetcher, shards, partitions
        self._node_id, self._node = node_id, node_id[:NODE_ID_CHARS]
        self._settling: list[Any] = []  # settle calls whose replies are not read yet
        self._waiting = Waiting()  # (results go several a call, each within its host's time: core/settle_timing.py)
        self._chain_until = time.monotonic() + CHAIN_FOR
        self._failure: RayError | None = None  # a settle that failed (its shard died): raised at the end
        self.taken = taken

    def add(self, results: list[FetchResult]) -> None:
        now = time.time()  # (the results' ended_at is the wall clock's)
        self._waiting.add(results, now)
        if self._waiting.time_to_send(now):
            self._send()

    def _send(self) -> None:
        if self._partitions is not None:
            _write_held(self._fetcher, self._partitions)
        groups = self._waiting.take()
        for group in groups.values():
            for result in group:
                result.node = self._node
                if result.warc is not None:
                    result.warc.node = self._node_id  # (the cut sends this node the task that stores its WARC parts)
                if result.item is not None:
                    result.item.node = self._node_id  # (... and its items' lines)
        chain = time.monotonic() < self._chain_until
        shards = self._shards
        self._settling.extend(shards[shard].settle.remote(pack(group), chain) for shard, group in groups.items())

    def more(self, dry: bool) -> list[Lease]:
        """The leases the shards chained to this task (core/lease_batches.py) in the replies come so far; ``dry``:
        every lease is done -- what waits is sent, and the replies are waited for until one brings leases. A shard
        that died fails the task, once the rest is fetched and settled (its leases are the coordinator's to take
        back; the other shards' are settled, and cost no attempt)."""
        if dry:
            self._send()
        settling = self._settling
        while settling:
            ready, settling[:] = ray.wait(settling, num_returns=len(settling), timeout=0)
            if not ready and dry:
                ready, settling[:] = ray.wait(settling, num_returns=1)
            chained = [lease for packed in self._replies(ready) if packed for lease in leases_of(packed)]
            if chained or not dry:
                self.taken += len(chained)
                return chained
        if dry and self._failure is not None:
            raise self._failure
        return []

    def _replies(self, ready: list[Any]) -> list[bytes]:
        try:
            return list(ray.get(ready))
        except RayError:
            pass
        # A shard died: the others' replies, one by one (their chained leases are this task's to fetch).
        replies: list[bytes] = []
        for ref in ready:
            try:
                replies.append(ray.get(ref))
            except RayError as exc:
                self._failure = self._failure or exc
        return replies


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
    together each get a process of their own. This module imports the modules of the actor classes a fetch
    task's handles are of (shards, seen-set partitions), so that their import (~0.12 s of CPU) is paid here, not by
    the worker's first task when Ray unpickles its arguments.
    """
    fetcher_for(settings)
    freeze_startup_heap()
    time.sleep(hold_s)
    return os.getpid()
