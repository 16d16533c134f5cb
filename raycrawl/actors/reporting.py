"""What the coordinator tells the world: the live status, stats.json every few seconds, and the final summary.
Functions of what they are given (``CrawlView``): they read the crawl's state, never change it."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import ray

from raycrawl.actors.crew import Crew
from raycrawl.adapters.output import write_stats
from raycrawl.adapters.storage import Storage, StorageError
from raycrawl.config import CrawlConfig
from raycrawl.core.crawl_loop import CrawlLoop
from raycrawl.core.partitions import merge_stats
from raycrawl.core.proxy_routes import merge_health


@dataclass(frozen=True)
class CrawlView:
    cfg: CrawlConfig
    loop: CrawlLoop
    crew: Crew
    store: str  # the checkpoint store, described
    checkpoints: list[dict[str, float]]
    finished: bool
    out: str  # the output location, as it may be shown


def progress(
    state: str,
    loop: CrawlLoop,
    host_counts: dict[str, int],
    checkpoint_error: str | None,
    checkpoints: list[dict[str, float]],
    proxies: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The live status (``host_counts``: hosts ready and paused, and ``proxies``: each proxy's health, from the
    last stats summary)."""
    now = time.time()
    s = loop.stats
    elapsed = max(now - s.started_at, 1e-9)
    return {
        "state": state,
        "elapsed_s": round(elapsed, 1),
        "pages": s.pages_fetched,
        "records": s.records,
        "pages_per_s": round(s.pages_fetched / elapsed, 1),
        "queued": loop.queued,
        "leased": loop.leased,
        "tasks_in_flight": len(loop.tasks),
        "fetch_nodes": dict(s.fetch_nodes),  # URLs fetched per Ray node (a short id), as stats.json counts them
        "errors": s.outcomes["error"],
        # with an extractor: pages by verdict, and accepted per page fetched
        **(
            {"verdicts": dict(s.verdicts), "accepted": s.accepted, "harvest_rate": round(s.harvest_rate, 4)}
            | s.harvest_recent()
            if loop.cfg.extracting
            else {}
        ),
        "hosts_ready": host_counts.get("hosts_ready", 0),
        "hosts_paused": host_counts.get("hosts_paused_now", 0),
        **(loop.freshness() if loop.scheduled or loop.stats.revisit_lag else {}),  # (a continuous crawl's)
        **({"proxies": proxies} if proxies is not None else {}),
        "stop_reason": loop.user_stop or loop.stop_reason,
        # (the one warning line the CLI shows: a budget that does not answer holds back requests, so it goes first)
        "checkpoint_error": _waiting(loop.budget_unavailable) or checkpoint_error,
        "checkpoints": len(checkpoints),
        # the last cut: its id, seconds to snapshot and commit, bytes written; pause_s: from the stop of leasing until
        # the crawl was at rest (fetches under way finishing). The crawl is held for pause_s + seconds.
        "last_checkpoint": {**checkpoints[-1], "pause_s": round(loop.last_quiesce, 3)} if checkpoints else None,
    }


def summary(view: CrawlView) -> dict[str, Any]:
    now = time.time()
    shards = view.crew.shards
    # One ray.get for all of it: every shard's counters and host table, and the seen-set's figures.
    n = len(shards)
    proxied = bool(view.cfg.proxy or view.cfg.proxy_file or view.cfg.proxy_rules)
    answers = ray.get(
        [s.counters.remote() for s in shards]
        + [s.hosts.remote() for s in shards]
        + ([s.proxy_health.remote() for s in shards] if proxied else [])
        + [p.stats.remote() for p in view.crew.partitions]
    )
    shard_counters: list[dict[str, int]] = answers[:n]
    hosts = [row for table in answers[n : 2 * n] for row in table]
    proxies = merge_health(answers[2 * n : 3 * n]) if proxied else None
    dedup_stats = merge_stats(answers[3 * n if proxied else 2 * n :])
    paused = [{"host": h["host"], "reason": h["paused"], "fetched": h["fetched"]} for h in hosts if h["paused"]]
    busiest = sorted(hosts, key=lambda h: (h["requests"], h["queued"]), reverse=True)[: view.cfg.stats_hosts]
    frontier = _frontier_totals(shard_counters)
    loop = view.loop
    out = loop.stats.summary(now)
    # URLs the crawl holds but did not reach: queued in the shards (or held there past a host's page budget).
    # A --resume (with larger budgets) goes on with them.
    left_queued = frontier.get("queued", 0) + frontier.get("held_over_budget", 0)
    out.update(
        {
            "finished": view.finished,
            "stop_reason": loop.user_stop
            or loop.stop_reason
            or ("max-pages-per-host reached" if frontier.get("held_over_budget") else "frontier exhausted"),
            "resumable": loop.user_stop is not None or left_queued > 0 or frontier.get("scheduled", 0) > 0,
            "left_queued": left_queued,
            "disk_full": loop.disk_full,
            "checkpoints": {
                "store": view.store,
                "taken": len(view.checkpoints),
                "last": view.checkpoints[-1] if view.checkpoints else None,
                "failures": loop.stats.events.get("checkpoint_failures", 0),
            },
            "shards": n,
            "placement": view.crew.where(addresses=True),  # (the nodes of the shards and partitions now)
            "rounds": loop.rounds,  # the coordinator's (each is one call to every shard)
            "frontier": frontier,
            "dedup": dedup_stats,
            "paused_hosts": paused,
            "closed_hosts": [{"host": h["host"], "reason": h["closed"]} for h in hosts if h["closed"]],
            "crawl_delay_capped_hosts": [
                {"host": h["host"], "crawl_delay": h["crawl_delay"], "delay": h["delay"]}
                for h in hosts
                if h["crawl_delay"] is not None and h["crawl_delay"] > view.cfg.max_crawl_delay
            ],
            "hosts": busiest,
            "out_dir": view.out,
            **({"freshness": loop.freshness()} if frontier.get("scheduled") else {}),
            **({"proxies": proxies} if proxies is not None else {}),  # per proxy, redacted (core/proxy_routes.py)
        }
    )
    return out


def _frontier_totals(shard_counters: list[dict[str, int]]) -> dict[str, int]:
    """The shards' counters summed (how overdue the first revisit of any shard is: the largest)."""
    frontier: dict[str, int] = {}
    for counters in shard_counters:
        for key, value in counters.items():
            if key == "schedule_overdue_ms":
                frontier[key] = max(frontier.get(key, 0), value)
            elif key != "next_due_in_ms":
                frontier[key] = frontier.get(key, 0) + value
    return frontier


def write_summary(storage: Storage, summary: dict[str, Any]) -> str | None:
    """stats.json in the output; a storage that refuses it: why (said in the status, and tried again)."""
    try:
        write_stats(storage, summary)
    except StorageError as exc:
        return f"stats.json: {exc}"
    return None


def _waiting(budget_unavailable: str | None) -> str | None:
    if budget_unavailable is None:
        return None
    return f"shared politeness: {budget_unavailable}; its hosts get no request until it answers"
