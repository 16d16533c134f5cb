"""The coordinator's checkpoints and roll-backs (a part of actors/coordinator.py's ``Coordinator``, apart for size):
a cut of the output and the crawl's state when it is at rest, and -- when a shard dies, or a node with buffered
output is lost -- the whole crawl rolled back to its last checkpoint. The decisions (epochs, failures, pauses) are
core/checkpoint_sequence.py's; these methods make the calls.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import ray

from raycrawl.actors import checkpoints, crew_registry
from raycrawl.actors.output_cut import OutputLost, OutputUnwritable
from raycrawl.actors.placement import ACTOR_LOST, made_despite_losses
from raycrawl.actors.settings import loop_settings
from raycrawl.adapters.snapshots import StoreUnavailable
from raycrawl.config import saved_settings
from raycrawl.core.checkpoint_sequence import drain_seconds
from raycrawl.core.checkpoint_state import CheckpointState
from raycrawl.core.crawl_loop import CrawlLoop, StagedBatch
from raycrawl.core.losses import describe_loss
from raycrawl.core.records import UrlEntry
from raycrawl.core.stats import CrawlStats

if TYPE_CHECKING:
    from raycrawl.actors.coordinator import Coordinator

# What rolls the crawl back to its last checkpoint: a shard lost (or never able to start), or a node lost with output.
ROLLBACK_CAUSES: tuple[type[Exception], ...] = (*ACTOR_LOST, OutputLost)


class CheckpointsAndRollbacks:
    def __init__(self, coordinator: Coordinator) -> None:
        self.c = coordinator  # (a roll-back makes its crew and loop anew)
        self.cutting = False  # a checkpoint cut under way (a shard lost in one: the crawl goes back whole)

    # --- the seen-set's partitions -------------------------------------------------------------------

    def _checkpoint_seen(self) -> list[bytes] | None:
        """The committed checkpoint's seen-set parts, for a partition that is rebuilt (None: no checkpoint yet)."""
        loaded = checkpoints.load(self.c.store) if self.c._sequence.taken or self.c._resumed else None
        return loaded.dedup if loaded is not None else None

    def rebuild_partitions(self, dead: list[int]) -> None:
        began, before = time.time(), self.c.crew.recoveries
        self.c.crew.rebuild(dead, self._checkpoint_seen)
        self.c.stats.events["dedup_recoveries"] += self.c.crew.recoveries - before
        self.note("seen-set partition rebuilt", f"partition {', '.join(map(str, dead))} lost", began, 0)

    # --- checkpoints ---------------------------------------------------------------------------------

    def final_checkpoint(self) -> bool:
        """The checkpoint of the finished crawl; False when a node was lost with output of the last interval (the
        crawl has rolled back to its last checkpoint, and goes on)."""
        try:
            self.checkpoint()
        except ROLLBACK_CAUSES as exc:
            self.roll_back(exc)
            return False
        return True

    def checkpoint(self) -> None:
        """Store the interval's output, then write the cut that lists it. A store that fails: warn and keep
        crawling (the next interval tries again, nothing is lost). A node lost with buffered output: OutputLost
        (the caller rolls the crawl back)."""
        period = self.c.loop.cut_period()  # (--rollover: the parts' directory)
        self.cutting = True
        self.c.loop.checkpointed()
        epoch = self.c._sequence.begin()
        try:
            parts = self.c.output.cut(epoch, ray.get([s.cut.remote(epoch, period) for s in self.c.crew.shards]), period)
        except OutputUnwritable as exc:
            self._cut_failed(epoch, f"output: {exc}")
            return
        if self.c.output.type_conflicts:
            self.c.stats.events["item_type_conflicts"] += self.c.output.type_conflicts
            self.c.output.type_conflicts = 0
        state = CheckpointState(
            num_shards=self.c.num_shards,
            dedup=self.c.cfg.dedup,
            dedup_partitions=self.c.num_partitions,
            config=saved_settings(self.c.cfg),  # a --resume runs with these (api.resume_config)
            scope_hosts=self.c.scope.seed_hosts(),
            parts=parts,  # the output as of this cut (actors/output_cut.py): a resume deletes other parts
            stats=self.c.stats.to_dict(time.time()),
        )
        try:
            try:
                taken = checkpoints.take(self.c.store, epoch, self.c.crew, state)
            except ACTOR_LOST:
                self.rebuild_partitions(self.c.crew.dead_partitions())  # (a dead shard: the round meets it)
                taken = checkpoints.take(self.c.store, epoch, self.c.crew, state)
        except (StoreUnavailable, OSError) as exc:
            self._cut_failed(epoch, str(exc))
            return
        self.c._sequence.committed(epoch, taken, self.c.output.committed(epoch))
        self.c.crew.checkpointed()  # the checkpoint holds all of the seen-set now
        self.c.loop.cut_committed()
        self.cutting = False
        self.c.metrics.record_checkpoint(float(taken["seconds"]))

    def _cut_failed(self, epoch: int, why: str) -> None:
        self.cutting = False
        self.c._sequence.failed(epoch, why)
        self.c.stats.events["checkpoint_failures"] += 1

    # --- a lost shard ---------------------------------------------------------------------------------

    def recover(self, cause: Exception) -> None:
        """A crew actor (or a node with output) lost, met by a call of the coordinator's own: seen-set partitions
        alone are rebuilt, a frontier shard alone where it can be (``rebuild_lost_shards``), else the crawl goes
        back to its last checkpoint."""
        if not (self._rebuild_lost_partitions(cause) or self.rebuild_lost_shards(cause)):
            self.roll_back(cause)

    def _rebuild_lost_partitions(self, cause: Exception) -> bool:
        """Only seen-set partitions are lost -- met by the coordinator's stats call, say, while no shard asked them
        (a continuous crawl's revisits answered 304 find no link): they are rebuilt, as when a shard meets one; the
        crawl used to go back whole. False: a shard or a node is lost too, or the loss met a cut."""
        if isinstance(cause, OutputLost) or self.cutting:
            return False
        try:
            if self.c.crew.dead_shards():
                return False
            dead = self.c.crew.dead_partitions()
            if dead:
                self.rebuild_partitions(dead)
        except ACTOR_LOST:  # (another loss while rebuilding: the caller goes on to the next way)
            return False
        return bool(dead)

    def rebuild_lost_shards(self, cause: Exception) -> bool:
        """A frontier shard died: it alone is rebuilt, from the last checkpoint and what the others sent or were
        told it since (actors/crew.py ``rebuild_shards``); its hosts' pages since that checkpoint are fetched again,
        the other shards go on untouched, and its uncommitted output (page records in its buffer, WARC spans and
        items it kept) went with it. False when the crawl must go back whole instead: a node lost with output, a
        shard lost during a cut (or output stored by a cut that failed since), every shard lost, or a capture of
        the lost shard's already named by another's revisit record."""
        c = self.c
        if isinstance(cause, OutputLost) or self.cutting:
            return False
        loaded = checkpoints.load(c.store) if c._sequence.taken or c._resumed else None
        if sorted(c.output.parts) != sorted(loaded.state.parts if loaded is not None else c.output.parts[:0]):
            return False  # (a cut that failed stored parts since: some may be the lost shard's)
        try:
            lost = c.crew.dead_shards()
            if not lost or len(lost) == c.num_shards:
                return False
            began = time.time()
            # The fetches of its leases end first (their results have nowhere to go): its hosts' clocks, restored,
            # count a request as made when the rebuild is done -- after the last one those fetches sent.
            self._drain(lambda shard: shard in lost)
            if not c.crew.rebuild_shards(lost, loaded.shards if loaded is not None else None, c.scope.seed_hosts()):
                return False
        except ACTOR_LOST:  # (more was lost than the shards: a node)
            return False
        for shard in lost:
            c._finished_batches[shard] = []
        again = c.loop.lost_shards(lost)
        c.stats.events["shard_rebuilds"] += len(lost)
        which = ", ".join(map(str, lost))
        self.note("frontier shard rebuilt", f"shard {which} lost ({type(cause).__name__})", began, again)
        return True

    def _drain(self, holding: Callable[[int], bool] = lambda shard: True) -> None:
        """Wait (bounded) for the fetch tasks under way that hold leases of the shards ``holding`` picks (by default
        all), so no request of theirs lands after a restore; the other shards take back a failed task's leases."""
        deadline = time.monotonic() + drain_seconds(self.c.cfg.timeout)
        while time.monotonic() < deadline:
            tasks = [t for t, batches in self.c.loop.tasks.items() if any(holding(b.shard) for b in batches)]
            if not tasks:
                return
            ready, _ = ray.wait(tasks, num_returns=len(tasks), timeout=0.5)
            self.c.tasks_ended(ready, release=lambda shard: not holding(shard))

    def roll_back(self, cause: Exception) -> None:
        """A frontier shard died (or a node with buffered output): roll the whole crawl back to the last
        checkpoint (or to the start): what was done since is redone once, and nothing is lost."""
        began = time.time()
        during_cut, self.cutting = self.cutting, False
        self.c.stats.events["rollbacks"] += 1
        rollbacks = self.c.stats.events["rollbacks"]
        self._drain()  # (fetches under way end first, so no old request lands after the restore)
        # One look at who answers: it names the loss, and keeps the new crew off the nodes of the silent ones.
        shards, partitions = self.c.crew.silent()
        why = describe_loss(shards, partitions, output_lost=isinstance(cause, OutputLost), during_cut=during_cut)
        self._back_to_checkpoint(rollbacks, (shards, partitions))
        self.note("rolled back to the last checkpoint", f"{why} ({type(cause).__name__})", began)

    def _back_to_checkpoint(self, rollbacks: int, silent: tuple[list[int], list[int]]) -> None:
        """A new crew and loop, from the last checkpoint (or the start), on nodes that answer. ``silent``: the
        crew's shards and partitions found silent just now (``Crew.silent``)."""
        # The nodes of the actors that are gone (or do not answer: a node Ray has not yet noticed is lost) get none
        # of the new ones.
        self.c._placement.avoid(self.c.crew.nodes_of(*silent))
        # (a new actor placed on a node that is dying -- Ray notices a lost node only after missed heartbeats -- dies
        # too: Ray catches up during the pause, and each try starts from scratch)
        made_despite_losses(lambda: self._recreate_and_restore(rollbacks))
        self.c.stats.events["rollbacks"] = rollbacks

    # --- a coordinator made again ------------------------------------------------------------------

    def pick_up(self) -> None:
        """This coordinator was made again by Ray (its process died). With its crew found alive and no checkpoint
        cut half-made, the crawl goes on from the crew as it is: the fetch tasks its launcher still runs are waited
        for, the other leases out go back (their hosts' clocks count a request as made now), and the counters are
        the last checkpoint's plus what each shard told since. Otherwise it goes back to the last checkpoint, as a
        roll-back does. Either way the recovery is noted (kind, cause, seconds, pages fetched again at most)."""
        c = self.c
        began = time.time()
        with c._lock:  # (a stop or pause the operator asked of the coordinator that died holds)
            c.loop.heed(crew_registry.operator_said(c.crawl_id))
        loaded = c._resumed
        committed = loaded.checkpoint_id if loaded is not None else None
        shards = c.crew.shards
        if c.adopted and not any(ray.get([s.pending_cut.remote(committed) for s in shards])):
            # The fetch tasks still running (the crew's launcher submitted them) are waited for; the rest went back.
            running: list[list[int]] = [[] for _ in shards]
            for task, batches in c.crew.running_tasks():
                c.loop.adopt(task, [StagedBatch(shard, batch_id, leases, began) for shard, batch_id, leases in batches])
                for shard, batch_id, _ in batches:
                    running[shard].append(batch_id)
            reason = "coordinator restarted"
            taken = ray.get([s.take_over.remote(reason, ids) for s, ids in zip(shards, running, strict=True)])
            stats = CrawlStats.from_dict(loaded.state.stats, began) if loaded else CrawlStats(started_at=0.0)
            for shard, (_, since, _) in enumerate(taken):
                stats.add(since)
                c.loop.since_cut[shard].add(since)
            stats.started_at = c._started_at or stats.started_at or began
            c.loop.stats = stats
            if loaded is not None:
                c._widen_scope(hosts=loaded.state.scope_hosts)
                c._sequence.restored(committed)
            again = sum(n for n, _, _ in taken)
            away_since = max((at for _, _, at in taken if at), default=began)  # (the old one's last round)
            self.note("coordinator restarted", "its crew alive: picked up where it was", away_since, again)
            return
        c.stats.started_at = c._started_at or began
        self._back_to_checkpoint(c.stats.events["rollbacks"], c.crew.silent())
        self.note("coordinator restarted", "from the last checkpoint (its crew lost, or a cut half-made)", began)

    def note(self, kind: str, cause: str, began: float, again: int | None = None) -> None:
        """A recovery, for stats.json, status() and the metrics: its kind, cause, seconds (from ``began``: the
        loss, as near as it is known, to now), pages fetched again (at most; None: all since the last checkpoint)."""
        c = self.c
        recovery = {"kind": kind, "cause": cause, "at": round(began, 3), "seconds": round(time.time() - began, 3)}
        if again is not None:
            recovery["pages_again_at_most"] = again
        c.recoveries = crew_registry.note_recovery(c.crawl_id, recovery)
        c.stats.events[f"recoveries: {kind}"] += 1
        c.metrics.record_recovery(kind)

    def _recreate_and_restore(self, rollbacks: int) -> None:
        self.c.crew.kill()
        started, seeds = self.c.stats.started_at, self.c.stats.seeds
        self.c.crew = self.c._new_crew()
        with self.c._lock:  # (the operator's calls come on other threads)
            before, self.c.loop = self.c.loop, CrawlLoop(loop_settings(self.c.cfg), self.c.num_shards)
            self.c.loop.heed(before.operator_said())
        self.c._finished_batches = [[] for _ in range(self.c.num_shards)]
        loaded = checkpoints.load(self.c.store)
        # This interval's buffered output is dropped and its stored parts deleted: its URLs are fetched again.
        self.c.output.roll_back(loaded.state.parts if loaded is not None else [])
        if loaded is not None:
            self.restore(loaded)
        else:  # no checkpoint yet: start over
            self.c.loop.stats = CrawlStats(started_at=started, seeds=seeds)
            self.c._sequence.restored(None)
            self.c.crew.offer_seeds(self.c.seeds, self.c.cfg.tracking_params)
        self.c.stats.events["rollbacks"] = rollbacks

    def restore(self, loaded: checkpoints.Loaded) -> None:
        self.c.crew.restore(loaded.shards, loaded.dedup)
        state = loaded.state
        self.c.loop.stats = CrawlStats.from_dict(state.stats, time.time())
        # The scope is the crawl's, not this command's: a resume without seeds keeps following the seeds' hosts.
        self.c._widen_scope(hosts=state.scope_hosts)
        self.c.crew.requeue([UrlEntry.from_row(row) for row in state.pushes])
        self.c._sequence.restored(loaded.checkpoint_id)
        self.c.stats.events["resumed"] += 1
