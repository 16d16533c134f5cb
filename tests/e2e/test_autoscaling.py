"""The cluster follows the crawl's demand (issue 31), on Ray's fake multi-node autoscaler: worker nodes are real
``ray start`` processes on this machine that the autoscaler adds and removes (tests/ray_cluster.py).

A web of fast hosts (0.5 s apart) and two slow ones (robots.txt Crawl-delay 2 s) is crawled from a 1-CPU head with
batches of 2 URLs: while the fast hosts are ready, demand is many tasks, the autoscaler adds worker nodes and fetch
tasks run on them; once only the slow hosts remain, demand is one task, which the head holds: the request shrinks,
the workers are released while the crawl goes on. No URL lost, no rollback, no gap under the slow hosts' delay.
The node list is read from the processes: each node is one raylet of this cluster."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import LOOPBACK, assert_each_url_once, page_requests
from ray_cluster import RayHead, process_table

from raycrawl.adapters.output import read_pages
from raycrawl.testing import TestWeb, WebSpec
from raycrawl.testing.process import gaps_by_host

FAST, SLOW, DELAY, CRAWL_DELAY = 14, 2, 0.5, 2.0
HEAD_NODE = b"--node_id=" + b"f" * 51 + b"00000"  # (the fake provider's ids: the head is ...00000)


@pytest.fixture()
def autoscaling_head() -> Iterator[RayHead]:
    head = RayHead()
    try:
        head.start(cpus=1, max_workers=3)
        yield head
    finally:
        head.stop()
        # Nothing of it is left: no raylet, no autoscaler that would go on starting nodes.
        left = [pid for pid, (_, cmd) in process_table().items() if head.temp_dir.encode() in cmd]
        assert left == [], f"processes of the test's cluster left running: {left}"


def nodes_and_workers_fetching(head: RayHead) -> tuple[int, int]:
    """(raylets of this cluster, fetch tasks running under a worker node's raylet) now."""
    table = process_table()
    raylets = {pid: cmd for pid, (_, cmd) in table.items() if b"raylet/raylet" in cmd and head.temp_dir.encode() in cmd}
    workers = {pid for pid, cmd in raylets.items() if HEAD_NODE not in cmd}
    fetching = sum(1 for parent, cmd in table.values() if parent in workers and cmd.startswith(b"ray::fetch_batch"))
    return len(raylets), fetching


def changes(samples: list[dict[str, Any]]) -> list[tuple[float, int, int]]:
    """(seconds since the first sample, nodes, slow hosts' pages so far) at each change in the node count."""
    out: list[tuple[float, int, int]] = []
    for s in samples:
        if not out or s["nodes"] != out[-1][1]:
            out.append((round(s["t"] - samples[0]["t"], 1), s["nodes"], s["slow"]))
    return [*out, (round(samples[-1]["t"] - samples[0]["t"], 1), samples[-1]["nodes"], samples[-1]["slow"])]


def test_worker_nodes_come_with_ready_hosts_and_go_when_only_slow_ones_remain(
    autoscaling_head: RayHead, tmp_path: Path
) -> None:
    head = autoscaling_head
    spec = WebSpec(
        hosts=FAST + SLOW,
        pages_per_host=40,
        cross_host_links=0.0,
        page_bytes=200,
        private_links=False,
        profiles=("normal",) * FAST + (f"robots-crawl-delay-{CRAWL_DELAY:g}",) * SLOW,
    )
    out = tmp_path / "out"
    samples: list[dict[str, Any]] = []
    with TestWeb(spec) as web:
        slow_ips = {web.graph.ip(h) for h in range(FAST, FAST + SLOW)}
        command = [sys.executable, "-m", "raycrawl.cli", "crawl", *web.graph.seeds(), "--out", str(out)]
        command += ["--ray-address", head.address, "--crawl-id", "autoscaled", "--delay", str(DELAY), "--quiet"]
        command += ["--fetch-batch-size", "2", "--checkpoint-interval", "5", "--allow-network", LOOPBACK[0]]
        command += ["--fetch-task-cpus", "1"]  # (a task a CPU: these 1-CPU nodes come and go a task at a time)
        crawl = subprocess.Popen(command, env=head.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        status: dict[str, Any] | None = None
        try:
            deadline = time.monotonic() + 400
            while crawl.poll() is None and time.monotonic() < deadline:
                nodes, fetching = nodes_and_workers_fetching(head)
                slow_done = sum(1 for r in page_requests(web.requests()) if r["ip"] in slow_ips)
                samples.append({"t": time.monotonic(), "nodes": nodes, "fetching": fetching, "slow": slow_done})
                # (acceptance 3: the operator's view while it scales; it looks at the cluster every 5 s)
                if nodes >= 3 and (status is None or status["demand"]["nodes"] < 2):
                    asked = subprocess.run(
                        [sys.executable, "-m", "raycrawl.cli", "status", "--crawl-id", "autoscaled", "--json",
                         "--ray-address", head.address],
                        env=head.env, capture_output=True, text=True, timeout=120, check=False,
                    )  # fmt: skip
                    reply = json.loads(asked.stdout) if asked.returncode == 0 else {}
                    status = reply if "demand" in reply else status  # (a crawl still starting has no demand yet)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    crawl.wait(timeout=0.5)  # (the next sample, or the crawl's end)
        finally:
            if crawl.poll() is None:
                crawl.kill()
            _, err = crawl.communicate(timeout=60)
        requests = web.requests()
    assert crawl.returncode == 0, err
    timeline = changes(samples)

    # The autoscaler added worker nodes for the fast hosts, and fetch tasks ran on them ...
    peak = max(range(len(samples)), key=lambda i: samples[i]["nodes"])
    assert samples[peak]["nodes"] >= 3, timeline
    # ... and released them while the crawl went on with the slow hosts alone (their requests kept coming).
    released = next((s for s in samples[peak:] if s["nodes"] == 1), None)
    assert released is not None, timeline
    assert samples[-1]["slow"] > released["slow"], "the workers went only when the crawl was over"

    assert status is not None and status["demand"]["autoscaler"] is True
    assert status["demand"]["cpus_requested"] >= 1.0 and status["demand"]["nodes"] >= 2
    stats = json.loads((out / "stats.json").read_text())
    assert stats["demand"]["peaks"]["tasks_wanted"] >= 3 and stats["demand"]["peaks"]["nodes"] >= 3
    assert stats["demand"]["cpus_requested"] == 0  # withdrawn at the end
    assert stats["events"].get("rollbacks", 0) == 0
    assert any(s["fetching"] for s in samples), ("no fetch task seen running on a worker node", timeline)

    # Nothing lost, nothing twice, the slow hosts' delay kept at the server.
    records = read_pages(str(out))
    assert_each_url_once(records)
    reachable = web.graph.reachable([(h, 0) for h in range(spec.hosts)])
    assert {r["url"] for r in records if r["outcome"] == "fetched"} == set(reachable)
    for ip, gaps in gaps_by_host(requests).items():
        assert min(gaps) >= (CRAWL_DELAY if ip in slow_ips else DELAY) - 0.05, (ip, min(gaps))
    print("nodes over time (s, nodes, slow hosts' pages):", timeline)
