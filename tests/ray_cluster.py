"""A real ``ray start --head`` on 127.0.0.1 with token auth (RAY_AUTH_MODE=token and a token of the test's own,
given to the head, to every driver and to the job CLI), stopped by its own processes, never by ``ray stop``.

Each head has a ``--temp-dir`` of its own (its session, its logs, and the note naming it the "current" cluster,
which a bare ``ray.init()`` elsewhere on the machine would otherwise join) and ports of its own, the dashboard
agent's included (a second Ray on the machine would otherwise take 52365 first: "No available agent to submit
job"). Its processes are found from its temp dir, never from ``/tmp/ray/session_latest``, which names whichever
Ray on the machine started last."""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conftest import wait_until

from raycrawl.ray_tuning import ray_start_environment
from raycrawl.testing import free_ports


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
        # Short (Ray's Unix socket paths must stay under 108 bytes), and under /tmp: a node in a mount namespace
        # of its own sees the machine's /tmp only through what it is given.
        self.temp_dir = tempfile.mkdtemp(prefix="rc-", dir="/tmp")

    def start(
        self, dashboard: bool = False, cpus: int = 2, max_workers: int = 0, worker: dict[str, float] | None = None
    ) -> None:
        """``ray start --head`` on loopback; with the dashboard (which serves the job API) when asked; with
        ``max_workers``, an autoscaler of Ray's fake multi-node provider that starts up to that many worker nodes
        offering ``worker`` (1 CPU unless told) on this machine (as processes of this cluster: ``kill`` ends them
        too). Tried twice: on a loaded machine Ray's own start can time out ("Failed to get node info ... Deadline
        Exceeded", once in a CI run), which says nothing of the code under test."""
        try:
            self._start(dashboard, cpus, max_workers, worker)
        except RuntimeError:
            self._start(dashboard, cpus, max_workers, worker)  # (new ports; what the first try started is gone)

    def _start(self, dashboard: bool, cpus: int, max_workers: int, worker: dict[str, float] | None) -> None:
        port, dashboard_port, *option_ports = free_ports(9)
        command = ["ray", "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}", f"--num-cpus={cpus}"]
        command += [f"--temp-dir={self.temp_dir}"]
        if max_workers:
            config = Path(self.temp_dir) / "autoscaling.json"  # (YAML is a superset of JSON)
            config.write_text(json.dumps(fake_autoscaling_config(port, max_workers, worker)))
            command += [f"--autoscaling-config={config}"]
            self.env |= {"RAY_FAKE_CLUSTER": "1", "AUTOSCALER_UPDATE_INTERVAL_S": "1"}
        for option in (
            "node-manager-port", "object-manager-port", "ray-client-server-port", "dashboard-agent-listen-port",
            "dashboard-agent-grpc-port", "runtime-env-agent-port", "metrics-export-port",
        ):  # fmt: skip
            command += [f"--{option}={option_ports.pop()}"]
        if dashboard:
            self.dashboard_port = dashboard_port
            command += ["--include-dashboard=true", "--dashboard-host=127.0.0.1"]
            command += [f"--dashboard-port={self.dashboard_port}"]
        else:
            command += ["--include-dashboard=false"]
        command += ["--disable-usage-stats"]
        started = subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=180)
        if started.returncode != 0:
            # What it started goes with it (the caller's stop() would miss processes named only by this GCS port).
            self.address = f"127.0.0.1:{port}"
            self.kill()
            self.address = ""
            raise RuntimeError(f"ray start failed ({started.returncode}): {started.stderr[-3000:]}")
        self.address = f"127.0.0.1:{port}"
        self.session = os.path.realpath(os.path.join(self.temp_dir, "session_latest"))

    def kill(self) -> int:
        """SIGKILL this cluster and only it: the processes naming its temp dir (its session's), and their children
        (worker processes rename themselves ``ray::...``, but they are the raylet's descendants)."""
        # (a few of its processes name only its GCS address, e.g. Ray client's proxy)
        gcs = re.compile(re.escape(self.address.encode()) + rb"(?!\d)") if self.address else None
        return kill_tree(lambda pid, cmdline: self.temp_dir.encode() in cmdline or bool(gcs and gcs.search(cmdline)))

    def pids(self, title: str) -> list[int]:
        """This cluster's processes whose title (a Ray worker's rewritten command line) starts with ``title``."""
        table = process_table()
        roots = {pid for pid, (_, cmdline) in table.items() if self.temp_dir.encode() in cmdline}
        return sorted(pid for pid in descendants(roots, table) if table[pid][1].startswith(title.encode()))

    def stop(self) -> None:
        """This cluster's processes, and no other Ray on the machine (``ray stop`` would end them all); then its
        temp dir, the note naming it the current cluster with it."""
        if self.session:
            self.kill()
        shutil.rmtree(self.temp_dir, ignore_errors=True)


