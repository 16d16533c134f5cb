"""The Ray a crawl starts for itself listens on loopback only: anyone who reaches Ray's ports can run code."""

from __future__ import annotations

import json
import os
import subprocess
import sys

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
ray.shutdown()
print(json.dumps({"addresses": addresses, "switch": switch}))
"""


def test_the_ray_a_crawl_starts_for_itself_listens_on_loopback_only() -> None:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
    done = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["addresses"], seen  # (Ray's servers were found)
    assert set(seen["addresses"]) <= {"127.0.0.1", "::ffff:127.0.0.1"}, seen["addresses"]
    assert seen["switch"] is None  # put back: a later connection to a real cluster is not affected
