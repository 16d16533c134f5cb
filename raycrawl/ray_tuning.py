"""Ray settings a crawl relies on, for a Ray that raycrawl starts itself and for ``ray start`` (as environment).

Ray ends a task worker process that has been idle for a second once a node has more workers than CPUs, and
starts a new one when the next task needs it. Fetch tasks are short and many (several per CPU, since fetching
is mostly waiting), so a pause of a second in one task slot -- a slow server holding a task for its deadline --
made Ray end a worker and, moments later, start another: about a second of CPU for a new Python process that
imports Ray and raycrawl, during which every host on a small node missed its slots. Idle fetch workers are kept
for a few minutes instead; they cost memory only, and Ray still ends them when the job ends.

A Ray a crawl starts for itself (``raycrawl crawl`` with no cluster to join) collects no metrics: its metrics agent
ingesting every worker's task and call histograms cost ~0.02 ms of CPU a page, 3% of a crawl's (benchmarks/README.md,
issue 51), and that Ray's Prometheus port is a random one that ends with the crawl. ``RAY_enable_metrics_collection=1``
in the crawl's environment turns them on; a cluster started with ``ray start`` keeps Ray's default (on).
"""

from __future__ import annotations

from collections.abc import Mapping

IDLE_WORKER_KEEP_MS = 300_000

RAY_SYSTEM_CONFIG: dict[str, int | bool] = {"idle_worker_killing_time_threshold_ms": IDLE_WORKER_KEEP_MS}
METRICS_SWITCH = "RAY_enable_metrics_collection"


def own_ray_system_config(environ: Mapping[str, str]) -> dict[str, int | bool]:
    """The settings of a Ray a crawl starts for itself: no metrics, unless its environment asks for them."""
    if METRICS_SWITCH in environ:  # (Ray reads it itself)
        return dict(RAY_SYSTEM_CONFIG)
    return {**RAY_SYSTEM_CONFIG, "enable_metrics_collection": False}


def ray_start_environment() -> dict[str, str]:
    """The same settings as environment variables, for ``ray start`` (Ray reads ``RAY_<name>``)."""
    return {f"RAY_{name}": str(value) for name, value in RAY_SYSTEM_CONFIG.items()}
