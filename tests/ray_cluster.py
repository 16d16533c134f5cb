"""A real ``ray start --head`` on 127.0.0.1 with token auth (RAY_AUTH_MODE=token and a token of the test's own,
given to the head, to every driver and to the job CLI), stopped by its own command, ``ray stop``."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
from pathlib import Path

from conftest import wait_until

from raycrawl.ray_tuning import ray_start_environment
from raycrawl.testing import free_port


class RayHead:
    def __init__(self) -> None:
        self.env = {
            **os.environ,
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN": secrets.token_hex(32),
            "RAY_USAGE_STATS_ENABLED": "0",
            **ray_start_environment(),  # as the README's `ray start` has it
        }
        self.address = ""
        self.session = ""
        self.dashboard_port = 0

    def start(self, dashboard: bool = False) -> None:
        """``ray start --head`` on loopback; with the dashboard (which serves the job API) when asked."""
        port = free_port()
        command = ["ray", "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}", "--num-cpus=2"]
        if dashboard:
            self.dashboard_port = free_port()
            command += ["--include-dashboard=true", "--dashboard-host=127.0.0.1"]
            command += [f"--dashboard-port={self.dashboard_port}"]
        else:
            command += ["--include-dashboard=false"]
        command += ["--disable-usage-stats"]
        subprocess.run(command, env=self.env, check=True, capture_output=True, timeout=180)
        self.address = f"127.0.0.1:{port}"
        self.session = os.path.basename(os.readlink("/tmp/ray/session_latest"))

    def kill(self) -> int:
        """SIGKILL this cluster and only it: the processes naming its session directory, and their children
        (worker processes rename themselves ``ray::...``, but they are the raylet's descendants)."""
        parents: dict[int, int] = {}
        cluster: set[int] = set()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError, ValueError, IndexError):
                pid = int(entry.name)
                parents[pid] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                if self.session.encode() in (entry / "cmdline").read_bytes():
                    cluster.add(pid)
        grew = True
        while grew:
            children = {pid for pid, parent in parents.items() if parent in cluster} - cluster
            grew = bool(children)
            cluster |= children
        cluster.discard(os.getpid())
        for pid in cluster:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not any(Path(f"/proc/{pid}/stat").exists() for pid in cluster), 30, "killed processes")
        return len(cluster)

    def stop(self) -> None:
        subprocess.run(["ray", "stop"], env=self.env, check=False, capture_output=True, timeout=180)
