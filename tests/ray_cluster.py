"""A real ``ray start --head`` on 127.0.0.1 with token auth (RAY_AUTH_MODE=token and a token of the test's own,
given to the head, to every driver and to the job CLI), stopped by its own command, ``ray stop``."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
from collections.abc import Callable
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

    def start(self, dashboard: bool = False, cpus: int = 2) -> None:
        """``ray start --head`` on loopback; with the dashboard (which serves the job API) when asked."""
        port = free_port()
        command = ["ray", "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}", f"--num-cpus={cpus}"]
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
        # (a few of its processes name only its GCS address, e.g. Ray client's proxy)
        return kill_tree(lambda pid, cmdline: self.session.encode() in cmdline or self.address.encode() in cmdline)

    def stop(self) -> None:
        """This cluster's processes (its session's), and no other Ray on the machine: ``ray stop`` would end all.
        Then, as ``ray stop`` does, the note naming it as the machine's current cluster, which a later
        ``ray.init()`` would otherwise try to join."""
        if self.session:
            self.kill()
        current = Path("/tmp/ray/ray_current_cluster")
        with contextlib.suppress(OSError):
            if self.address and self.address in current.read_text():
                current.unlink()


def kill_tree(is_root: Callable[[int, bytes], bool]) -> int:
    """SIGKILL the processes ``is_root(pid, cmdline)`` picks and all their descendants; wait until they are gone.
    Returns how many there were."""
    parents: dict[int, int] = {}
    tree: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            pid = int(entry.name)
            parents[pid] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if is_root(pid, (entry / "cmdline").read_bytes()):
                tree.add(pid)
    grew = True
    while grew:
        children = {pid for pid, parent in parents.items() if parent in tree} - tree
        grew = bool(children)
        tree |= children
    tree.discard(os.getpid())
    for pid in tree:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not any(_running(pid) for pid in tree), 30, "killed processes")
    return len(tree)


def _running(pid: int) -> bool:
    """Alive, and not a zombie (a killed child of ours stays one until we wait for it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False
