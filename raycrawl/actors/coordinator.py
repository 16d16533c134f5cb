"""The coordinator: the crawl loop, and the only writer to the seen-set's partitions and the shards.

One round:
  1. every shard gets one ``exchange`` call (in parallel, one ``ray.get``): acks of finished fetches, new URLs
     for its hosts, and a lease quota; it answers with leases, URLs that ended inside it, and its counts;
  2. results the shards accepted become records; their outlinks are canonical already (the fetch task did
     it), so they are filtered (depth, length, scope), deduplicated in one dedup call, and held as the next
     round's pushes;
  3. leases are staged and cut into fetch tasks (many hosts per task), up to ``max_tasks_in_flight``;
  4. ``ray.wait`` until a task finishes or a host comes due.
The crawl ends exactly when nothing is queued, leased, staged, in flight or waiting to be pushed.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Sequence
from typing import Any, cast

import ray
from ray.exceptions import RayActorError, RayError

from raycrawl.actors import checkpoints
from raycrawl.actors.dedup import DedupActor
from raycrawl.actors.fetch_task import fetch_batch, warm_up
from raycrawl.actors.frontier import FrontierShardActor
from raycrawl.actors.metrics import CrawlMetrics
from raycrawl.actors.output_cut import OutputLost, OutputParts
from raycrawl.actors.recovery import Recovery
from raycrawl.actors.reporting import Reporting
from raycrawl.actors.settings import crawl_id_of, fetch_settings
from raycrawl.adapters.snapshots import open_store
from raycrawl.config import CrawlConfig
from raycrawl.core.batching import split_quota, take_batches
from raycrawl.core.frontier import HOST_BUDGET, ShardReply
from raycrawl.core.outlinks import children, screen, seed_links, unfollowed_redirect
from raycrawl.core.pages import error_kind, fault_record, fetch_record, terminal_record
from raycrawl.core.records import Ack, FetchResult, Lease, Link, UrlEntry
from raycrawl.core.scope import ScopePolicy
from raycrawl.core.sharding import shard_for
from raycrawl.core.stats import CrawlStats
from raycrawl.core.traps import TrapRules
from raycrawl.core.urls import fingerprint, host_key

LAUNCH_SLACK = 0.05  # launch a partly filled task this long before its first URL is due
MAX_IDLE_WAIT = 0.25  # wake at least this often to check limits and stop requests
MAX_DRAIN = 64  # stream items taken per wait, at most
WARM_UP_TIMEOUT = 20.0
SHARD_REFRESH = 1.0  # call every shard at least this often (counts, lease expiry)
# Seen-set partitions by default: one per this many CPUs of the cluster (a partition checks ~a million URLs a second,
# and a cluster of that many CPUs finds far fewer: more partitions only cost round trips).
CPUS_PER_PARTITION = 8
MAX_GATHER = 0.05  # collect results for up to this long between rounds (less when the delay is short)


class Coordinator(Recovery, Reporting):
    def __init__(self, cfg: CrawlConfig, seeds: Sequence[str], out_dir: str) -> None:
        self.cfg = cfg
        self.out_dir = out_dir
        self.seeds = list(seeds)
        crawl_id = crawl_id_of(cfg, out_dir)
        run = uuid.uuid4().hex[:8]
        self.output = OutputParts(out_dir, cfg.filesystem, f"{crawl_id}-{run}" if cfg.warc else None, run)
        self.store = open_store(cfg.redis_url, crawl_id, self.output.storage)
        # On --resume the checkpoint decides the shard and partition counts: hosts are routed by crc32(host) %
        # shards, fingerprints by fp % partitions.
        self._resumed = checkpoints.load(self.store) if cfg.resume else None
        cpus = int(ray.cluster_resources().get("CPU", 2))
        if self._resumed is not None:
            self.output.resume(self._resumed.state.get("parts", []))
            self.num_shards = int(self._resumed.state["num_shards"])
            partitions = len(self._resumed.dedup)
        else:
            self.num_shards = cfg.shards or max(2, cpus)
            partitions = cfg.dedup_partitions or max(1, cpus // CPUS_PER_PARTITION)
        self._shard_class: Any = cast(Any, FrontierShardActor)  # .remote() is added by @ray.remote
        self._dedup_class: Any = cast(Any, DedupActor)
        self.shards = self._new_shards()
        self.dedup = self._new_dedup(partitions)
        self.fetch_settings = fetch_settings(cfg, out_dir, self.output.buffer)
        self.scope = ScopePolicy(cfg.scope, self.seeds, cfg.allow, cfg.deny)
        self.traps = TrapRules(max_path_depth=cfg.max_path_depth, max_repeated_segments=cfg.max_repeated_segments)
        self.metrics = CrawlMetrics(crawl_id)
        self.stats = CrawlStats(started_at=time.time())
        self._stop_reason: str | None = None  # a budget ran out (leftovers = "record"): queued ends out_of_budget
        self._user_stop: str | None = None  # the operator stopped, or a budget: checkpoint, leave the rest queued
        self._paused_all: str | None = None  # the operator paused the crawl: no new leases until resumed
        self._incoming_seeds: list[str] = []  # seeds added while running, taken by the next round
        self._host_counts: dict[str, int] = {}  # hosts ready / paused, from the last stats summary
        self._finished = False
        self._epoch = 1  # the id of the next checkpoint; WARC files carry it
        self._last_checkpoint = time.monotonic()  # when the last cut was taken
        self._checkpoint_due = False
        self._quiesce_started = 0.0
        self._last_quiesce = 0.0
        self._checkpoint_error: str | None = None
        self._checkpoints: list[dict[str, float]] = []
        self._status: dict[str, Any] = {"state": "starting"}
        self._lock = threading.Lock()
        # round state
        self._acks: list[list[Ack]] = [[] for _ in self.shards]
        self._acked: list[list[FetchResult]] = [[] for _ in self.shards]
        self._pushes: list[list[UrlEntry]] = [[] for _ in self.shards]
        self._staged: list[Lease] = []
        # Each running fetch task's result stream, with the leases it has not reported yet.
        self._in_flight: dict[Any, dict[tuple[int, int], Lease]] = {}
        self._queued = 0
        self._queued_paused = 0
        self._final_drain: str | None = None
        self._leased = 0
        self._next_due: float | None = None
        self._rotation = 0
        self._replies: list[ShardReply | None] = [None] * self.num_shards
        self._last_call: list[float] = [0.0] * self.num_shards
        self._last_stats = 0.0

    # --- control (called from other threads of the actor) --------------------------------------------

    def stop(self, reason: str = "stopped by request") -> None:
        """The operator's stop: fetches under way finish, a checkpoint is taken, queued URLs stay queued."""
        with self._lock:
            if self._user_stop is None:
                self._user_stop = reason

    def pause(self, reason: str = "paused by operator") -> None:
        """No new leases; fetches under way finish. Queued URLs wait (the crawl does not end while paused)."""
        with self._lock:
            self._paused_all = reason

    def resume(self) -> None:
        with self._lock:
            self._paused_all = None

    def add_seeds(self, urls: Sequence[str]) -> None:
        """URLs (as they will be requested) to crawl as seeds (depth 0); their hosts join a host- or domain-scoped
        crawl."""
        with self._lock:
            self._incoming_seeds.extend(urls)

    def _budget_stop(self, reason: str) -> None:
        """A budget ran out. A budget is a limit, not a verdict: by default the crawl stops as on the operator's
        stop -- fetches under way finish, a checkpoint is taken, queued URLs stay queued, and ``--resume`` with a
        larger budget goes on. With ``leftovers = "record"`` every queued URL ends as an out_of_budget record."""
        with self._lock:
            if self.cfg.leftovers == "keep":
                if self._user_stop is None:
                    self._user_stop = reason
            elif self._stop_reason is None:
                self._stop_reason = reason

    def status(self) -> dict[str, Any]:
        with self._lock:
            status = dict(self._status)
            if self._paused_all and status.get("state") in ("starting", "running"):
                status["state"] = "paused"  # at once, not only from the next round's status
            return status

    def hosts(self) -> list[dict[str, Any]]:
        tables = ray.get([s.hosts.remote() for s in self.shards])
        return [row for table in tables for row in table]

    def control_host(self, action: str, host: str, *args: Any) -> bool:
        """pause_host / resume_host / set_delay on the shard that owns ``host`` (a netloc, e.g. example.com)."""
        if action not in ("pause_host", "resume_host", "set_delay"):
            raise ValueError(f"unknown host action {action!r}")
        shard = self.shards[shard_for(host, self.num_shards)]
        return bool(ray.get(shard.control.remote(action, host, *args)))

    # --- the loop ------------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        self._warm_up()
        self.stats.started_at = time.time()  # --time-limit and pages/s count crawling, not worker start-up
        if self._resumed is not None:
            self._restore(self._resumed)
        self.stats.seeds += len(self.seeds)
        self._route_links(seed_links(self.seeds, self.cfg.tracking_params))
        try:
            while True:
                while not self._round():
                    pass
                # The finished state, checkpointed: a --resume of it has nothing left to do. (A node lost with
                # buffered output rolls the crawl back to its last checkpoint instead: then it goes on.)
                if self._user_stop is not None or self._final_checkpoint():
                    break
        finally:
            self.output.close()
        self._finished = self._user_stop is None
        summary = self._summary()
        self._write_stats(summary)
        with self._lock:
            self._status = self._progress("finished")
        return summary

    def _warm_up(self) -> None:
        """Start the fetch workers now, not mid-crawl (see warm_up); bounded, and harmless if it times out."""
        options = {"num_cpus": self.cfg.fetch_task_cpus}
        refs = [
            warm_up.options(**options).remote(self.fetch_settings, 0.3) for _ in range(self.cfg.max_tasks_in_flight)
        ]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=WARM_UP_TIMEOUT)
        self.stats.events["fetch_workers_warmed"] = len(set(ray.get(ready)))

    def _round(self) -> bool:
        """One round; True when the crawl is over. A shard that died rolls the crawl back to its checkpoint."""
        try:
            return self._round_once()
        except (RayActorError, OutputLost):
            self._roll_back()
            return False

    def _round_once(self) -> bool:
        started = time.time()
        self._check_limits(started)
        with self._lock:
            seeds, self._incoming_seeds = self._incoming_seeds, []
            paused = self._paused_all
        if seeds:
            self.scope.add_seeds(seeds)
            self.stats.seeds += len(seeds)
            self._route_links(seed_links(seeds, self.cfg.tracking_params))
        stopping = self._stop_reason or self._final_drain
        interval = self.cfg.checkpoint_interval
        # Quiesce early by as long as the last quiesce took, so that cuts are at most `interval` apart:
        # what a crash can cost is then at most one interval of work. A buffer past the part size: cut now.
        if not self._checkpoint_due and (
            (interval and time.monotonic() - self._last_checkpoint >= interval - self._last_quiesce)
            or self.output.over(self.cfg.max_part_bytes)
        ):
            self._checkpoint_due = True
            self._quiesce_started = time.monotonic()
        quiescing = self._checkpoint_due or self._user_stop is not None
        calls = self._shards_to_call(started, bool(stopping))
        budget = self._lease_budget() if not (stopping or quiescing or paused) else 0
        quotas = split_quota(budget, len(calls), self._rotation) if calls else []
        self._rotation += 1
        refs = [
            self.shards[i].exchange.remote(self._acks[i], self._pushes[i], q, self.cfg.lease_horizon, stopping)
            for i, q in zip(calls, quotas, strict=True)
        ]
        acked = [self._acked[i] for i in calls]
        for i in calls:
            self._acks[i], self._acked[i], self._pushes[i] = [], [], []
            self._last_call[i] = started
        replies: list[ShardReply] = ray.get(refs)
        for i, reply in zip(calls, replies, strict=True):
            self._replies[i] = reply
        self._absorb(replies, acked)
        if quiescing and not self._in_flight and not any(self._acks):
            # Nothing in flight, every result acked and recorded: a consistent cut.
            self._checkpoint()
            if self._user_stop is not None:
                return True
        if not quiescing:
            self._launch()
        pending_pushes = any(self._pushes)
        active_queued = self._queued - self._queued_paused
        if not (self._in_flight or self._staged or pending_pushes or active_queued or self._leased):
            if not self._queued:
                return True
            # Only paused hosts still hold URLs: one more round ends them, saying why each host was paused.
            self._final_drain = "frontier exhausted"
        self._publish()
        self._wait(started, pending_pushes)
        return False

    def _shards_to_call(self, now: float, stopping: bool) -> list[int]:
        """Shards with something to do: acks or URLs for them, a host due within the horizon, or a refresh due.

        A shard changes only through our calls (and lease expiry, which the periodic refresh covers), so one
        whose last reply showed nothing due can be left alone: fewer round trips, for the same decisions.
        """
        horizon = now + self.cfg.lease_horizon
        out = []
        for i, reply in enumerate(self._replies):
            if (
                stopping
                or reply is None
                or self._acks[i]
                or self._pushes[i]
                or (reply.next_due is not None and reply.next_due <= horizon)
                or now - self._last_call[i] >= SHARD_REFRESH
            ):
                out.append(i)
        return out

    def _check_limits(self, now: float) -> None:
        cfg = self.cfg
        if cfg.time_limit is not None and now - self.stats.started_at >= cfg.time_limit:
            self._budget_stop("time limit reached")
        if cfg.max_pages is not None and self.stats.pages_fetched >= cfg.max_pages:
            self._budget_stop("max-pages reached")

    def _lease_budget(self) -> int:
        cfg = self.cfg
        in_flight = sum(len(v) for v in self._in_flight.values())
        budget = cfg.max_tasks_in_flight * cfg.fetch_batch_size - in_flight - len(self._staged)
        if cfg.max_pages is not None:
            # Results already back but not yet absorbed count too; robots leases among these only make it stricter.
            pages_pending = in_flight + len(self._staged) + sum(len(r) for r in self._acked)
            budget = min(budget, cfg.max_pages - self.stats.pages_fetched - pages_pending)
        return max(0, budget)

    def _absorb(self, replies: list[ShardReply], acked: list[list[FetchResult]]) -> None:
        now = time.time()
        records: list[dict[str, Any]] = []
        links: list[Link] = []
        latest = [r for r in self._replies if r is not None]  # every shard's last word, called now or not
        self._queued = sum(r.queued for r in latest)
        self._queued_paused = sum(r.queued_paused for r in latest)
        self._leased = sum(r.leased for r in latest)
        dues = [r.next_due for r in latest if r.next_due is not None]
        self._next_due = min(dues) if dues else None
        for reply, results in zip(replies, acked, strict=True):
            records.extend(terminal_record(t, now) for t in reply.terminals)
            for t in reply.terminals:
                self.stats.outcomes[t.outcome] += 1
                if t.detail == HOST_BUDGET:
                    self.stats.dropped[HOST_BUDGET] += 1
            stale, retried = set(reply.stale), set(reply.retried)
            for result in results:
                lease_id = result.lease.lease_id
                # Its WARC records stay when the result counts: a page record, or the robots.txt obeyed.
                kept = lease_id not in stale and lease_id not in retried
                self.output.absorb(result, kept)
                if lease_id in stale:
                    self.stats.events["stale_results"] += 1
                elif lease_id in retried:
                    self.stats.events["retries"] += 1
                elif result.lease.kind == "robots":
                    self.stats.robots_fetches += 1
                else:
                    records.append(self._page_record(result, links))
            self._staged.extend(reply.leases)
        self.output.pages.write(records)
        self._record_metrics(records)
        self._route_links(links)

    def _page_record(self, result: FetchResult, links: list[Link]) -> dict[str, Any]:
        """A fetched URL's record, its counters, and its links added to ``links``. The coordinator's side of the
        per-URL fault boundary: whatever goes wrong with one result becomes that URL's error record."""
        try:
            record = fetch_record(result)
            problem = unfollowed_redirect(result, self.cfg.max_redirects)
            if problem is not None:
                rule, record["error"] = problem
                record["outcome"], result.outlinks = "error", []
                self.stats.dropped[rule] += 1
            page_links = children(result, self.cfg.max_depth, self.stats.dropped)
        except Exception as exc:
            record = fault_record(result, exc)
            result.fault, page_links = type(exc).__name__, []
        links.extend(page_links)
        self.stats.outcomes[record["outcome"]] += 1
        self.stats.statuses[str(result.status) if result.status is not None else error_kind(record["error"])] += 1
        self.stats.bytes += result.size
        self.stats.fetch_nodes[result.node] += 1
        if result.fault is not None:
            self.stats.faults[result.fault] += 1
        if result.links_capped:
            self.stats.events["outlinks_capped"] += 1
        return record

    def _route_links(self, links: list[Link]) -> None:
        """Trap-, scope- and dedup-filter candidate links; the new ones become the next round's pushes."""
        candidates = screen(links, self.traps, self.scope, self.stats.dropped)
        if not candidates:
            return
        urls = list(candidates)
        fps = [fingerprint(u) for u in urls]
        mask = self._add_new(fps)
        for url, new in zip(urls, mask, strict=True):
            if not new:
                self.stats.events["duplicate_links"] += 1
                continue
            depth, parent, chain, requested = candidates[url]
            entry = UrlEntry(url, depth, parent, 0, chain, requested)
            self._pushes[shard_for(host_key(url), self.num_shards)].append(entry)

    def _launch(self) -> None:
        free = self.cfg.max_tasks_in_flight - len(self._in_flight)
        options = {"num_cpus": self.cfg.fetch_task_cpus}
        now = time.time()
        # A task carries URLs due within this long of its first: as wide as leasing ahead allows, so tasks are
        # full; bounded, so a task ends soon and frees its slot (its results stream back as they complete).
        window = max(LAUNCH_SLACK, self.cfg.lease_horizon - LAUNCH_SLACK)
        for batch in take_batches(self._staged, free, self.cfg.fetch_batch_size, now, LAUNCH_SLACK, window):
            stream = fetch_batch.options(**options).remote(self.fetch_settings, batch, self._epoch)
            self._in_flight[stream] = {(lease.shard, lease.lease_id): lease for lease in batch}
            self.stats.count_task(len(batch))
        self.stats.peak_tasks_in_flight = max(self.stats.peak_tasks_in_flight, len(self._in_flight))

    def _wake_at(self) -> float:
        """When the next round must start at the latest: a host coming due, or a staged task to launch."""
        wake = time.time() + MAX_IDLE_WAIT
        if self._next_due is not None and self._paused_all is None:
            wake = min(wake, self._next_due - self.cfg.lease_horizon)
        if self._staged:
            wake = min(wake, min(lease.not_before for lease in self._staged) - LAUNCH_SLACK)
        return wake

    def _wait(self, round_started: float, pending_pushes: bool) -> None:
        """Collect results until the next round is worth it.

        Rounds are paced: results are gathered for ``gather`` seconds (a fraction of the delay, so no host's
        next lease is late) instead of a full round trip to every shard per result. Each task streams its
        results as its URLs complete.
        """
        gather = min(MAX_GATHER, self.cfg.delay / 4)
        earliest = round_started + gather
        latest = self._wake_at()
        if pending_pushes:
            latest = min(latest, earliest)
        pause = min(earliest, latest) - time.time()
        if pause > 0:
            time.sleep(pause)
        if not self._in_flight:
            time.sleep(max(0.0, latest - time.time()))
            return
        streams = list(self._in_flight)
        ready, _ = ray.wait(streams, num_returns=1, timeout=max(0.0, latest - time.time()))
        if not ready:
            return
        refs: list[tuple[Any, Any]] = []
        ended: list[Any] = []
        live = streams
        for _ in range(MAX_DRAIN):  # every item already waiting, from every stream
            ready, _ = ray.wait(live, num_returns=len(live), timeout=0)
            if not ready:
                break
            for stream in ready:
                try:
                    refs.append((stream, next(stream)))
                except StopIteration:
                    ended.append(stream)
            live = [stream for stream in live if stream not in ended]
            if not live:
                break
        if refs:
            try:
                groups: list[list[FetchResult]] = ray.get([ref for _, ref in refs])
            except RayError:
                groups = self._get_each(refs)
            for results in groups:
                for result in results:
                    self._ack(result)
        for stream in ended:  # only now: its last results were just acked above
            self._finish_stream(stream, None)

    def _ack(self, result: FetchResult) -> None:
        lease = result.lease
        for remaining in self._in_flight.values():
            if remaining.pop((lease.shard, lease.lease_id), None) is not None:
                break
        self._acks[lease.shard].append(
            Ack(
                lease.lease_id,
                result.status,
                result.responded_at,
                # the latency term of the delay counts the whole exchange, body included (core/politeness.py)
                max(0.0, result.ended_at - result.sent_at) if result.sent_at else result.elapsed_ms / 1000,
                result.transient,
                result.error,
                result.body,
                result.retry_at,
                ended_at=result.ended_at or result.responded_at,
                truncated=result.truncated,
            )
        )
        result.body = None
        self._acked[lease.shard].append(result)

    def _get_each(self, refs: list[tuple[Any, Any]]) -> list[list[FetchResult]]:
        """Some task failed (its worker died): hand its unreported leases back at once, keep the rest."""
        out: list[list[FetchResult]] = []
        for stream, ref in refs:
            try:
                out.append(ray.get(ref))
            except RayError as exc:
                self.stats.events["failed_tasks"] += 1
                self._finish_stream(stream, f"fetch task failed: {type(exc).__name__}")
        return out

    def _finish_stream(self, stream: Any, failure: str | None) -> None:
        """A task's stream ended; any lease it never reported goes back to its shard."""
        remaining = self._in_flight.pop(stream, {})
        if not remaining:
            return
        by_shard: dict[int, list[int]] = {}
        for shard, lease_id in remaining:
            by_shard.setdefault(shard, []).append(lease_id)
        reason = failure or "fetch task ended without a result"
        ray.get([self.shards[s].release.remote(ids, reason) for s, ids in by_shard.items()])


@ray.remote(num_cpus=0, max_concurrency=8, max_restarts=0)
class CoordinatorActor:
    """The coordinator made remote; threaded so status() and stop() answer while run() loops."""

    def __init__(self, cfg: CrawlConfig, seeds: Sequence[str], out_dir: str) -> None:
        self._coordinator = Coordinator(cfg, seeds, out_dir)

    def run(self) -> dict[str, Any]:
        return self._coordinator.run()

    def status(self) -> dict[str, Any]:
        return self._coordinator.status()

    def stop(self, reason: str = "stopped by request") -> None:
        self._coordinator.stop(reason)

    def hosts(self) -> list[dict[str, Any]]:
        return self._coordinator.hosts()

    def control_host(self, action: str, host: str, *args: Any) -> bool:
        return self._coordinator.control_host(action, host, *args)

    def pause(self, reason: str = "paused by operator") -> None:
        self._coordinator.pause(reason)

    def resume(self) -> None:
        self._coordinator.resume()

    def add_seeds(self, urls: Sequence[str]) -> None:
        self._coordinator.add_seeds(urls)
