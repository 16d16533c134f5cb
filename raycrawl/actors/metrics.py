"""The crawl's metrics through ``ray.util.metrics``: Ray exports them from each node's metrics agent in
Prometheus format (``ray start --metrics-export-port``), so they reach Prometheus and the Ray dashboard.

Recorded by the coordinator only, in batches: once per round from what the shards report (counts, and the
latencies of the pages they settled), or per stats interval for the gauges. Every metric carries a ``crawl`` tag
(the crawl id).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from ray.util.metrics import Counter as RayCounter
from ray.util.metrics import Gauge, Histogram

LATENCY_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0]
CHECKPOINT_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 60.0]
HOST_DELAY_ROWS = 20  # per-host delay gauges for the busiest hosts only (a tag per host would not scale)

GAUGES = {
    "frontier_depth": "URLs queued in the frontier",
    "in_flight": "URLs leased to fetch tasks",
    "tasks_in_flight": "fetch tasks running",
    "tasks_wanted": "fetch tasks the crawl's ready hosts are worth (its demand)",
    "tasks_ceiling": "fetch tasks the cluster's CPUs hold at once (at most --max-tasks-in-flight)",
    "cpus_requested": "CPUs asked of the autoscaler for fetch tasks",
    "nodes": "Ray nodes alive",
    "hosts": "hosts known to the frontier",
    "hosts_ready": "hosts that may be fetched now",
    "hosts_waiting": "hosts with URLs queued but not ready now (politeness clock, backoff, robots.txt, answer)",
    "hosts_paused": "hosts paused (403/451 streak or operator)",
    "lease_expiries": "leases that expired before an answer (total)",
    "dedup_hit_ratio": "share of dedup checks that found the URL already seen",
    "pages_per_second": "pages fetched per second since the start",
    "harvest_rate": "pages accepted per page fetched (with an extractor)",
    "harvest_rate_recent": "pages accepted per page fetched, over the last 100 pages (with an extractor)",
    # a continuous crawl's (--revisit)
    "revisits_scheduled": "URLs fetched and waiting to be due again",
    "revisits_due_within_hour": "scheduled URLs due within the next hour (overdue ones included)",
    "freshness_lag_seconds": "how overdue the most overdue page is",
}
# per proxy (tagged with its redacted name), with --proxy: its health as the shards found it (core/proxy_routes.py)
PROXY_GAUGES = {
    "proxy_requests": "answers (or failures) that came through the proxy (total)",
    "proxy_failures": "connect errors, 407s and ban-like answers through the proxy (total)",
    "proxy_resting": "1 while the proxy rests after failing, else 0",
}
COUNTERS = ("raycrawl_pages", "raycrawl_bytes", "raycrawl_verdicts", "raycrawl_recoveries")
# Exported once a crawl with an extractor has judged a page (a counter appears with its first increment)
EXTRACTION_SERIES = frozenset({"raycrawl_verdicts_total"})
HISTOGRAMS = ("raycrawl_fetch_latency_seconds", "raycrawl_checkpoint_seconds")


def exported_series() -> set[str]:
    """The series names these metrics have in Prometheus' format, as each node's metrics agent exports them
    (dashboards/raycrawl-grafana.json may name only these: tests/unit/actors/test_dashboard.py)."""
    names = {f"raycrawl_{name}" for name in GAUGES} | {"raycrawl_host_delay_seconds"}
    names |= {f"raycrawl_{name}" for name in PROXY_GAUGES}
    names |= {f"{name}_total" for name in COUNTERS}
    return names | {f"{name}_{part}" for name in HISTOGRAMS for part in ("bucket", "sum", "count")}


class CrawlMetrics:
    def __init__(self, crawl_id: str) -> None:
        tags = {"crawl": crawl_id}
        self.pages = RayCounter("raycrawl_pages", "URLs that ended, by outcome", tag_keys=("crawl", "outcome"))
        self.bytes = RayCounter("raycrawl_bytes", "decoded body bytes fetched", tag_keys=("crawl",))
        self.verdicts = RayCounter("raycrawl_verdicts", "pages judged by the content contract, by verdict",
                                   tag_keys=("crawl", "verdict"))  # fmt: skip
        self.recoveries = RayCounter("raycrawl_recoveries", "recoveries from a lost process, by kind",
                                     tag_keys=("crawl", "kind"))  # fmt: skip
        self.latency = Histogram(
            "raycrawl_fetch_latency_seconds",
            "request sent to response headers",
            boundaries=LATENCY_BUCKETS,
            tag_keys=("crawl",),
        )
        self.checkpoint = Histogram(
            "raycrawl_checkpoint_seconds", "time to take a checkpoint", CHECKPOINT_BUCKETS, tag_keys=("crawl",)
        )
        self.gauges = {name: Gauge(f"raycrawl_{name}", text, tag_keys=("crawl",)) for name, text in GAUGES.items()}
        self.host_delay = Gauge("raycrawl_host_delay_seconds", "a host's current delay", tag_keys=("crawl", "host"))
        self.proxy = {n: Gauge(f"raycrawl_{n}", text, tag_keys=("crawl", "proxy")) for n, text in PROXY_GAUGES.items()}
        every = (
            self.pages,
            self.bytes,
            self.verdicts,
            self.recoveries,
            self.latency,
            self.checkpoint,
            self.host_delay,
            *self.gauges.values(),
        )
        for metric in (*every, *self.proxy.values()):
            metric.set_default_tags(tags)

    def record_round(
        self, outcomes: Counter[str], size: int, latencies: Iterable[float], verdicts: Counter[str] | None = None
    ) -> None:
        for outcome, n in outcomes.items():
            if n:
                self.pages.inc(n, {"outcome": outcome})
        for verdict, n in (verdicts or Counter()).items():
            if n:
                self.verdicts.inc(n, {"verdict": verdict})
        if size:
            self.bytes.inc(size)
        for seconds in latencies:
            self.latency.observe(seconds)

    def record_recovery(self, kind: str) -> None:
        self.recoveries.inc(1, {"kind": kind})

    def record_checkpoint(self, seconds: float) -> None:
        self.checkpoint.observe(seconds)

    def record_summary(self, summary: dict[str, Any]) -> None:
        """Gauges from the periodic stats summary (every few seconds)."""
        frontier = summary.get("frontier", {})
        demand = summary["demand"]
        dedup = summary.get("dedup", {})
        freshness = summary.get("freshness", {})
        values = {
            "frontier_depth": frontier.get("queued", 0),
            "in_flight": frontier.get("leased", 0),
            "tasks_in_flight": demand["tasks_running"],
            "tasks_wanted": demand["tasks_wanted"],
            "tasks_ceiling": demand["tasks_ceiling"],
            "cpus_requested": demand["cpus_requested"],
            "nodes": demand["nodes"],
            "hosts": frontier.get("hosts", 0),
            "hosts_ready": frontier.get("hosts_ready", 0),
            "hosts_waiting": frontier.get("hosts_waiting", 0),
            "hosts_paused": frontier.get("hosts_paused_now", 0),
            "lease_expiries": frontier.get("lease_expiries", 0),
            "dedup_hit_ratio": dedup.get("hits", 0) / dedup["checks"] if dedup.get("checks") else 0.0,
            "pages_per_second": summary.get("pages_per_s", 0.0),
            "harvest_rate": summary.get("harvest_rate", 0.0),
            "harvest_rate_recent": summary.get("harvest_rate_recent", 0.0),
            "revisits_scheduled": freshness.get("scheduled", 0),
            "revisits_due_within_hour": freshness.get("due_within_hour", 0),
            "freshness_lag_seconds": freshness.get("freshness_lag_s", 0.0),
        }
        for name, value in values.items():
            self.gauges[name].set(float(value))
        for row in summary.get("hosts", [])[:HOST_DELAY_ROWS]:
            self.host_delay.set(float(row["delay"]), {"host": row["host"]})
        for row in summary.get("proxies", []):
            tag = {"proxy": row["proxy"]}
            self.proxy["proxy_requests"].set(float(row["requests"]), tag)
            self.proxy["proxy_failures"].set(float(row["failures"]), tag)
            self.proxy["proxy_resting"].set(1.0 if row["state"] == "resting" else 0.0, tag)
