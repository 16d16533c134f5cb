"""How the coordinator survives: checkpoints, resume, and the death of the actors it relies on.

- A seen-set partition (dedup actor) dies: rebuilt exactly (last checkpoint + the fingerprints taken as new
  since, which the coordinator logs as its only writer); the failed call is asked again. Nothing is redone.
- A frontier shard dies: its queues and host clocks cannot be rebuilt from elsewhere, so the whole crawl
  rolls back to the last checkpoint (or starts over): at most one checkpoint interval is redone.
- A fetch task dies: handled by the coordinator's loop (Ray reports it; its leases go back to their shards).
- A node dies with WARC buffered since the last cut: the cut cannot store it, so the crawl rolls back to the
  last checkpoint, as for a shard (actors/output_cut.py).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import ray
from ray.exceptions import RayActorError, RayError

from raycrawl.actors import checkpoints
from raycrawl.actors.coordinator_state import CoordinatorState
from raycrawl.actors.output_cut import OutputLost, OutputUnwritable
from raycrawl.actors.seen_partitions import SeenPartitions
from raycrawl.actors.settings import frontier_settings
from raycrawl.adapters.snapshots import StoreUnavailable
from raycrawl.config import saved_settings
from raycrawl.core.outlinks import seed_links
from raycrawl.core.records import Ack, FetchResult, Lease, Link, UrlEntry
from raycrawl.core.scope import ScopePolicy
from raycrawl.core.sharding import shard_for
from raycrawl.core.stats import CrawlStats
from raycrawl.core.urls import host_key

ROLLBACK_ATTEMPTS = 5


class Recovery(CoordinatorState):
    """Mixed into the Coordinator: the state only it touches is declared here, owned there."""

    seeds: list[str]
    scope: ScopePolicy
    _shard_class: Any
    _dedup_class: Any
    _resumed: checkpoints.Loaded | None
    _checkpoint_due: bool
    _last_checkpoint: float
    _quiesce_started: float
    _last_quiesce: float
    _epoch: int
    _staged: list[Lease]
    _acks: list[list[Ack]]
    _acked: list[list[FetchResult]]
    _pushes: list[list[UrlEntry]]
    _replies: list[Any]
    _last_call: list[float]

    def _route_links(self, links: list[Link]) -> None:
        raise NotImplementedError

    # --- the seen-set, and its recovery -----------------------------------------------------------------

    def _new_shards(self) -> list[Any]:
        # Spread over the nodes: a shard is light, but a node lost takes fewer shards (and their rollback) with it.
        spread = self._shard_class.options(scheduling_strategy="SPREAD")
        settings = frontier_settings(self.cfg)
        return [spread.remote(i, settings) for i in range(self.num_shards)]

    def _new_dedup(self, partitions: int) -> SeenPartitions:
        cfg = self.cfg
        return SeenPartitions(self._dedup_class, cfg.dedup, cfg.bloom_capacity, cfg.bloom_error_rate, partitions)

    def _checkpoint_seen(self) -> list[bytes] | None:
        """The committed checkpoint's seen-set parts, for a partition that is rebuilt (None: no checkpoint yet)."""
        loaded = checkpoints.load(self.store) if self._checkpoints or self._resumed else None
        return loaded.dedup if loaded is not None else None

    def _add_new(self, fps: list[int]) -> bytes:
        """Which fingerprints are new (and now seen). A partition that died is rebuilt exactly and asked again."""
        with self._counting_dedup_recoveries():
            return self.dedup.add_new(fps, self._checkpoint_seen)

    @contextlib.contextmanager
    def _counting_dedup_recoveries(self) -> Iterator[None]:
        before = self.dedup.recoveries
        try:
            yield
        finally:
            self.stats.events["dedup_recoveries"] += self.dedup.recoveries - before

    # --- checkpoints ---------------------------------------------------------------------------------

    def _final_checkpoint(self) -> bool:
        """The checkpoint of the finished crawl; False when a node was lost with output of the last interval (the
        crawl has rolled back to its last checkpoint, and goes on)."""
        try:
            self._checkpoint()
        except OutputLost:
            self._roll_back()
            return False
        return True

    def _checkpoint(self) -> None:
        """Store the interval's output, then write the cut that lists it. A store that fails: warn and keep
        crawling (the next interval tries again, nothing is lost). A node lost with buffered output: OutputLost
        (the caller rolls the crawl back)."""
        now = time.monotonic()
        if self._checkpoint_due:
            self._last_quiesce = min(now - self._quiesce_started, self.cfg.checkpoint_interval / 2)
        self._checkpoint_due = False
        self._last_checkpoint = now
        epoch = self._epoch
        self._epoch += 1  # (even if this cut fails: every attempt's parts have names of their own)
        try:
            parts = self.output.cut(epoch)
        except OutputUnwritable as exc:
            self.stats.events["checkpoint_failures"] += 1
            self._checkpoint_error = f"checkpoint {epoch} failed, will retry: output: {exc}"
            return
        state = {
            "num_shards": self.num_shards,
            "dedup": self.cfg.dedup,
            "config": saved_settings(self.cfg),  # a --resume runs with these (api.resume_config)
            "scope_hosts": self.scope.seed_hosts(),
            "parts": parts,  # the output as of this cut (actors/output_cut.py): a resume deletes other parts
            "pushes": [e.to_row() for queue in self._pushes for e in queue],
            "stats": self.stats.to_dict(time.time()),
        }
        try:
            try:
                taken = checkpoints.take(self.store, epoch, self.shards, self.dedup, state)
            except RayActorError:
                with self._counting_dedup_recoveries():  # (a shard's death is handled by the round that meets it)
                    self.dedup.recover_all(self._checkpoint_seen)
                taken = checkpoints.take(self.store, epoch, self.shards, self.dedup, state)
        except (StoreUnavailable, OSError) as exc:
            self.stats.events["checkpoint_failures"] += 1
            self._checkpoint_error = f"checkpoint {epoch} failed, will retry: {exc}"
            return
        self._checkpoint_error = self.output.committed(epoch)
        self.dedup.checkpointed()  # the checkpoint holds all of the seen-set now
        self._checkpoints.append({"id": epoch, **taken})
        self.metrics.record_checkpoint(float(taken["seconds"]))

    def _roll_back(self) -> None:
        """A frontier shard died: its queue and host clocks are gone. Roll the whole crawl back to the last
        checkpoint (or to the start): what was done since is redone once, and nothing is lost."""
        self.stats.events["rollbacks"] += 1
        rollbacks = self.stats.events["rollbacks"]
        # Let fetches under way end first (results ignored), so no old request lands after the restore.
        deadline = time.monotonic() + 4 * self.cfg.timeout + 30
        while self._in_flight and time.monotonic() < deadline:
            streams = list(self._in_flight)
            ready, _ = ray.wait(streams, num_returns=len(streams), timeout=0.5)
            for stream in ready:
                try:
                    next(stream)
                except (StopIteration, RayError):  # ended, or its task died: nothing more will come from it
                    self._in_flight.pop(stream, None)
        for attempt in range(ROLLBACK_ATTEMPTS):
            try:
                self._recreate_and_restore(rollbacks)
                break
            except RayActorError:
                # A new actor placed on a node that is dying (Ray notices a lost node only after missed
                # heartbeats) dies too: let Ray catch up, then place them again. Each try starts from scratch.
                if attempt == ROLLBACK_ATTEMPTS - 1:
                    raise
                time.sleep(min(2.0**attempt, 10.0))
        self.stats.events["rollbacks"] = rollbacks

    def _recreate_and_restore(self, rollbacks: int) -> None:
        for actor in self.shards:
            ray.kill(actor)
        self.dedup.kill()
        self.shards = self._new_shards()
        self.dedup = self._new_dedup(self.dedup.count)
        self._in_flight, self._staged = {}, []
        self._acks = [[] for _ in self.shards]
        self._acked = [[] for _ in self.shards]
        self._pushes = [[] for _ in self.shards]
        self._replies = [None] * self.num_shards
        self._last_call = [0.0] * self.num_shards
        loaded = checkpoints.load(self.store)
        # This interval's buffered output is dropped and its stored parts deleted: its URLs are fetched again.
        self.output.roll_back(loaded.state.get("parts", []) if loaded is not None else [])
        if loaded is not None:
            self._restore(loaded)
        else:  # no checkpoint yet: start over
            self.stats = CrawlStats(started_at=self.stats.started_at, seeds=self.stats.seeds)
            self._epoch = 1
            self._route_links(seed_links(self.seeds, self.cfg.tracking_params))
        self.stats.events["rollbacks"] = rollbacks

    def _restore(self, loaded: checkpoints.Loaded) -> None:
        ray.get(
            [shard.restore.remote(blob) for shard, blob in zip(self.shards, loaded.shards, strict=True)]
            + self.dedup.restore_refs(loaded.dedup)
        )
        state = loaded.state
        self.stats = CrawlStats.from_dict(state["stats"], time.time())
        for row in state["pushes"]:
            entry = UrlEntry.from_row(row)
            self._pushes[shard_for(host_key(entry.url), self.num_shards)].append(entry)
        # The scope is the crawl's, not this command's: a resume without seeds keeps following the seeds' hosts.
        self.scope.add_hosts(state.get("scope_hosts", []))
        self._epoch = loaded.checkpoint_id + 1
        self.stats.events["resumed"] += 1
