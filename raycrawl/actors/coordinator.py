"""The coordinator: the crawl's scheduler. It decides which fetch tasks run, when and with which shards' leases;
it never touches a page.

One round (the decisions are ``core/crawl_loop.CrawlLoop``'s; this class makes the calls):
  1. every shard gets one ``lease`` call (in parallel): a quota; it answers with a lease batch, packed
     (actors/wire.py: carried on as it is), and a small summary (counts, the batch's size and first due time, the
     crawl's counters it moved since the last round);
  2. staged batches are cut into fetch tasks (many shards' batches per task, as bytes), up to as many
     as the cluster's CPUs hold (``max_tasks_in_flight`` at most); on a cluster with an autoscaler, the CPUs that
     the crawl's demand needs are asked for (actors/capacity.py, core/demand.py);
  3. ``ray.wait`` until a task ends or the next round is due.
Fetch tasks settle their results with the shards that leased them; shards send new links through the seen-set
partitions to the shards that own them. The crawl ends exactly when it is at rest (no task, no link on its way)
and nothing is queued or leased anywhere. A checkpoint is taken when it is at rest, too (actors/checkpoints.py).

How it survives: a seen-set partition that dies is rebuilt alone and exactly (actors/crew.py); a shard that
dies, or a node lost with buffered output, rolls the whole crawl back to its last checkpoint; a fetch task that
dies has its shards take back the leases it had not settled; this coordinator's own process dying, Ray makes it
again and it picks the crawl up from its crew, which outlives it (actors/crew_registry.py, coordinator_checkpoints.py
``pick_up``).
"""

from __future__ import annotations

import dataclasses
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any, cast

import ray
from ray.exceptions import RayError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from raycrawl.actors import checkpoints, coordinator_start, crew_registry, kept_summaries, reporting, worker_heap
from raycrawl.actors.capacity import ClusterCapacity
from raycrawl.actors.coordinator_checkpoints import ROLLBACK_CAUSES, CheckpointsAndRollbacks
from raycrawl.actors.crew import Crew
from raycrawl.actors.dedup import DedupActor
from raycrawl.actors.fetch_task import warm_up
from raycrawl.actors.frontier import FrontierShardActor
from raycrawl.actors.metrics import CrawlMetrics
from raycrawl.actors.output_cut import OutputParts
from raycrawl.actors.placement import ACTOR_LOST, Placement
from raycrawl.actors.render import RenderPool
from raycrawl.actors.settings import (
    crawl_id_of,
    fetch_settings,
    loop_settings,
    render_rules,
    render_settings,
    shard_setup,
)
from raycrawl.adapters.snapshots import open_store
from raycrawl.config import CrawlConfig
from raycrawl.core.checkpoint_sequence import CheckpointSequence
from raycrawl.core.crawl_loop import CrawlLoop, RoundPlan, ShardSummary
from raycrawl.core.dead_letters import BUDGET_OUTCOMES, RETRIED_OUTCOMES
from raycrawl.core.host_actions import HostAction
from raycrawl.core.proxy_routes import ProxyPlan
from raycrawl.core.scope import ScopePolicy
from raycrawl.core.sharding import actor_counts, shard_for
from raycrawl.core.stats import CrawlStats
from raycrawl.proxies import proxy_plan

WARM_UP_TIMEOUT = 20.0


