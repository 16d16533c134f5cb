"""Issue 34, acceptance 1, as an operator runs it: crawls submitted with ``ray job submit`` to one ``ray start
--head`` cluster crawl the same 10 loopback hosts at the same time with 0.5 s delays. Each on its own clocks, the
server sees two clients; with ``--shared-politeness cluster`` it sees one (no gap under 0.5 s per host). A crawl
killed mid-way (its driver SIGKILLed: its coordinator and shards die holding slots) gives its hosts back: the other
finishes long before the reservations' 180 s ttl would have freed them."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

from conftest import REPO, wait_until
from ray_cluster import RayHead, process_table

from raycrawl.testing import TestWeb, WebSpec

SPEC = WebSpec(hosts=10, pages_per_host=40, page_bytes=200, private_links=False, cross_host_links=0.0)
DELAY = 0.5
TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED")


def submit(head: RayHead, crawl_id: str, out: Path, seeds: list[str], *flags: str) -> str:
    job_id = f"raycrawl-{crawl_id}-{uuid.uuid4().hex[:6]}"
    runtime_env = {"excludes": [".git", "tests", "benchmarks", "*.ipynb"]}
    command = [
        "ray", "job", "submit", "--no-wait", "--address", f"http://127.0.0.1:{head.dashboard_port}",
        "--submission-id", job_id, "--working-dir", str(REPO), "--runtime-env-json", json.dumps(runtime_env),
        "--", "python", "jobs/crawl.py", *seeds, "--out", str(out), "--crawl-id", crawl_id, "--delay", str(DELAY),
        "--allow-network", "127.0.0.0/8", "--quiet", "--shards", "2", "--user-agent", f"{crawl_id}/1.0", *flags,
    ]  # fmt: skip
    subprocess.run(command, env=head.env, check=True, capture_output=True, timeout=300)
    return job_id


def job_state(head: RayHead, job_id: str) -> str:
    shown = subprocess.run(
        ["ray", "job", "status", "--address", f"http://127.0.0.1:{head.dashboard_port}", job_id],
        env=head.env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    text = (shown.stdout + shown.stderr).upper()
    return next((state for state in TERMINAL if state in text), "RUNNING")


def smallest_gap(requests: list[dict[str, Any]]) -> dict[str, float]:
    by_ip: dict[str, list[float]] = defaultdict(list)
    for r in requests:
        by_ip[r["ip"]].append(r["t"])
    return {ip: min(b - a for a, b in itertools.pairwise(sorted(t))) for ip, t in by_ip.items() if len(t) > 1}


def both(head: RayHead, web: TestWeb, out: Path, name: str, *flags: str) -> list[dict[str, Any]]:
    """Two crawls of every host submitted at once, to their end: the requests the server saw from them."""
    seeds = web.graph.seeds()
    jobs = [submit(head, f"{name}-{n}", out / f"{name}-{n}", seeds, *flags) for n in (1, 2)]
    wait_until(lambda: all(job_state(head, job) in TERMINAL for job in jobs), 300, f"the {name} jobs' end")
    assert [job_state(head, job) for job in jobs] == ["SUCCEEDED", "SUCCEEDED"]
    return [r for r in web.requests() if r["ua"].startswith(f"{name}-")]


def test_submitted_crawls_share_one_budget_per_host_and_a_killed_one_gives_its_hosts_back(tmp_path: Path) -> None:
    head = RayHead()
    head.start(dashboard=True, cpus=4)
    try:
        with TestWeb(SPEC) as web:
            # Apart, every page (~20 s each): two jobs' starts, seconds apart on a loaded machine, still overlap.
            apart = smallest_gap(both(head, web, tmp_path, "apart"))
            limit = ("--max-pages", "100")
            shared = smallest_gap(both(head, web, tmp_path, "shared", *limit, "--shared-politeness", "cluster"))
            assert min(apart.values()) < DELAY * 0.8, apart  # (two clients)
            assert len(shared) == SPEC.hosts and min(shared.values()) >= DELAY - 0.005, shared  # (one)

            # a crawl killed mid-way, its slots held (continuous: it never ends by itself, however long the survivor
            # takes to start -- a CI run saw the whole site crawled, and the driver gone, before the survivor's first
            # request)
            seeds = web.graph.seeds()
            shared_flag = ("--shared-politeness", "cluster")
            submit(head, "doomed", tmp_path / "doomed", seeds, "--revisit", "--revisit-after", "20s", *shared_flag)
            wait_until(lambda: sum(r["ua"] == "doomed/1.0" for r in web.requests()) >= 20, 120, "doomed crawling")
            survivor = submit(head, "survivor", tmp_path / "survivor", seeds, "--max-pages", "60", *shared_flag)
            wait_until(lambda: any(r["ua"] == "survivor/1.0" for r in web.requests()), 120, "the survivor crawling")
            drivers = [pid for pid, (_, cmdline) in process_table().items()
                       if b"jobs/crawl.py" in cmdline and b"doomed" in cmdline]  # fmt: skip
            assert drivers, "the doomed crawl's driver"
            for pid in drivers:
                os.kill(pid, signal.SIGKILL)
            killed_at = time.time()
            wait_until(lambda: job_state(head, survivor) in TERMINAL, 150, "the survivor's end (before the ttl)")
            assert job_state(head, survivor) == "SUCCEEDED"
            ended_at = time.time()
            requests = web.requests()
    finally:
        head.stop()
    survivor_requests = [r for r in requests if r["ua"] == "survivor/1.0"]
    # (it is dead: nothing leased after the kill. Fetch tasks are the crew's launcher's, not the driver's (issue 50),
    # so one in flight at the kill still sends the leases it holds -- each due within a round's horizon, but a task
    # started late on a loaded machine sends them late: a CI run saw two such waves 1-1.6 s after the kill)
    doomed_after = [r for r in requests if r["ua"] == "doomed/1.0" and r["t"] > killed_at + 3.0]
    assert doomed_after == []
    together = [r for r in requests if r["ua"] in ("doomed/1.0", "survivor/1.0")]
    assert min(smallest_gap(together).values()) >= DELAY - 0.005  # (one client through the kill too)
    assert len({(r["ip"], r["path"]) for r in survivor_requests}) >= 50
    print(
        f"smallest gap: apart {min(apart.values()):.3f} s, shared {min(shared.values()):.3f} s; "
        f"survivor ended {ended_at - killed_at:.0f} s after the kill (ttl 180 s)"
    )
