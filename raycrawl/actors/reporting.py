"""What the coordinator tells the world: the live status, stats.json every few seconds, the final summary,
and the metrics of each round. Mixed into the Coordinator; it reads the crawl's state, never changes it."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import ray

from raycrawl.actors.coordinator_state import CoordinatorState
from raycrawl.adapters.output import write_stats
from raycrawl.adapters.storage import StorageError
from raycrawl.core.records import UrlEntry

STATS_EVERY = 5.0
TOP_HOSTS = 50  # per-host rows in stats.json (the API's hosts() has them all)


class Reporting(CoordinatorState):
    """Mixed into the Coordinator: the state only it reads is declared here, owned there."""

    _queued: int
    _leased: int
    _host_counts: dict[str, int]
    _user_stop: str | None
    _stop_reason: str | None
    _pushes: list[list[UrlEntry]]
    _paused_all: str | None
    _lock: threading.Lock
    _status: dict[str, Any]
    _last_stats: float
    _finished: bool

    def _record_metrics(self, records: list[dict[str, Any]]) -> None:
        if not records:
            return
        outcomes = Counter(r["outcome"] for r in records)
        size = sum(r["bytes"] for r in records)
        latencies = [r["elapsed_ms"] / 1000 for r in records if r["status"] is not None and r["elapsed_ms"]]
        self.metrics.record_round(outcomes, size, latencies)

    def _progress(self, state: str) -> dict[str, Any]:
        now = time.time()
        s = self.stats
        elapsed = max(now - s.started_at, 1e-9)
        return {
            "state": state,
            "elapsed_s": round(elapsed, 1),
            "pages": s.pages_fetched,
            "records": s.records,
            "pages_per_s": round(s.pages_fetched / elapsed, 1),
            "queued": self._queued,
            "leased": self._leased,
            "tasks_in_flight": len(self._in_flight),
            "errors": s.outcomes["error"],
            "hosts_ready": self._host_counts.get("hosts_ready", 0),
            "hosts_paused": self._host_counts.get("hosts_paused_now", 0),
            "stop_reason": self._user_stop or self._stop_reason,
            "checkpoint_error": self._checkpoint_error,
            "checkpoints": len(self._checkpoints),
        }

    def _publish(self) -> None:
        self.output.pages.flush()
        with self._lock:
            stopping = self._stop_reason or self._user_stop
            state = "stopping" if stopping else "paused" if self._paused_all else "running"
            self._status = self._progress(state)
        now = time.time()
        if now - self._last_stats >= STATS_EVERY:
            self._last_stats = now
            summary = self._summary()
            self._write_stats(summary)
            self.metrics.record_summary(summary, len(self._in_flight))
            self._host_counts = {k: summary["frontier"].get(k, 0) for k in ("hosts_ready", "hosts_paused_now")}

    def _write_stats(self, summary: dict[str, Any]) -> None:
        """stats.json in the output; a storage that refuses it is said in the status, and tried again."""
        try:
            write_stats(self.output.storage, summary)
        except StorageError as exc:
            self.stats.events["stats_write_failures"] += 1
            self._checkpoint_error = self._checkpoint_error or f"stats.json: {exc}"

    def _summary(self) -> dict[str, Any]:
        now = time.time()
        # One ray.get for all of it: every shard's counters and host table, and the seen-set's figures.
        n = len(self.shards)
        answers = ray.get(
            [s.counters.remote() for s in self.shards]
            + [s.hosts.remote() for s in self.shards]
            + self.dedup.stats_refs()
        )
        shard_counters: list[dict[str, int]] = answers[:n]
        hosts = [row for table in answers[n : 2 * n] for row in table]
        dedup_stats = self.dedup.merged_stats(answers[2 * n :])
        paused = [{"host": h["host"], "reason": h["paused"], "fetched": h["fetched"]} for h in hosts if h["paused"]]
        busiest = sorted(hosts, key=lambda h: (h["requests"], h["queued"]), reverse=True)[:TOP_HOSTS]
        frontier: dict[str, int] = {}
        for counters in shard_counters:
            for key, value in counters.items():
                if key != "next_due_in_ms":
                    frontier[key] = frontier.get(key, 0) + value
        summary = self.stats.summary(now)
        # URLs the crawl holds but did not reach: queued in the shards (or held there past a host's page budget)
        # or waiting to be pushed to them. A --resume (with larger budgets) goes on with them.
        left_queued = (
            frontier.get("queued", 0) + frontier.get("held_over_budget", 0) + sum(len(q) for q in self._pushes)
        )
        summary.update(
            {
                "finished": self._finished,
                "stop_reason": self._user_stop
                or self._stop_reason
                or ("max-pages-per-host reached" if frontier.get("held_over_budget") else "frontier exhausted"),
                "resumable": self._user_stop is not None or left_queued > 0,
                "left_queued": left_queued,
                "checkpoints": {
                    "store": self.store.describe(),
                    "taken": len(self._checkpoints),
                    "last": self._checkpoints[-1] if self._checkpoints else None,
                    "failures": self.stats.events.get("checkpoint_failures", 0),
                },
                "shards": self.num_shards,
                "frontier": frontier,
                "dedup": dedup_stats,
                "paused_hosts": paused,
                "closed_hosts": [{"host": h["host"], "reason": h["closed"]} for h in hosts if h["closed"]],
                "crawl_delay_capped_hosts": [
                    {"host": h["host"], "crawl_delay": h["crawl_delay"], "delay": h["delay"]}
                    for h in hosts
                    if h["crawl_delay"] is not None and h["crawl_delay"] > self.cfg.max_crawl_delay
                ],
                "hosts": busiest,
                "out_dir": self.output.storage.where,
            }
        )
        return summary