def fake_autoscaling_config(port: int, max_workers: int, worker: dict[str, float] | None = None) -> dict[str, Any]:
    """An autoscaling config for Ray's fake multi-node provider (worker nodes are local ``ray start`` processes):
    a head that takes no workers of its own type and a 1-CPU worker type from 0 to ``max_workers``, released
    after ~12 s idle. ``use_node_id_as_ip``: without it idle nodes are never removed."""
    empty: dict[str, Any] = {}
    return {
        "cluster_name": "raycrawl-test",
        "max_workers": max_workers,
        "upscaling_speed": 1.0,
        "idle_timeout_minutes": 0.2,
        "provider": {
            "type": "fake_multinode",
            "gcs_address": f"127.0.0.1:{port}",
            "use_node_id_as_ip": True,
            "disable_launch_config_check": True,
            "disable_node_updaters": True,
        },
        "auth": {"ssh_user": "ubuntu"},
        "head_node_type": "ray.head.default",  # (the name the fake provider gives the head that `ray start` made)
        "available_node_types": {
            "ray.head.default": {"resources": empty, "node_config": empty, "max_workers": 0},
            "worker": {
                "resources": worker or {"CPU": 1},
                "node_config": empty,
                "min_workers": 0,
                "max_workers": max_workers,
            },
        },
        "file_mounts": empty,
        "cluster_synced_files": [],
        "file_mounts_sync_continuously": False,
        "rsync_exclude": [],
        "rsync_filter": [],
        "initialization_commands": [],
        "setup_commands": [],
        "head_setup_commands": [],
        "worker_setup_commands": [],
        "head_start_ray_commands": [],
        "worker_start_ray_commands": [],
    }


def process_table() -> dict[int, tuple[int, bytes]]:
    """Every process on the machine now: pid -> (its parent's pid, its command line)."""
    table: dict[int, tuple[int, bytes]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            table[int(entry.name)] = (parent, (entry / "cmdline").read_bytes())
    return table


def descendants(roots: set[int], table: dict[int, tuple[int, bytes]] | None = None) -> set[int]:
    """``roots`` and every process below them (a test's own Ray: the processes its driver started)."""
    table = process_table() if table is None else table
    tree, grew = set(roots), True
    while grew:
        children = {pid for pid, (parent, _) in table.items() if parent in tree} - tree
        grew = bool(children)
        tree |= children
    return tree


def kill_tree(is_root: Callable[[int, bytes], bool]) -> int:
    """SIGKILL the processes ``is_root(pid, cmdline)`` picks and all their descendants; wait until they are gone.
    Returns how many there were."""
    table = process_table()
    tree = descendants({pid for pid, (_, cmdline) in table.items() if is_root(pid, cmdline)}, table)
    tree.discard(os.getpid())
    for pid in tree:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not any(running(pid) for pid in tree), 30, "killed processes")
    return len(tree)


def running(pid: int) -> bool:
    """Alive, and not a zombie (a killed child of ours stays one until we wait for it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False
