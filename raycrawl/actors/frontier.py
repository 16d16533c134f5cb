"""FrontierShardActor: a shard's work (core/shard_work.py) made remote. The shard is the single source of truth
for its hosts, and the seen-set's writer for the links its results add.

Calls come from the coordinator (``lease`` each round, checkpoints, operator commands), from fetch tasks
(``settle``: their results; its reply, the leases chained to the task: core/lease_batches.py) and from other shards
(``push``: new URLs for hosts this shard owns). Once per round
(in ``lease``) the shard asks the seen-set partitions about the links found since the last one, one call each,
awaited together, and sends the new URLs to their owners, one batch each; a partition that died leaves its share
held until the coordinator has rebuilt it (``set_partition``).
"""

from __future__ import annotations

import functools
import json
import os
import zlib
from typing import Any

import ray

from raycrawl.actors import crew_registry
from raycrawl.actors.dedup import pack_fingerprints, unpack_fingerprints
from raycrawl.actors.placement import ACTOR_LOST
from raycrawl.actors.politeness_registry import budget_client
from raycrawl.actors.wire import pack, results_of
from raycrawl.actors.worker_heap import freeze_startup_heap
from raycrawl.adapters.lmdb_queue import private_store
from raycrawl.adapters.output import PagesBuffer
from raycrawl.adapters.queue_segments import BaseWriter, QueueSegments, replay_files
from raycrawl.adapters.say_once import say_once
from raycrawl.adapters.snapshots import StoreUnavailable
from raycrawl.adapters.storage import StorageError, open_storage
from raycrawl.core.crawl_loop import ShardSummary
from raycrawl.core.host_actions import HostAction
from raycrawl.core.lease_batches import NO_CHAIN, ChainAllowance
from raycrawl.core.link_routing import Handover, PartitionShare
from raycrawl.core.queue_log import LoggedQueueStore
from raycrawl.core.queue_store import MemoryQueueStore, QueueStore
from raycrawl.core.records import Known, Link, UrlEntry
from raycrawl.core.shard_work import ShardOutput, ShardSetup, ShardWork
from raycrawl.core.stats import CrawlStats


