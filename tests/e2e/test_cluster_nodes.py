"""Several Ray nodes on this machine (``ray.cluster_utils.Cluster``: a head and two workers, all on 127.0.0.1):
shards and seen-set partitions sit on more than one node, fetch tasks run on both workers, removing the node of
a shard mid-crawl loses no URL and duplicates no record, and the crawl's metrics are read from the head node's
Prometheus export port."""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ray
from conftest import assert_each_url_once, dashboard_series, local_config, wait_until, warc_page_responses
from ray.cluster_utils import Cluster

from raycrawl.actors.metrics import EXTRACTION_SERIES
from raycrawl.api import Crawl
from raycrawl.ray_tuning import RAY_SYSTEM_CONFIG
from raycrawl.testing import TestWeb, WebSpec, free_ports
from raycrawl.testing.process import gaps_by_host

DELAY = 0.05


@pytest.fixture
def three_nodes() -> Iterator[tuple[Cluster, list[Any], int]]:
    metrics_port, gcs_port = free_ports(2)
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 0,  # fetch work goes to the worker nodes, as on a cluster from cluster.yaml
            "node_ip_address": "127.0.0.1",
            "include_dashboard": False,
            "metrics_export_port": metrics_port,
            "gcs_server_port": gcs_port,  # (6379, Ray's default, may be a Redis)
            "_system_config": dict(RAY_SYSTEM_CONFIG),
        },
    )
    workers = [cluster.add_node(num_cpus=1, node_ip_address="127.0.0.1") for _ in range(2)]
    cluster.wait_for_nodes()
    # The driver joins as 127.0.0.1 too: left to itself it would pick this machine's other address for the GCS.
    ray.init(address=cluster.address, _node_ip_address="127.0.0.1", logging_level="WARNING", log_to_driver=False)
    try:
        yield cluster, workers, metrics_port
    finally:
        ray.shutdown()
        cluster.shutdown()


def _metrics(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        return str(response.read().decode())


def _value(text: str, name: str, labels: str = "") -> float | None:
    """The value of the first sample of metric ``name`` (Ray may prefix ``ray_``) whose labels contain ``labels``."""
    for line in text.splitlines():
        match = re.match(rf"^(?:ray_)?{name}(\{{[^}}]*\}})? (\S+)$", line)
        if match and labels in (match.group(1) or ""):
            return float(match.group(2))
    return None


def test_fetch_tasks_use_several_nodes_and_a_lost_node_loses_nothing(
    tmp_path: Path, three_nodes: tuple[Cluster, list[Any], int]
) -> None:
    cluster, workers, metrics_port = three_nodes
    spec = WebSpec(hosts=12, pages_per_host=150, page_bytes=200)
    with TestWeb(spec) as web:
        cfg = local_config(
            seeds=tuple(web.graph.seeds()),
            out=str(tmp_path),
            delay=DELAY,
            checkpoint_interval=2.0,
            shards=4,
            dedup_partitions=3,
        )
        crawl = Crawl(cfg).start()
        # Both worker nodes fetching, then a checkpoint: the node's loss rolls the crawl back to it at most, and what
        # both nodes fetched until then stays. (Ray may place the first tasks all on one node: waited for, not assumed.)
        wait_until(
            lambda: (s := crawl.status()).get("pages", 0) >= 500 and len(s.get("fetch_nodes", {})) >= 2,
            240,
            "500 pages, fetched on both worker nodes",
        )
        cut = crawl.status().get("checkpoints", 0)
        wait_until(lambda: crawl.status().get("checkpoints", 0) > cut, 120, "a checkpoint after both nodes fetched")
        placement = crawl.placement()
        assert len(set(placement["shards"])) >= 2 and len(set(placement["partitions"])) >= 2, placement
        # The driver's node holds the coordinator: keep it. Remove a worker node that holds a shard.
        victim = next(w for w in workers if w.node_id != placement["coordinator"] and w.node_id in placement["shards"])
        cluster.remove_node(victim, allow_graceful=False)
        summary = crawl.wait(timeout=600)
        records = crawl.records()
        requests = web.requests()
        # The head node's metrics agent exports what the coordinator recorded (every few seconds).
        wait_until(
            lambda: (_value(_metrics(metrics_port), "raycrawl_pages_total", 'outcome="fetched"') or 0) > 0,
            90,
            "raycrawl_pages_total on the metrics port",
        )
        text = _metrics(metrics_port)

    reachable = web.graph.reachable([(h, 0) for h in range(spec.hosts)])
    assert_each_url_once(records)
    assert {r["url"] for r in records if r["outcome"] == "fetched"} == set(reachable)  # 0 lost
    # WARC is exactly once too: what the lost node buffered since the last cut went with it, and the crawl
    # rolled back to that cut and fetched it again (actors/output_cut.py).
    warc = warc_page_responses(tmp_path)
    assert set(warc) == set(reachable) and max(warc.values()) == 1
    assert min(min(g) for g in gaps_by_host(requests).values()) >= DELAY  # polite through the node loss
    assert len(summary["fetch_nodes"]) >= 2, summary["fetch_nodes"]  # fetch tasks ran on both worker nodes
    # A shard's node was lost: the shard rebuilt alone, and (when the node held output of the interval) the crawl
    # back to the last checkpoint
    assert summary["events"].get("rollbacks", 0) + summary["events"].get("shard_rebuilds", 0) >= 1
    # Three nodes on one disk: each node's store task copies and cleans its own buffers only.
    assert summary["checkpoints"]["failures"] == 0, summary.get("checkpoint_error")
    print("URLs fetched per node:", summary["fetch_nodes"], "rollbacks:", summary["events"].get("rollbacks", 0))

    fetched = _value(text, "raycrawl_pages_total", 'outcome="fetched"')
    assert fetched is not None and 0 < fetched <= len(reachable) + summary["events"].get("rollbacks", 0) * 2000
    # Every series the Grafana dashboard queries is in the export (dashboards/raycrawl-grafana.json), but those of
    # a crawl that extracts (this one does not).
    for name in sorted(
        dashboard_series() - EXTRACTION_SERIES | {"raycrawl_bytes_total", "raycrawl_host_delay_seconds"}
    ):
        assert _value(text, name) is not None, f"{name} missing from the metrics export"
