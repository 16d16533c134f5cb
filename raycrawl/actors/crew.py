"""The crawl's actors -- frontier shards and seen-set partitions -- made, connected, saved, restored, rebuilt.

Shards and partitions are spread over the nodes (a node lost takes fewer of them, and their rollback, with it;
actors/placement.py says how, and how a lost node is kept from getting them again).
Every shard holds a handle to every other and to every partition: links go shard -> partition -> owner shard
without the coordinator. A partition that dies is rebuilt alone and exactly: the checkpoint's part, then what
every shard logged as new in it since (shards are its only writers); then the shards ask it again what they held.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ray
from ray.exceptions import GetTimeoutError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from raycrawl.actors import crew_registry
from raycrawl.actors.fetch_launcher import FetchLauncher, TaskSpec
from raycrawl.actors.placement import ACTOR_LOST, ANSWER_TIMEOUT, ActorMaker, Placement, answering_nodes
from raycrawl.core.crawl_loop import StagedBatch
from raycrawl.core.host_actions import HostAction
from raycrawl.core.outlinks import seed_links
from raycrawl.core.records import Known, Link, UrlEntry
from raycrawl.core.shard_work import ShardSetup
from raycrawl.core.sharding import shard_for
from raycrawl.core.urls import host_key

# The checkpoint's seen-set parts, one per partition, or None when there is no checkpoint yet.
CheckpointParts = Callable[[], list[bytes] | None]
LOST_CHECK_TIMEOUT = 5.0  # seconds an actor has to answer when the crew looks for the nodes it lost


class Crew:
    def __init__(
        self,
        shard_class: Any,
        dedup_class: Any,
        setup: ShardSetup,
        dedup: tuple[str, int, float],
        placement: Placement | None = None,
        renderers: list[Any] | None = None,
        found: tuple[list[Any], list[str], list[str]] | None = None,
    ) -> None:
        """``found``: a crew already running -- its actors (shards, then partitions), their names and nodes."""
        self.setup = setup
        self.renderers = renderers or []  # the render pool's actors (actors/render.py), made by the coordinator
        self._shard_class, self._dedup_class = shard_class, dedup_class
        kind, capacity, error_rate = dedup
        self._dedup_args = (kind, max(1000, capacity // setup.partitions), error_rate)
        self.placement = placement or Placement()
        self.recoveries = 0
        self.incarnations = [0] * setup.shards  # each shard's: one more each time it is rebuilt alone
        # What the coordinator told each shard since the last checkpoint (seeds, URLs queued again, operator
        # actions): a shard rebuilt alone from that checkpoint is told again
        self._told: list[list[tuple[str, tuple[Any, ...]]]] = [[] for _ in range(setup.shards)]
        self._told_whole = found is None  # (a crew found by a restarted coordinator: what the last one told is not
        # known until the next checkpoint -- a shard lost meanwhile rolls the crawl back)
        self.started_at = 0.0  # when the crawl started (kept in the crew's record, register())
        # The actors' names (crew_registry.py: detached actors the coordinator finds again after a restart)
        self.names: list[str] = [""] * (setup.shards + setup.partitions)
        self.shards: list[Any]
        self.partitions: list[Any]
        self.nodes: list[str]  # the node of each shard, then of each partition
        self.launcher_name = ""
        self.launcher: Any = None  # submits the fetch tasks, so they outlive a coordinator (actors/fetch_launcher.py)
        if found is not None:  # (a restarted coordinator's: the crew as it is, already connected)
            actors, self.names, self.nodes = found[0], list(found[1]), list(found[2])
            self.shards, self.partitions = actors[: setup.shards], actors[setup.shards :]
        else:
            makers = [self._shard_maker(i) for i in range(setup.shards)]
            makers += [self._partition_maker(p) for p in range(setup.partitions)]
            actors, nodes = self.placement.place(makers)
            self.shards, self.partitions, self.nodes = actors[: setup.shards], actors[setup.shards :], nodes
            try:
                ray.get([s.connect.remote(self.shards, self.partitions) for s in self.shards])
            except ACTOR_LOST:  # (one died as it was made: the others, detached, would idle until the crawl ends)
                self.kill()
                raise
        # The handles fetch tasks take (shards for results, partitions for payload claims, render actors for pages
        # to render): put once, since pickling actor handles for every task costs; again when a partition is rebuilt.
        self.handles = ray.put((self.shards, self.partitions, self.renderers))
        if found is None:
            self._new_launcher()

    @classmethod
    def find(
        cls, shard_class: Any, dedup_class: Any, setup: ShardSetup, dedup: tuple[str, int, float],
        placement: Placement, renderers: list[Any],
    ) -> Crew | None:  # fmt: skip
        """The crew a coordinator that died left, all of it alive (crew_registry.py), or None."""
        record = crew_registry.load(setup.crawl_id)
        if record is None or (len(record.shards), len(record.partitions)) != (setup.shards, setup.partitions):
            return None
        names = [*record.shards, *record.partitions]
        actors = crew_registry.find(names)
        nodes = answering_nodes(actors, ANSWER_TIMEOUT) if actors is not None else [None]
        if actors is None or None in nodes:
            return None
        found = (actors, names, [str(node) for node in nodes])
        crew = cls(shard_class, dedup_class, setup, dedup, placement, renderers, found=found)
        crew.started_at = record.started_at
        crew.incarnations = list(record.incarnations) or crew.incarnations
        launcher = crew_registry.find([record.launcher]) if record.launcher else None
        if launcher is None:  # (gone with the coordinator's node: its tasks too)
            crew._new_launcher()
        else:
            crew.launcher_name, crew.launcher = record.launcher, launcher[0]
        return crew

    def join(self, scope_hosts: list[str], started_at: float) -> None:
        """A new crew takes the crawl's scope and its record; one of its actors lost meanwhile: all of it ends (the
        caller makes another: placement.py ``made_despite_losses``)."""
        try:
            self.add_scope_hosts(scope_hosts)
            self.register(started_at)
        except ACTOR_LOST:
            self.kill()
            raise

    def register(self, started_at: float | None = None) -> None:
        """Keep the crew's names where a restarted coordinator finds them (crew_registry.py)."""
        if started_at is not None:
            self.started_at = started_at
        shards = len(self.shards)
        names, started, launcher = self.names, self.started_at, self.launcher_name
        record = crew_registry.CrewRecord(names[:shards], names[shards:], started, self.incarnations, launcher)
        crew_registry.save(self.setup.crawl_id, record)

    def _new_launcher(self) -> None:
        """A fetch launcher, on this (the coordinator's) node while it is alive."""
        self.launcher_name = crew_registry.new_name(self.setup.crawl_id, "launcher")
        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=True)
        self.launcher = FetchLauncher.options(  # type: ignore[attr-defined]
            name=self.launcher_name, namespace=crew_registry.CREW_NAMESPACE, lifetime="detached",
            scheduling_strategy=here,
        ).remote(self.setup.crawl_id)  # fmt: skip

    def launch(
        self, tasks: list[list[StagedBatch]], options: dict[str, Any], shared: list[Any], epoch: int
    ) -> list[Any] | None:
        """Submit fetch tasks (each of its lease batches) through the launcher; their references, or None when it
        was lost: a new one is made, and these tasks' leases go back (they may have been submitted and gone with
        it, as the tasks it ran did)."""
        specs: list[TaskSpec] = [
            (options, shared, epoch, [b.packed for b in batches], [(b.shard, b.batch_id, b.leases) for b in batches])
            for batches in tasks
        ]
        try:
            return [refs[0] for refs in ray.get(self.launcher.launch.remote(specs))]
        except ACTOR_LOST:
            self._new_launcher()
            self.register()
        lost: dict[int, list[int]] = {}
        for b in (b for batches in tasks for b in batches):
            lost.setdefault(b.shard, []).append(b.batch_id)
        ray.get([self.shards[s].release_batches.remote(ids, "fetch launcher lost") for s, ids in lost.items()])
        return None

    def running_tasks(self) -> list[tuple[Any, list[tuple[int, int, int]]]]:
        """The fetch tasks a coordinator that died left running, each with its batches (shard, batch id, leases)."""
        try:
            return [(refs[0], batches) for refs, batches in ray.get(self.launcher.running.remote(), timeout=30)]
        except (*ACTOR_LOST, GetTimeoutError):
            return []

    def _named(self, slot: int, role: str) -> dict[str, Any]:
        """A crew actor's options: detached, under a fresh name (kept in ``names[slot]``)."""
        self.names[slot] = crew_registry.new_name(self.setup.crawl_id, role)
        return {"name": self.names[slot], "namespace": crew_registry.CREW_NAMESPACE, "lifetime": "detached"}

    def _shard_maker(self, shard_id: int) -> ActorMaker:
        setup = self.setup
        return lambda place: self._shard_class.options(
            scheduling_strategy=place, **self._named(shard_id, f"shard-{shard_id}")
        ).remote(shard_id, setup, setup.crawl_id)

    def _partition_maker(self, partition: int) -> ActorMaker:
        setup, slot = self.setup, len(self.names) - self.setup.partitions + partition
        return lambda place: self._dedup_class.options(
            scheduling_strategy=place, **self._named(slot, f"partition-{partition}")
        ).remote(*self._dedup_args, partition, setup.out, setup.filesystem, setup.seen_ttl, setup.crawl_id)

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
            calls.append(self._tell(i, "offer", batch, theirs))
        ray.get(calls)

    def requeue(self, entries: list[UrlEntry], retry: bool = False) -> None:
        """URLs the seen-set has already taken, to their hosts' shards; ``retry``: dead letters crawled again."""
        by_shard: dict[int, list[UrlEntry]] = {}
        for entry in entries:
            by_shard.setdefault(shard_for(host_key(entry.url), len(self.shards)), []).append(entry)
        ray.get([self._tell(i, "retry" if retry else "requeue", batch) for i, batch in by_shard.items()])

    def control(self, shard: int, action: HostAction) -> bool:
        """An operator's action on one of ``shard``'s hosts; False: the shard does not know the host."""
        return bool(ray.get(self._tell(shard, "control", action)))

    def _tell(self, shard: int, method: str, *args: Any) -> Any:
        """Call ``method`` of ``shard``, kept until the next checkpoint for a successor to be told again."""
        self._told[shard].append((method, args))
        return getattr(self.shards[shard], method).remote(*args)

    def add_scope_hosts(self, hosts: list[str]) -> None:
        ray.get([s.add_scope_hosts.remote(hosts) for s in self.shards])

    # --- the seen-set's recovery ---------------------------------------------------------------------

    def rebuild(self, dead: list[int], checkpoint: CheckpointParts) -> None:
        """New actors for the ``dead`` partitions, exactly as the old ones were; shards ask them what they held."""
        if not dead:
            return
        self.recoveries += len(dead)
        offset = len(self.shards)
        self.placement.avoid(self.nodes[offset + p] for p in dead)  # (a hard affinity never outlives its node)
        blobs = checkpoint()
        logs = ray.get([s.seen_log.remote(p) for p in dead for s in self.shards])
        fresh, nodes = self.placement.place([self._partition_maker(p) for p in dead])
        calls = []
        for k, p in enumerate(dead):
            self.partitions[p], self.nodes[offset + p] = fresh[k], nodes[k]
            if blobs is not None:
                calls.append(self.partitions[p].restore.remote(blobs[p]))
            for s, logged in enumerate(logs[k * len(self.shards) : (k + 1) * len(self.shards)]):
                if logged:  # (each shard's marks as its own: a shard lost later is rebuilt from them)
                    calls.append(self.partitions[p].add_new.remote(logged, s, self.incarnations[s]))
        ray.get(calls)
        ray.get([s.set_partition.remote(p, self.partitions[p]) for p in dead for s in self.shards])
        self.handles = ray.put((self.shards, self.partitions, self.renderers))
        self.register()

    # --- a lost shard, rebuilt alone ------------------------------------------------------------------

    def rebuild_shards(self, lost: list[int], checkpoint: list[bytes] | None, scope_hosts: list[str]) -> bool:
        """New actors for the ``lost`` shards, each restored from the last checkpoint's part (None: none yet) and
        given what was sent or told it since, and what it took as new since to find again; the other shards are
        untouched. False when it cannot be exact (the crawl must go back whole): one of the lost shards' payload
        captures since the checkpoint is named by a revisit record, the logs since it outgrew their bounds, or a
        coordinator that died since told the shards what this one does not know."""
        if not self._told_whole:
            return False
        for s in lost:
            self.incarnations[s] += 1
        shards = len(self.shards)
        answers = ray.get([p.lost_shard.remote(s, shards, self.incarnations[s]) for s in lost for p in self.partitions])
        if not all(undone for _, undone in answers):
            return False
        self.recoveries += len(lost)
        self.placement.avoid(self.nodes[s] for s in lost)
        fresh, nodes = self.placement.place([self._shard_maker(s) for s in lost])
        for s, actor, node in zip(lost, fresh, nodes, strict=True):
            self.shards[s], self.nodes[s] = actor, node
        setup = [self.shards[s].connect.remote(self.shards, self.partitions) for s in lost]
        setup += [self.shards[s].add_scope_hosts.remote(scope_hosts) for s in lost]
        if checkpoint is not None:
            setup += [self.shards[s].restore.remote(checkpoint[s]) for s in lost]
        ray.get(setup)
        live = [i for i in range(len(self.shards)) if i not in lost]
        handovers = ray.get(
            [self.shards[i].hand_over.remote(s, self.incarnations[s], self.shards[s]) for s in lost for i in live]
        )
        if not all(h.complete for h in handovers):  # (logs past their bound: the crawl goes back whole)
            return False
        calls = []
        for k, s in enumerate(lost):
            marks = {p: answers[k * len(self.partitions) + p][0] for p in range(len(self.partitions))}
            theirs = handovers[k * len(live) : (k + 1) * len(live)]
            calls.append(self.shards[s].succeed.remote(theirs, marks, self.incarnations[s]))
        ray.get(calls)
        ray.get([getattr(self.shards[s], method).remote(*args) for s in lost for method, args in self._told[s]])
        self.handles = ray.put((self.shards, self.partitions, self.renderers))
        self.register()
        return True

    def set_renderers(self, renderers: list[Any]) -> None:
        """The render pool's actors changed (actors/render.py): fetch tasks launched from now on are given these."""
        self.renderers = list(renderers)
        self.handles = ray.put((self.shards, self.partitions, self.renderers))

    def dead_partitions(self) -> list[int]:
        return _dead([p.stats.remote() for p in self.partitions])

    def dead_shards(self) -> list[int]:
        return _dead([s.node.remote() for s in self.shards])

    def silent(self) -> tuple[list[int], list[int]]:
        """The shards and the partitions that are gone, or that do not answer within LOST_CHECK_TIMEOUT (a node Ray
        has not yet noticed is lost)."""
        answers = answering_nodes([*self.shards, *self.partitions], LOST_CHECK_TIMEOUT)
        gone, n = [i for i, answer in enumerate(answers) if answer is None], len(self.shards)
        return [i for i in gone if i < n], [i - n for i in gone if i >= n]

    def nodes_of(self, shards: list[int], partitions: list[int]) -> list[str]:
        """The nodes these shards and partitions were placed on: a crew made after their loss avoids them."""
        n = len(self.shards)
        return sorted({self.nodes[i] for i in [*shards, *(n + p for p in partitions)]})

    # --- checkpoints ---------------------------------------------------------------------------------

    def snapshot_refs(self) -> tuple[list[Any], list[Any]]:
        return [s.snapshot.remote() for s in self.shards], [p.snapshot.remote() for p in self.partitions]

    def restore(self, shards: list[bytes], partitions: list[bytes]) -> None:
        ray.get(
            [s.restore.remote(blob) for s, blob in zip(self.shards, shards, strict=True)]
            + [p.restore.remote(blob) for p, blob in zip(self.partitions, partitions, strict=True)]
        )

    def checkpointed(self) -> None:
        """The checkpoint committed: files in the crawl's storage that only older ones named go."""
        self._told, self._told_whole = [[] for _ in self.shards], True
        ray.get([a.checkpointed.remote() for a in [*self.shards, *self.partitions]])

    def close(self) -> None:
        ray.get([a.close.remote() for a in [*self.shards, *self.partitions]])

    def where(self, addresses: bool = False) -> dict[str, list[str]]:
        """The node of each shard and each partition, in their order, as placed: Ray node ids, or (``addresses``)
        the nodes' IP addresses."""
        nodes = self.placement.addresses(self.nodes) if addresses else self.nodes
        return {"shards": nodes[: len(self.shards)], "partitions": nodes[len(self.shards) :]}

    def kill(self) -> None:
        """End the crew's actors (detached: nothing else would, but their watch for a coordinator gone)."""
        for actor in [*self.shards, *self.partitions, *([self.launcher] if self.launcher is not None else [])]:
            ray.kill(actor)


def _dead(refs: list[Any]) -> list[int]:
    """The positions of the calls whose actor is lost."""
    ray.wait(refs, num_returns=len(refs))
    dead = []
    for i, ref in enumerate(refs):
        try:
            ray.get(ref)
        except ACTOR_LOST:
            dead.append(i)
    return dead
