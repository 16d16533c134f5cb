"""How the crawl runs on Ray: shards, partitions, fetch tasks, shared politeness.

Each field is a setting, described once (config/setting.py ``setting``).
"""

from __future__ import annotations

from dataclasses import dataclass

from raycrawl.config.setting import (
    DedupKind,
    default_of,
    setting,
)
from raycrawl.core.crawl_loop import LoopSettings
from raycrawl.core.frontier_settings import FrontierSettings


@dataclass(frozen=True)
class ClusterSettings:
    """The settings of ``--help``'s group "cluster" (a part of ``CrawlConfig``)."""

    shards: int | None = setting(
        None, "number of frontier shards", group="cluster", default_text="one per CPU, at least 2", resume="fixed"
    )
    dedup: DedupKind = setting(
        "exact",
        "seen-set: exact (64-bit fingerprints, ~9.6 B/URL) or bloom (smaller, may drop a few URLs)",
        group="cluster",
        resume="fixed",
    )
    dedup_partitions: int | None = setting(
        None,
        "number of seen-set partitions (dedup actors), each owning a share of the fingerprints",
        group="cluster",
        default_text="one per 8 CPUs, at least 1",
        resume="fixed",
    )
    bloom_capacity: int = setting(10_000_000, "URLs the Bloom filter is sized for", group="cluster", resume="fixed")
    bloom_error_rate: float = setting(
        0.001, "the Bloom filter's false-positive rate at capacity", group="cluster", metavar="RATE", resume="fixed"
    )
    ray_address: str | None = setting(
        None,
        "address of a running Ray cluster",
        group="cluster",
        metavar="ADDRESS",
        default_text="RAY_ADDRESS, else a local Ray",
        resume="per_run",
    )
    detach: bool = setting(
        False,
        "leave the crawl running on the Ray cluster, owned by no driver: the command returns once it runs (`raycrawl"
        " status|wait|stop --crawl-id` reach it; its summary is kept on the cluster after it ends); needs a cluster"
        " that outlives the command (--ray-address)",
        group="cluster",
        resume="per_run",
    )
    fetch_batch_size: int = setting(
        default_of(LoopSettings, "fetch_batch_size"),
        "URLs per fetch task when enough are due",
        group="cluster",
        at_least=1,
    )
    max_tasks_in_flight: int = setting(
        default_of(LoopSettings, "max_tasks_in_flight"),
        "fetch tasks running at once",
        group="cluster",
        at_least=1,
    )
    # One a CPU, carrying 512 leases (fetch_batch_size): the leases out a CPU that two tasks of 256 carried. Two a
    # CPU held more hosts' runs at once while a host whose run ended waited for a task to end before its next run;
    # since a host's next run is chained to the task that settled its last, they only start more worker processes
    # (~1 s of CPU each, mid-crawl) and share the cores among more of them: 1 against 0.5 on the vs_scrapy
    # scenarios, alternating, 1.37x the pages/s unthrottled, 0.99 against 0.90 of the ideal polite rate, 0.97
    # against 0.80 heavy (benchmarks/README.md, issue 51, step 15).
    fetch_task_cpus: float = setting(1.0, "CPUs a fetch task reserves", group="cluster", metavar="CPUS")
    lease_horizon: float = setting(
        default_of(LoopSettings, "lease_horizon"),
        "how far ahead (s) a URL may be leased before its host is due",
        group="cluster",
        unit="seconds",
    )
    run_length: int = setting(
        default_of(FrontierSettings, "run_length"),
        ("URLs of a due host leased at once and sent one after another by one fetch task (1: one at a time)"),
        group="cluster",
    )
