"""The crawl's actors -- frontier shards and seen-set partitions -- made, connected, saved, restored, rebuilt.

Shards and partitions are spread over the nodes (a node lost takes fewer of them, and their rollback, with it).
Every shard holds a handle to every other and to every partition: links go shard -> partition -> owner shard
without the coordinator. A partition that dies is rebuilt alone and exactly: the checkpoint's part, then what
every shard logged as new in it since (shards are its only writers); then the shards ask it again what they held.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import ray
from ray.exceptions import ActorUnschedulableError, RayActorError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from raycrawl.core.outlinks import seed_links
from raycrawl.core.records import Known, Link, UrlEntry
from raycrawl.core.shard_work import ShardSetup
from raycrawl.core.sharding import shard_for
from raycrawl.core.urls import host_key

# The checkpoint's seen-set parts, one per partition, or None when there is no checkpoint yet.
CheckpointParts = Callable[[], list[bytes] | None]


def node_cycle() -> Iterator[Any]:
    """Where the next actor goes: the alive nodes in turn. Ray's SPREAD, and a soft node affinity, are hints that
    actors needing no CPU do not follow (measured on a three-node test cluster: four shards on one node, and five of
    seven actors with a soft affinity placed elsewhere than asked); a hard affinity is followed. A node gone before
    its actor is made fails it (ActorUnschedulableError): then Ray places them all (Crew)."""
    nodes = sorted(n["NodeID"] for n in ray.nodes() if n.get("Alive"))
    if len(nodes) < 2:
        return itertools.repeat("SPREAD")
    return (NodeAffinitySchedulingStrategy(node, soft=False) for node in itertools.cycle(nodes))


class Crew:
    def __init__(self, shard_class: Any, dedup_class: Any, setup: ShardSetup, dedup: tuple[str, int, float]) -> None:
        self.setup = setup
        self._shard_class, self._dedup_class = shard_class, dedup_class
        kind, capacity, error_rate = dedup
        self._dedup_args = (kind, max(1000, capacity // setup.partitions), error_rate)
        self.shards: list[Any] = []
        self.partitions: list[Any] = []
        self.recoveries = 0
        try:
            self._start(node_cycle())
        except ActorUnschedulableError:  # a node listed a moment ago is gone: let Ray place them
            self.kill()
            self._start(itertools.repeat("SPREAD"))
        # The handles fetch tasks take (shards for results, partitions for payload claims): put once, since
        # pickling actor handles for every task costs; again when a partition is rebuilt.
        self.handles = ray.put((self.shards, self.partitions))

    def _start(self, places: Iterator[Any]) -> None:
        shard_class, setup = self._shard_class, self.setup
        self.shards = [
            shard_class.options(scheduling_strategy=next(places)).remote(i, setup) for i in range(setup.shards)
        ]
        self.partitions = [self._partition(next(places)) for _ in range(setup.partitions)]
        ray.get([s.connect.remote(self.shards, self.partitions) for s in self.shards])

    def _partition(self, place: Any = "SPREAD") -> Any:
        return self._dedup_class.options(scheduling_strategy=place).remote(*self._dedup_args)

    def offer_seeds(self, seeds: list[str], tracking_params: tuple[str, ...]) -> None:
        """Seeds go to their hosts' shards, to be screened and deduplicated like any link."""
        self.offer_links(seed_links(seeds, tracking_params))

    def offer_links(self, links: list[Link], known: dict[str, Known] | None = None) -> None:
        """Links to their hosts' shards, with what is known of them (a recrawl's seeds)."""
        by_shard: dict[int, list[Link]] = {}
        for link in links:
            by_shard.setdefault(shard_for(host_key(link[0]), len(self.shards)), []).append(link)
        known = known or {}
        calls = []
        for i, batch in by_shard.items():
            theirs = {link[0]: known[link[0]] for link in batch if link[0] in known}
            calls.append(self.shards[i].offer.remote(batch, theirs))
        ray.get(calls)

    def requeue(self, entries: list[UrlEntry], retry: bool = False) -> None:
        """URLs the seen-set has already taken, to their hosts' shards; ``retry``: dead letters crawled again."""
        by_shard: dict[int, list[UrlEntry]] = {}
        for entry in entries:
            by_shard.setdefault(shard_for(host_key(entry.url), len(self.shards)), []).append(entry)
        shards = self.shards
        ray.get([(shards[i].retry if retry else shards[i].requeue).remote(batch) for i, batch in by_shard.items()])

    def add_scope_hosts(self, hosts: list[str]) -> None:
        ray.get([s.add_scope_hosts.remote(hosts) for s in self.shards])

    # --- the seen-set's recovery ---------------------------------------------------------------------

    def rebuild(self, dead: list[int], checkpoint: CheckpointParts) -> None:
        """New actors for the ``dead`` partitions, exactly as the old ones were; shards ask them what they held."""
        if not dead:
            return
        self.recoveries += len(dead)
        blobs = checkpoint()
        logs = ray.get([s.seen_log.remote(p) for p in dead for s in self.shards])
        calls = []
        for k, p in enumerate(dead):
            self.partitions[p] = self._partition()
            if blobs is not None:
                calls.append(self.partitions[p].restore.remote(blobs[p]))
            logged = b"".join(logs[k * len(self.shards) : (k + 1) * len(self.shards)])
            if logged:
                calls.append(self.partitions[p].add_new.remote(logged))
        ray.get(calls)
        ray.get([s.set_partition.remote(p, self.partitions[p]) for p in dead for s in self.shards])
        self.handles = ray.put((self.shards, self.partitions))

    def dead_partitions(self) -> list[int]:
        refs = [p.stats.remote() for p in self.partitions]
        ray.wait(refs, num_returns=len(refs))
        dead = []
        for i, ref in enumerate(refs):
            try:
                ray.get(ref)
            except RayActorError:
                dead.append(i)
        return dead

    # --- checkpoints ---------------------------------------------------------------------------------

    def snapshot_refs(self) -> tuple[list[Any], list[Any]]:
        return [s.snapshot.remote() for s in self.shards], [p.snapshot.remote() for p in self.partitions]

    def restore(self, shards: list[bytes], partitions: list[bytes]) -> None:
        ray.get(
            [s.restore.remote(blob) for s, blob in zip(self.shards, shards, strict=True)]
            + [p.restore.remote(blob) for p, blob in zip(self.partitions, partitions, strict=True)]
        )

    def checkpointed(self) -> None:
        ray.get([s.checkpointed.remote() for s in self.shards])

    def placement(self) -> dict[str, list[str]]:
        """The node of each shard and each partition (Ray node ids), in their order."""
        nodes = ray.get([a.node.remote() for a in [*self.shards, *self.partitions]])
        return {"shards": nodes[: len(self.shards)], "partitions": nodes[len(self.shards) :]}

    def kill(self) -> None:
        for actor in [*self.shards, *self.partitions]:
            ray.kill(actor)
