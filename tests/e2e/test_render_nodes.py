"""Browsers on nodes of their own, added by the autoscaler for the render pool's queue (issue 35), on Ray's fake
multi-node autoscaler (tests/ray_cluster.py): the head offers no ``browser``; the worker type offers one and no
CPU, as cluster.yaml's browser_worker, from 0 to 2 nodes.

A crawl that renders every page of four scripted hosts starts with one render actor, so the autoscaler must add a
browser node before the crawl can start; four pages in hand at once (one at a time per actor) make its queue want
a second actor, and the autoscaler a second node. What is asserted is what ran where (render actors' processes
under which raylet, read from the process table), what the server saw, and what was written."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import LOOPBACK, assert_each_url_once, wait_until
from ray_cluster import RayHead, process_table

from raycrawl.adapters.output import read_pages
from raycrawl.testing import TestWeb, WebSpec
from raycrawl.testing.canary import Canary
from raycrawl.testing.process import gaps_by_host

HOSTS, PAGES, DELAY = 4, 10, 0.2
CANARY_IP = "127.0.0.95"
HEAD_NODE = b"--node_id=" + b"f" * 51 + b"00000"  # (the fake provider's ids: the head is ...00000)


@pytest.fixture()
def browser_nodes_head() -> Iterator[RayHead]:
    head = RayHead()
    try:
        head.start(cpus=2, max_workers=2, worker={"CPU": 0, "browser": 1})
        yield head
    finally:
        head.stop()
        left = [pid for pid, (_, cmd) in process_table().items() if head.temp_dir.encode() in cmd]
        assert left == [], f"processes of the test's cluster left running: {left}"


def render_actor_nodes(head: RayHead) -> list[bytes]:
    """The command line of the raylet each render actor's process runs under, now."""
    table = process_table()
    raylets = {pid: cmd for pid, (_, cmd) in table.items() if b"raylet/raylet" in cmd and head.temp_dir.encode() in cmd}
    return [
        raylets[parent] for parent, cmd in table.values() if cmd.startswith(b"ray::RenderActor") and parent in raylets
    ]


def test_render_actors_run_on_browser_nodes_the_autoscaler_adds_for_their_queue(
    browser_nodes_head: RayHead, tmp_path: Path
) -> None:
    head = browser_nodes_head
    out = tmp_path / "out"
    samples: list[list[bytes]] = []
    spec_profiles = ("scripted",) * HOSTS
    with Canary(CANARY_IP) as canary:
        spec = WebSpec(hosts=HOSTS, pages_per_host=PAGES, profiles=spec_profiles, canary=canary.address)
        with TestWeb(spec) as web:
            command = [sys.executable, "-m", "raycrawl.cli", "crawl", *web.graph.seeds(), "--out", str(out)]
            command += ["--ray-address", head.address, "--crawl-id", "browsers", "--delay", str(DELAY), "--quiet"]
            command += ["--render", "always", "--render-workers", "1", "--render-workers-max", "2"]
            command += ["--render-pages", "1", "--allow-network", LOOPBACK[0]]
            crawl = subprocess.Popen(command, env=head.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                deadline = time.monotonic() + 400
                while crawl.poll() is None and time.monotonic() < deadline:
                    samples.append(render_actor_nodes(head))
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        crawl.wait(timeout=0.5)
            finally:
                if crawl.poll() is None:
                    crawl.kill()
                _, err = crawl.communicate(timeout=60)
            requests = web.requests()
        assert canary.connections == 0
    assert crawl.returncode == 0, err[-3000:]

    # Render actors ran only on browser nodes (never on the head), and at some point on two of them at once: the
    # pool grew with its queue and the autoscaler added a node for it. They are gone with the crawl.
    seen = [node for sample in samples for node in sample]
    assert seen, "no render actor seen running"
    assert all(HEAD_NODE not in node and b"browser" in node for node in seen)
    assert max(len(set(sample)) for sample in samples) == 2, [len(s) for s in samples]
    wait_until(lambda: render_actor_nodes(head) == [], 30, "the render actors' end with the crawl")
    stats = json.loads((out / "stats.json").read_text())
    render = stats["render"]
    assert render["workers_most"] == 2 and render["render_workers_added"] >= 1, render

    # Every page found (its links exist only once rendered) and rendered once; each host's delay held at the
    # server, pages and the scripts' requests of both browsers together.
    records = read_pages(str(out))
    assert_each_url_once(records)
    expected = {f"{web.graph.url(h, 0).rstrip('/')}/p/{i}" for h in range(HOSTS) for i in range(1, PAGES)}
    expected |= {web.graph.url(h, 0) for h in range(HOSTS)}
    assert {r["url"] for r in records} == expected
    assert all(r["outcome"] == "fetched" and r["render"]["rendered"] for r in records)
    assert stats["events"]["pages_rendered"] == len(expected)
    for host, gaps in gaps_by_host(requests).items():
        assert min(gaps) >= DELAY, host