# No task events: each settle, lease and push call would be reported to the GCS (state changes kept for the
# dashboard's task table), tens of calls a second per shard, for a table nothing of the crawl reads. Without them
# (and the seen-set's), six alternating rounds of the unthrottled benchmark crawl averaged 1.89x the bare loop's
# CPU a page at the margin against 2.07x, better in four (benchmarks/README.md, issue 51 step 18).
@ray.remote(num_cpus=0, max_restarts=0, enable_task_events=False)
class FrontierShardActor:
    def __init__(self, shard_id: int, setup: ShardSetup, owner: str | None = None) -> None:
        """``owner``: the crawl's coordinator's name; this detached actor ends itself once it is gone for good
        (actors/crew_registry.py)."""
        self._id = shard_id
        self._pages = PagesBuffer(f"shard{shard_id:03d}")
        self._storage = open_storage(setup.out, setup.filesystem) if setup.out else None
        # Queued URLs past each host's workbench wait on this node's disk (core/workbench.py); a checkpoint copies
        # what changed in them to the crawl's storage (adapters/queue_segments.py)
        self._store = private_store(setup.frontier_dir) if setup.frontier.workbench else None
        self._segments: QueueSegments | None = None
        store: QueueStore | None = self._store
        if self._store is not None and self._storage is not None:
            store = logged = LoggedQueueStore(self._store)
            writer = BaseWriter(os.path.dirname(self._store.path), self._storage)
            self._segments = QueueSegments(self._storage, shard_id, logged, writer)
        budget = budget_client(setup.shared_politeness, setup.crawl_id)  # (core/host_budget.py; None: not shared)
        warn = functools.partial(say_once, "score")  # (the score function's failures: once per shard process)
        self._work = ShardWork(shard_id, setup, self._pages.write, store=store, budget=budget, warn=warn)
        self._peers: list[Any] = []
        self._partitions: list[Any] = []
        self._cut_epoch: int | None = None  # the last cut's checkpoint id ...
        self._cut_told = True  # ... and whether its checkpoint's commit was told (checkpointed)
        if owner is not None:
            crew_registry.watch_owner(owner, self._orphaned)
        freeze_startup_heap()

    def _orphaned(self) -> None:
        """The crawl's coordinator is gone for good: nothing of this shard outlives it (its queue store's files)."""
        if self._store is not None:
            self._store.close(remove=True)
        os._exit(0)

    def connect(self, peers: list[Any], partitions: list[Any]) -> None:
        self._peers, self._partitions = list(peers), list(partitions)

    # --- the coordinator's round ---------------------------------------------------------------------

    def lease(
        self,
        quota: int,
        horizon: float,
        drain: str | None,
        batch_id: int,
        finished: list[int],
        chain: ChainAllowance = NO_CHAIN,
    ) -> tuple[bytes, ShardSummary]:
        """The round's leases (packed: actors/wire.py), and the shard's summary. Both come back to the coordinator,
        which hands the leases on to a fetch task as they are: a batch's bytes go with the calls, where a reference
        to them cost each process it passed through its owner's bookkeeping (benchmarks/README.md, issue 51)."""
        # (before the summary: it counts the batches this sends)
        self._route(self._work.take_shares(), self._work.router.take_touches())
        leases, summary = self._work.lease(quota, horizon, drain, batch_id, finished, chain)
        summary.buffered = max(summary.buffered, self._pages.size)
        return pack(leases), summary

    def release_batches(self, batch_ids: list[int], reason: str) -> None:
        self._work.release_batches(batch_ids, reason)

    # --- results and links ---------------------------------------------------------------------------

    def settle(self, results: bytes, chain: bool = True) -> bytes:
        """A fetch task's results (packed: actors/wire.py); the leases chained to it, packed (b"": none)."""
        leases = self._work.settle(results_of(results), chain)
        return pack(leases) if leases else b""

    def offer(self, links: list[Link], known: dict[str, Known] | None = None) -> None:
        """Seeds (from the coordinator): screened and deduplicated like any link, with the round's."""
        self._work.offer(links, known)

    def push(self, entries: list[UrlEntry], sender: int, incarnation: int = 0) -> None:
        self._work.receive(entries, sender, incarnation)

    def _route(self, shares: dict[int, PartitionShare], touches: dict[int, list[int]] | None = None) -> None:
        # Marks to renew go with the round's questions, and are waited for with them: a checkpoint cut after this
        # round holds them. They are submitted first: a partition runs one caller's calls in order, so a mark is
        # renewed before a link to it asked in the same round is answered. (A partition that died takes them with
        # it: a renewal lost costs at most a URL queued twice once its mark expires.)
        renewals = [self._partitions[p].touch.remote(pack_fingerprints(fps)) for p, fps in (touches or {}).items()]
        if not shares:
            if renewals:
                ray.wait(renewals, num_returns=len(renewals))
            return
        asked = list(shares)
        me, incarnation = self._id, self._work.router.incarnation
        refs = [
            self._partitions[p].add_new.remote(pack_fingerprints(shares[p].fingerprints), me, incarnation)
            for p in asked
        ]
        ray.wait(refs + renewals, num_returns=len(refs) + len(renewals))
        for p, ref in zip(asked, refs, strict=True):
            try:
                answer = ray.get(ref)
            except ACTOR_LOST:  # the coordinator rebuilds the partition; the share waits until then
                self._work.router.hold(p, shares[p])
                continue
            for owner, entries in self._work.answered(p, shares[p], answer).items():
                self._peers[owner].push.remote(entries, me, incarnation)

    def set_partition(self, partition: int, actor: Any) -> None:
        """A rebuilt partition: held shares are asked again."""
        self._partitions[partition] = actor
        for p, held in self._work.router.take_held().items():
            for share in held:
                self._route({p: share})

    def seen_log(self, partition: int) -> bytes:
        return pack_fingerprints(self._work.router.log(partition))

    # --- a lost shard ----------------------------------------------------------------------------------

    def hand_over(self, lost: int, incarnation: int, successor: Any) -> Handover:
        """Shard ``lost`` is rebuilt as ``successor``: from now on it is sent this shard's new URLs for its hosts
        (core/link_routing.py ``hand_over``)."""
        self._peers[lost] = successor
        return self._work.hand_over(lost, incarnation)

    def succeed(self, handovers: list[Handover], marks: dict[int, bytes], incarnation: int) -> None:
        """This shard (restored from the last checkpoint) takes a lost one's place (core/shard_work.py)."""
        self._work.succeed(handovers, {p: unpack_fingerprints(fps) for p, fps in marks.items()}, incarnation)

    def add_scope_hosts(self, hosts: list[str]) -> None:
        self._work.scope.add_hosts(hosts)

    # --- checkpoints ---------------------------------------------------------------------------------

    def cut(self, epoch: int, period: str | None = None) -> tuple[str | None, str | None, ShardOutput]:
        """This interval's page records as a part of ``epoch`` (in ``period``'s directory, with --rollover), or
        why not, and its WARC for the cut."""
        part, problem = None, None
        self._cut_epoch, self._cut_told = epoch, False
        if self._storage is not None:
            try:
                part = self._pages.cut(self._storage, epoch, period)
            except StorageError as exc:
                problem = str(exc)
        return part, problem, self._work.take_output()

    def checkpointed(self) -> None:
        self._cut_told = True
        self._work.checkpointed()
        if self._segments is not None:
            self._segments.committed()

    # --- a restarted coordinator ---------------------------------------------------------------------

    def pending_cut(self, committed: int | None) -> bool:
        """Whether this shard's last cut is one no committed checkpoint lists (the coordinator died during it: its
        page part is stored and listed by nothing, so the crawl must go back to ``committed``). A cut that was
        committed, but not told here, is taken as told now."""
        if self._cut_told:
            return False
        if committed is not None and self._cut_epoch is not None and self._cut_epoch <= committed:
            self.checkpointed()
            return False
        return True

    def take_over(self, reason: str, running: list[int] | None = None) -> tuple[int, CrawlStats, float]:
        """A restarted coordinator takes the crawl over: the leases out go back but those of the ``running`` batches
        (of fetch tasks the launcher still runs), and the counters this shard moved since the last checkpoint are
        what it adds to that checkpoint's. Returns (leases taken back, those counters, when the last coordinator
        last asked)."""
        return self._work.take_over(reason, running or ())

    def snapshot(self) -> tuple[bytes, int]:
        """This shard at the cut, and the bytes it wrote to the crawl's storage for it: its stored queue as the
        files that make it again, this cut's log written now."""
        reclaim = sorted(self._work.router.reclaim)  # (a lost predecessor's URLs still to find again)
        if self._segments is None:
            snapshot = self._work.frontier.snapshot() | ({"reclaim": reclaim} if reclaim else {})
            return zlib.compress(json.dumps(snapshot).encode(), 3), 0
        snapshot = self._work.frontier.snapshot(stored_rows=False) | ({"reclaim": reclaim} if reclaim else {})
        try:
            snapshot["queue"] = self._segments.checkpoint()
        except StorageError as exc:
            raise StoreUnavailable(f"shard {self._id} cannot write its queue's log: {exc}") from None
        return zlib.compress(json.dumps(snapshot).encode(), 3), self._segments.written

    def restore(self, data: bytes) -> None:
        snapshot = json.loads(zlib.decompress(data))
        self._work.restored()
        self._work.router.reclaim = set(snapshot.pop("reclaim", ()))
        refs = snapshot.pop("queue", None)
        if refs is not None and self._segments is not None and self._store is not None:
            self._segments.restore(refs, self._store)  # (the store itself: a replay is not a change to log)
        elif refs is not None:  # (saved by a run with a store, restored without: the rows go in the snapshot)
            assert self._storage is not None, "a checkpoint with a stored queue, and no storage to read it from"
            rows = MemoryQueueStore()
            replay_files(self._storage, refs, rows)
            snapshot["stored"] = [[host, key, row.decode()] for host, key, row in rows.items()]
        self._work.frontier.restore(snapshot)

    def retry(self, entries: list[UrlEntry]) -> None:
        self._work.retry(entries)

    def requeue(self, entries: list[UrlEntry]) -> None:
        """URLs already in the seen-set (a checkpoint from before links went shard to shard had them pending)."""
        self._work.requeue(entries)

    def close(self) -> None:
        self._pages.close()
        if self._segments is not None:
            self._segments.close()
        if self._store is not None:
            self._store.close(remove=True)
            self._store = None

    # --- the operator --------------------------------------------------------------------------------

    def control(self, action: HostAction) -> bool:
        """An operator's action on one of this shard's hosts; False: the shard does not know the host."""
        return action.apply(self._work.frontier)

    def hosts(self) -> list[dict[str, Any]]:
        return self._work.frontier.host_table()

    def node(self) -> str:
        """The Ray node this shard runs on."""
        return str(ray.get_runtime_context().get_node_id())

    def counters(self) -> dict[str, int]:
        return self._work.counts()

    def proxy_health(self) -> list[dict[str, Any]]:
        return self._work.proxy_health()
