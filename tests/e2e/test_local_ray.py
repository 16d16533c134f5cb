"""The Ray a crawl starts for itself listens on loopback only: anyone who reaches Ray's ports can run code. It
collects no metrics."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import LOOPBACK
from ray_cluster import RayHead

from raycrawl.adapters.output import read_pages
from raycrawl.testing import TestWeb, WebSpec

# In a process of its own, without the switch conftest sets for every test (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0),
# as a user's shell has it: every TCP port that process and the Ray processes it starts listen on.
CODE = """
import json, os, psutil
from raycrawl.ray_runtime import ensure_ray
ensure_ray(None)
import ray
# (this process and what it started: its Ray's daemons and workers; never another Ray on the machine)
ours = {os.getpid()} | {p.pid for p in psutil.Process().children(recursive=True)}
addresses = sorted({c.laddr.ip for c in psutil.net_connections("tcp") if c.status == "LISTEN" and c.pid in ours})
switch = os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")
from ray._private.state import state
metrics = state.get_system_config().get("enable_metrics_collection", True)  # (the cluster's, from its GCS)
ray.shutdown()
print(json.dumps({"addresses": addresses, "switch": switch, "metrics": metrics}))
"""


def test_the_ray_a_crawl_starts_for_itself_listens_on_loopback_only() -> None:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
    done = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["addresses"], seen  # (Ray's servers were found)
    assert set(seen["addresses"]) <= {"127.0.0.1", "::ffff:127.0.0.1"}, seen["addresses"]
    assert seen["switch"] is None  # put back: a later connection to a real cluster is not affected
    assert seen["metrics"] is False  # (raycrawl/ray_tuning.py: no one scrapes it, and it cost 3% of the CPU a page)


def test_a_crawl_beside_a_ray_start_cluster_says_how_to_use_it_and_crawls(tmp_path: Path) -> None:
    """`ray start --head` on this machine, then `raycrawl crawl URL --out out` as a new user types it: it crawls,
    on a Ray of its own, and says in one line how to crawl on that cluster instead; never a Ray traceback."""
    head = RayHead()
    root = head.temp_dir
    head.temp_dir = os.path.join(root, "ray")  # (where a `ray start` of the machine's RAY_TMPDIR=root writes)
    os.makedirs(head.temp_dir)
    try:
        head.start(cpus=1)
        env = {k: v for k, v in head.env.items() if k not in ("RAY_ADDRESS", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")}
        env["RAY_TMPDIR"] = root
        with TestWeb(WebSpec(hosts=1, pages_per_host=5, cross_host_links=0.0)) as web:
            command = [sys.executable, "-m", "raycrawl.cli", "crawl", *web.graph.seeds(), "--out", str(tmp_path)]
            command += ["--allow-network", LOOPBACK[0], "--delay", "0", "--quiet"]
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    finally:
        head.stop()
        shutil.rmtree(root, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    (note,) = [line for line in done.stderr.splitlines() if "ray start" in line]
    assert head.address in note and "--ray-address auto" in note
    assert sum(r["outcome"] == "fetched" for r in read_pages(str(tmp_path))) == 5  # it crawled
