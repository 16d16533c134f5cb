"""The suite's Ray clusters end only themselves: a Ray started beside a test cluster (a crawl running on the same
machine, another suite) survives the test cluster's cleanup, and is not the one a test cluster's drivers join."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import wait_until
from ray_cluster import RayHead, descendants, process_table, running

# A neighbour: a process with a Ray of its own, as `raycrawl crawl` starts one; it runs a task when told to.
NEIGHBOUR = """
import sys, ray
ray.init(address="local", num_cpus=1, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
print("ready", flush=True)
sys.stdin.readline()

@ray.remote
def answer():
    return 42

print("answer", ray.get(answer.remote(), timeout=120), flush=True)
"""


def test_a_ray_started_beside_a_test_cluster_survives_its_cleanup() -> None:
    head = RayHead()
    neighbour: subprocess.Popen[str] | None = None
    try:
        head.start()
        env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"} | {"RAY_USAGE_STATS_ENABLED": "0"}
        neighbour = subprocess.Popen(
            [sys.executable, "-c", NEIGHBOUR],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert neighbour.stdout is not None and neighbour.stdout.readline().strip() == "ready"
        theirs = descendants({neighbour.pid}) - {
            neighbour.pid
        }  # its GCS, raylet, workers: started after the test cluster
        assert len(theirs) >= 2
        assert head.kill() >= 2  # the test cluster's cleanup: it had processes of its own to end
        mark = head.temp_dir.encode()
        wait_until(lambda: not any(mark in cmd for _, cmd in process_table().values()), 30, "the test cluster gone")
        assert all(running(pid) for pid in theirs), "the test cluster's cleanup ended a Ray it did not start"
        out, err = neighbour.communicate("go\n", timeout=180)
        assert neighbour.returncode == 0, err[-2000:]
        assert "answer 42" in out  # and it still works
    finally:
        if neighbour is not None and neighbour.poll() is None:
            neighbour.kill()
            neighbour.wait(timeout=30)
        head.stop()


def test_a_test_cluster_is_not_the_machines_current_cluster() -> None:
    """A bare ``ray.init()`` elsewhere on the machine joins the cluster named in /tmp/ray/ray_current_cluster: a test
    cluster keeps that note in its own temp dir."""
    note = Path("/tmp/ray/ray_current_cluster")
    before = note.read_text() if note.exists() else None
    head = RayHead()
    try:
        head.start()
        after = note.read_text() if note.exists() else None
        assert after == before or (after is not None and head.address not in after)
        assert (Path(head.temp_dir) / "ray_current_cluster").read_text().strip().endswith(head.address.split(":")[1])
    finally:
        head.stop()
    assert not Path(head.temp_dir).exists()