class Coordinator:
    def __init__(
        self, cfg: CrawlConfig, seeds: Sequence[str], out_dir: str, run: str | None = None, detached: bool = False
    ) -> None:
        """``run``: this run's id (its node buffers' names: a coordinator that restarts keeps them); ``detached``:
        no driver waits on the crawl (CoordinatorClient.start)."""
        # The proxies with their credentials (made where the crawl started): for the fetch workers, and kept out
        # of the settings this coordinator tells others (describe(), checkpoints)
        self.egress: ProxyPlan = cfg.egress if cfg.egress is not None else proxy_plan(cfg)
        cfg = cfg.replace(egress=None)
        self.cfg = cfg
        self.out_dir = out_dir
        self.seeds = list(seeds)
        self.crawl_id = crawl_id_of(cfg, out_dir)
        # Made again by Ray after its process died: the crawl is picked up, not begun (cuts.pick_up)
        self.restarted = coordinator_start.made_again()
        record = coordinator_start.restart_record(self)
        self._open_output(run or uuid.uuid4().hex[:8], record)
        # The crawl's scope, held here and grown only by _widen_scope; each new crew is given it whole.
        self.scope = ScopePolicy(cfg.scope, self.seeds, cfg.allow, cfg.deny)
        self._placement = Placement()  # (one for the crawl: nodes that lost actors stay avoided by later crews)
        self.capacity = ClusterCapacity(cfg.fetch_task_cpus, cfg.max_tasks_in_flight)
        self.capacity.look()
        self._placement.keep_on_head = self.capacity.autoscaler  # (nodes an autoscaler removes hold no actor)
        self.fetch_settings = fetch_settings(cfg, out_dir, self.output.buffer, self.egress)
        # Browsers for the pages that need one (actors/render.py): started before the crawl, or the crawl does not
        # start (no Chromium where they run is the operator's to fix, not a thousand error records).
        ever, fetch = render_rules(cfg).ever, self.fetch_settings
        self.render_pool = RenderPool(render_settings(cfg), fetch, self.capacity.autoscaler) if ever else None
        # The fetch workers start while the shards and partitions do (both are new processes; one after the other,
        # a small crawl's first request came ~1 s later).
        self._warming = self._start_warm_up()
        self._started_at = record.started_at if record is not None else 0.0  # (the crawl's, once it runs)
        self.adopted = False  # a restart that found its crew alive: the crawl goes on from it (take_crew)
        self.crew = coordinator_start.take_crew(self, record)
        self._fetch_settings_ref = ray.put(self.fetch_settings)  # (put once: every task would pickle it again)
        self.metrics = CrawlMetrics(self.crawl_id)
        self.loop = CrawlLoop(loop_settings(cfg), self.num_shards)
        self._incoming_seeds: list[str] = []  # seeds added while running, taken by the next round
        self._finished = False
        self._sequence = CheckpointSequence()  # checkpoint ids, their failures, the ones taken (core/)
        self._status: dict[str, Any] = {"state": "starting"}
        self._lock = threading.Lock()
        self._finished_batches: list[list[int]] = [[] for _ in range(self.num_shards)]
        self._last_stats = 0.0
        self._host_counts: dict[str, int] = {}  # hosts ready / paused, from the last stats summary
        self._proxy_health: list[dict[str, Any]] | None = None  # ... and each proxy's health (with proxies)
        self._retry_requested: frozenset[str] | None = None  # retry_errors() of a running crawl: these outcomes
        self._final: dict[str, Any] | None = None  # the summary run() returned (for clients attached by name)
        self._failure: Exception | None = None  # what run() raised, for the driver (final())
        self._runner: threading.Thread | None = None  # the thread running run() (start_run)
        # Each recovery from a lost process: kind, cause, seconds, pages fetched again (kept on the cluster too)
        self.recoveries: list[dict[str, Any]] = crew_registry.recoveries(self.crawl_id) if self.restarted else []
        self._render_stats: dict[str, int] | None = None  # the render pool's counters when it closed
        self.cuts = CheckpointsAndRollbacks(self)  # (actors/coordinator_checkpoints.py)
        if self.restarted:  # (no driver will ask for the run: it goes on by itself)
            self.start_run(detached)

    def _open_output(self, run: str, record: crew_registry.CrewRecord | None) -> None:
        """The output, the checkpoint store, and (on --resume or a restart) the checkpoint to go on from."""
        cfg = self.cfg
        buffered = cfg.warc or cfg.extracting  # (WARC and item lines wait on the nodes for the cut)
        self.output = OutputParts(self.out_dir, cfg.filesystem, f"{self.crawl_id}-{run}" if buffered else None, run)
        self.store = open_store(cfg.redis_url, self.crawl_id, self.output.storage)
        # On --resume the checkpoint decides the shard and partition counts (on a restart, the crew's record):
        # hosts are routed by crc32(host) % shards, fingerprints by fp % partitions.
        self._resumed = checkpoints.load(self.store) if cfg.resume or self.restarted else None
        cpus = int(ray.cluster_resources().get("CPU", 2))
        self._unwrapped_parts = 0  # WARC parts an older raycrawl gzipped twice, put right by this resume
        resumed = None
        if self._resumed is not None:
            _, self._unwrapped_parts = self.output.resume(self._resumed.state.parts)
            resumed = (self._resumed.state.num_shards, len(self._resumed.dedup))
        if record is not None:
            resumed = (len(record.shards), len(record.partitions))
        self.num_shards, self.num_partitions = actor_counts(cfg.shards, cfg.dedup_partitions, cpus, resumed)

    def _crew_parts(self) -> tuple[Any, Any, Any, tuple[str, int, float]]:
        setup = shard_setup(self.cfg, self.seeds, self.num_shards, self.num_partitions, self.out_dir, self.crawl_id)
        setup = dataclasses.replace(setup, proxies=self.egress.without_secrets())
        return cast(Any, FrontierShardActor), cast(Any, DedupActor), setup, self._dedup_args()

    def _new_crew(self) -> Crew:
        renderers = self.render_pool.actors if self.render_pool is not None else []
        crew = Crew(*self._crew_parts(), self._placement, renderers)
        crew.join(self.scope.seed_hosts(), self._started_at)
        return crew

    def _widen_scope(self, urls: Sequence[str] = (), hosts: Sequence[str] = ()) -> None:
        """The one way the crawl's scope grows (new seeds' hosts, or a checkpoint's): the coordinator's ScopePolicy
        owns the list (checkpoints save it), and every shard is given all of it (each screens links itself)."""
        self.scope.add_seeds(urls)
        self.scope.add_hosts(hosts)
        self.crew.add_scope_hosts(self.scope.seed_hosts())

    def _dedup_args(self) -> tuple[str, int, float]:
        return self.cfg.dedup, self.cfg.bloom_capacity, self.cfg.bloom_error_rate

    @property
    def stats(self) -> CrawlStats:
        return self.loop.stats

    # --- control (called from other threads of the actor) --------------------------------------------

    def stop(self, reason: str = "stopped by request") -> None:
        """The operator's stop: fetches under way finish, a checkpoint is taken, queued URLs stay queued."""
        with self._lock:
            self.loop.stop(reason)
            crew_registry.note_operator(self.crawl_id, self.loop.operator_said())  # (for a coordinator made again)

    def pause(self, reason: str = "paused by operator") -> None:
        """No new leases; fetches under way finish. Queued URLs wait (the crawl does not end while paused)."""
        with self._lock:
            self.loop.paused = reason
            crew_registry.note_operator(self.crawl_id, self.loop.operator_said())  # (for a coordinator made again)

    def unpause(self) -> None:
        """Undo pause(). (Not "resume": that is a crawl restarted from its checkpoint, ``--resume``.)"""
        with self._lock:
            self.loop.paused = None
            crew_registry.note_operator(self.crawl_id, self.loop.operator_said())  # (for a coordinator made again)

    def add_seeds(self, urls: Sequence[str]) -> None:
        """URLs (as they will be requested) to crawl as seeds (depth 0); their hosts join a host- or domain-scoped
        crawl."""
        with self._lock:
            self._incoming_seeds.extend(urls)

    def retry_errors(self, budget: bool = False) -> None:
        """The dead letters -- URLs whose records ended in error (``budget``: out_of_budget too) -- crawled again,
        after the checkpoint that this takes next (their records are all in the output then)."""
        with self._lock:
            self._retry_requested = RETRIED_OUTCOMES | (BUDGET_OUTCOMES if budget else frozenset())
            self.loop.checkpoint_now()

    def checkpoint_now(self) -> None:
        """A checkpoint as soon as the crawl is at rest, whatever the interval says (before maintenance, say)."""
        with self._lock:
            self.loop.checkpoint_now()

    def describe(self) -> tuple[CrawlConfig, str, str]:
        """(settings, output location, crawl id): what a client attaching by name needs."""
        return self.cfg, self.out_dir, self.crawl_id

    def final(self) -> dict[str, Any] | None:
        """The crawl's summary once it has ended (None before); the run's error if it failed."""
        with self._lock:
            if self._failure is not None and self._final is None:
                raise self._failure
            return self._final

    def status(self) -> dict[str, Any]:
        with self._lock:
            status = dict(self._status)
            if self.loop.paused and status.get("state") in ("starting", "running"):
                status["state"] = "paused"  # at once, not only from the next round's status
            return status

    def hosts(self) -> list[dict[str, Any]]:
        tables = ray.get([s.hosts.remote() for s in self.crew.shards])
        return [row for table in tables for row in table]

    def placement(self) -> dict[str, Any]:
        """Where the crawl's actors run: the coordinator's node, and each shard's and seen-set partition's."""
        return {"coordinator": ray.get_runtime_context().get_node_id(), **self.crew.where()}

    def control_host(self, action: HostAction) -> bool:
        """An operator's action on one host, done by the shard that owns it (a netloc, e.g. example.com); False:
        the crawl has no such host."""
        return self.crew.control(shard_for(action.host, self.num_shards), action)

    # --- the loop ------------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        self._warm_up()
        if self.restarted:
            self.cuts.pick_up()
        else:
            coordinator_start.begin(self)
        try:
            while True:
                while not self._round():
                    pass
                # The finished state, checkpointed: a --resume of it has nothing left to do. (A node lost with
                # buffered output rolls the crawl back to its last checkpoint instead: then it goes on.)
                if self.loop.user_stop is not None or self.cuts.final_checkpoint():
                    break
        finally:
            self.output.close()
            self.capacity.withdraw()
            if self.render_pool is not None:
                self._render_stats = self.render_pool.close()
        self._finished = self.loop.user_stop is None
        summary = self._summary()
        self._write_stats(summary)
        with self._lock:
            self._status = self._progress("finished")
            self._final = summary
        self.crew.close()
        return summary

    def end(self) -> None:
        """The crawl is over and its driver has what it wanted of it: its shards and partitions end (detached
        actors: nothing else would), and its record with them."""
        self.crew.kill()
        crew_registry.forget(self.crawl_id)

    def start_run(self, detached: bool = False) -> None:
        """Run the crawl on a thread of this actor's own and return (once: a second call is a no-op). The driver
        that started it waits on ``final()``; a ``detached`` crawl has none: when it ends, its summary is kept on
        the cluster (actors/kept_summaries.py) and this actor ends, letting the crawl's name go."""
        with self._lock:
            if self._runner is not None:
                return
            self._runner = threading.Thread(target=self._run_alone, args=(detached,), name="raycrawl-run", daemon=True)
        self._runner.start()

    def _run_alone(self, detached: bool) -> None:
        try:
            summary = self.run()
        except Exception as exc:  # (for the driver: final() raises it, as a call to run() would have)
            summary = {"state": "failed", "error": f"{type(exc).__name__}: {exc}", "out_dir": self.out_dir}
            with self._lock:
                self._status, self._failure = {"state": "finished"}, exc
                if detached:  # (no driver to raise it to: whoever asks later reads it)
                    self._final = summary
        if detached:
            kept_summaries.keep(self.crawl_id, summary)
            self.end()
            ray.kill(ray.get_runtime_context().current_actor, no_restart=True)

    def _start_warm_up(self) -> list[Any]:
        """Start fetch workers now, not mid-crawl (see warm_up): one per CPU (more when demand asks for them)."""
        options = {"num_cpus": self.cfg.fetch_task_cpus}
        return [warm_up.options(**options).remote(self.fetch_settings, 0.3) for _ in range(self.capacity.warm_workers)]

    def _warm_up(self) -> None:
        """Wait for the fetch workers started with the crawl; bounded, and harmless if it times out."""
        refs, self._warming = self._warming, []
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=WARM_UP_TIMEOUT)
        self.stats.events["fetch_workers_warmed"] = len(set(ray.get(ready)))
        worker_heap.freeze_startup_heap()  # (this actor is set up: actors/worker_heap.py)

    def _round(self) -> bool:
        """One round; True when the crawl is over. A shard or partition that died is rebuilt alone (or, when it
        cannot be, the crawl rolls back to its checkpoint: CheckpointsAndRollbacks.recover)."""
        try:
            return self._round_once()
        except ROLLBACK_CAUSES as exc:
            self.cuts.recover(exc)
            return False

    def _round_once(self) -> bool:
        started = time.time()
        with self._lock:
            seeds, self._incoming_seeds = self._incoming_seeds, []
        if seeds:
            self._widen_scope(urls=seeds)
            self.stats.seeds += len(seeds)
            self.crew.offer_seeds(seeds, self.cfg.tracking_params)
        with self._lock:
            plan = self.loop.plan()
        self._call_shards(plan)
        self._follow_demand()
        dead = self.loop.dead_partitions()
        if dead:
            self.cuts.rebuild_partitions(dead)
        if self.loop.at_rest() and (self.loop.checkpoint_due or self.loop.user_stop is not None):
            self.cuts.checkpoint()  # nothing running, nothing on its way: a consistent cut
            if self.loop.user_stop is not None:
                return True
            with self._lock:
                retry, self._retry_requested = self._retry_requested, None
            if retry is not None:
                coordinator_start.retry_dead_letters(self, retry)
                return False  # (the next round's summaries count the URLs queued again before anything ends)
        if self.loop.over():
            return True
        self._launch()
        self._publish()
        self._wait(started)
        return False

    def _call_shards(self, plan: RoundPlan) -> None:
        horizon = self.cfg.lease_horizon
        finished, self._finished_batches = self._finished_batches, [[] for _ in range(self.num_shards)]
        refs = [
            shard.lease.remote(quota, horizon, plan.drain, batch_id, done, chain)
            for shard, quota, batch_id, done, chain in zip(
                self.crew.shards, plan.quotas, plan.batch_ids, finished, plan.chains, strict=True
            )
        ]
        ray.wait(refs, num_returns=len(refs))
        # (a shard lost: the others' answers still count -- their counts and leases are not asked for twice)
        summaries: list[ShardSummary | None] = []
        batches: list[bytes | None] = []
        lost: Exception | None = None
        for ref in refs:  # (all answered: the wait above)
            try:
                batch, summary = ray.get(ref)
            except ACTOR_LOST as exc:
                batch, summary, lost = None, None, exc
            batches.append(batch)
            summaries.append(summary)
        latencies = [seconds for s in summaries if s is not None for seconds in s.latencies]
        moved = self.loop.answered(plan, summaries, batches)
        self.metrics.record_round(moved.outcomes, moved.bytes, latencies, moved.verdicts)
        if lost is not None:
            raise lost

    def _follow_demand(self) -> None:
        """Tasks launch up to what the cluster's CPUs hold; an autoscaler is asked for what demand needs."""
        self.capacity.look()
        self.loop.task_capacity = self.capacity.tasks
        self.capacity.follow(self.loop.demand())
        if self.render_pool is not None and self.render_pool.follow():
            self.crew.set_renderers(self.render_pool.actors)  # (tasks launched from now on use these)

    def _launch(self) -> None:
        options: dict[str, Any] = {"num_cpus": self.cfg.fetch_task_cpus}
        home = self.capacity.home()  # (tasks packed on one node while it holds them: the others can go idle)
        if home is not None:
            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(home, soft=True)
        tasks = self.loop.to_launch()
        if not tasks:
            return
        shared = [self._fetch_settings_ref, self.crew.handles]  # (in a list: resolved by the task, once)
        launched = self.crew.launch(tasks, options, shared, self._sequence.next_epoch)
        if launched is None:
            self.stats.events["fetch_launcher_lost"] += 1
            return
        for task, batches in zip(launched, tasks, strict=True):
            self.loop.launched(task, batches)

    def _wait(self, round_started: float) -> None:
        """Until a fetch task ends or the next round is due (and no sooner than MIN_ROUND after the last:
        core/round_timing.py)."""
        earliest, latest = self.loop.wake_at(round_started)
        pause = earliest - time.time()
        if pause > 0:
            time.sleep(pause)
        tasks = list(self.loop.tasks)
        if not tasks:
            time.sleep(max(0.0, latest - time.time()))
            return
        ready, _ = ray.wait(tasks, num_returns=1, timeout=max(0.0, latest - time.time()))
        if not ready:
            return
        ready, _ = ray.wait(tasks, num_returns=len(tasks), timeout=0)  # (every task that has ended by now)
        self.tasks_ended(ready)

    def tasks_ended(self, ready: list[Any], release: Callable[[int], bool] = lambda shard: True) -> None:
        """Fetch tasks that ended: a failed one's leases not settled go back to the shards ``release`` picks (a lost
        shard's are gone with it)."""
        failed: dict[int, list[int]] = {}
        for task in ready:
            batches = self.loop.task_ended(task)
            try:
                ray.get(task)
            except RayError:
                self.stats.events["failed_tasks"] += 1
                for b in batches:
                    if release(b.shard):
                        failed.setdefault(b.shard, []).append(b.batch_id)
                continue
            for b in batches:
                self._finished_batches[b.shard].append(b.batch_id)
        if failed:
            reason = "fetch task failed"
            ray.get([self.crew.shards[s].release_batches.remote(ids, reason) for s, ids in failed.items()])

    # --- what the world sees -------------------------------------------------------------------------

    def _progress(self, state: str) -> dict[str, Any]:
        status = reporting.progress(
            state, self.loop, self._host_counts, self._sequence.error, self._sequence.taken, self._proxy_health
        )
        status |= {"demand": self.capacity.view(len(self.loop.tasks))}
        return status | ({"recoveries": list(self.recoveries)} if self.recoveries else {})

    def _publish(self) -> None:
        with self._lock:
            loop = self.loop
            stopping = loop.stop_reason or loop.user_stop
            self._status = self._progress("stopping" if stopping else "paused" if loop.paused else "running")
        now = time.time()
        if now - self._last_stats >= self.cfg.stats_interval:
            self._last_stats = now
            summary = self._summary()
            self._write_stats(summary)
            self.metrics.record_summary(summary)
            self._host_counts = {k: summary["frontier"].get(k, 0) for k in ("hosts_ready", "hosts_paused_now")}
            self._proxy_health = summary.get("proxies")

    def _summary(self) -> dict[str, Any]:
        return {
            **reporting.summary(
                reporting.CrawlView(
                    cfg=self.cfg,
                    loop=self.loop,
                    crew=self.crew,
                    store=self.store.describe(),
                    checkpoints=self._sequence.taken,
                    finished=self._finished,
                    out=self.output.storage.where,
                )
            ),
            "demand": self.capacity.view(len(self.loop.tasks)),
            **self._render_summary(),
            "recoveries": list(self.recoveries),
        }

    def _render_summary(self) -> dict[str, Any]:
        if self.render_pool is None:
            return {}
        return {"render": self._render_stats if self._render_stats is not None else self.render_pool.stats()}

    def _write_stats(self, summary: dict[str, Any]) -> None:
        problem = reporting.write_summary(self.output.storage, summary)
        if problem is not None:
            self.stats.events["stats_write_failures"] += 1
            self._sequence.error = self._sequence.error or problem


# The coordinator made remote as it is (no forwarding class): threaded, so status() and stop() answer while run()
# loops (on a thread of its own, start_run). Callers reach it through its client (actors/coordinator_client.py),
# never with .remote() of their own.
# Restarted by Ray when its process dies (it picks the crawl up: cuts.pick_up), as often as that happens; calls to it
# meanwhile wait for it (every method may be called twice). Not when its driver ends: it belongs to the driver.
CoordinatorActor = ray.remote(num_cpus=0, max_concurrency=8, max_restarts=-1, max_task_retries=-1)(Coordinator)
