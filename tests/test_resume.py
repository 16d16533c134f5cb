"""Issue 4: SIGKILL the whole crawl (driver and its Ray cluster) half way, then --resume.

The cluster is a real `ray start --head` on 127.0.0.1 with token auth (RAY_AUTH_MODE=token and a token of
this test's own, given to the head and to every driver), stopped by `ray stop`.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from conftest import page_requests, wait_until, warc_page_responses

from raycrawl.adapters.output import read_pages
from raycrawl.adapters.snapshots import LocalDirStore, RedisSnapshotStore, SnapshotStore
from raycrawl.core.urls import canonicalize
from raycrawl.testing import TestWeb, WebSpec, free_port

INTERVAL = 2.0


class RayHead:
    def __init__(self) -> None:
        self.env = {
            **os.environ,
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN": secrets.token_hex(32),
            "RAY_USAGE_STATS_ENABLED": "0",
        }
        self.address = ""
        self.session = ""

    def start(self) -> None:
        port = free_port()
        command = [
            "ray",
            "start",
            "--head",
            "--node-ip-address=127.0.0.1",
            f"--port={port}",
            "--num-cpus=2",
            "--include-dashboard=false",
            "--disable-usage-stats",
        ]
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


@pytest.mark.parametrize("where", ["local", "redis"])
def test_sigkill_then_resume_records_every_page_once(
    tmp_path: Path, where: str, request: pytest.FixtureRequest
) -> None:
    spec = WebSpec(hosts=20, pages_per_host=250, page_bytes=200)
    out = tmp_path / "out"
    extra: list[str] = []
    store: SnapshotStore = LocalDirStore(out / "checkpoints")
    if where == "redis":
        url = request.getfixturevalue("redis_url")
        crawl_id = f"resume-{secrets.token_hex(4)}"
        extra = ["--redis-url", url, "--crawl-id", crawl_id]
        store = RedisSnapshotStore(url, crawl_id)
    head = RayHead()
    with TestWeb(spec) as web:
        args = [
            sys.executable,
            "-m",
            "raycrawl.cli",
            "crawl",
            *web.graph.seeds(),
            "--out",
            str(out),
            "--delay",
            "0.02",
            "--checkpoint-interval",
            str(INTERVAL),
            "--allow-network",
            "127.0.0.0/8",
            "--quiet",
            *extra,
        ]
        try:
            head.start()
            first = subprocess.Popen(
                [*args, "--ray-address", head.address], env=head.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
            wait_until(
                lambda: len(page_requests(web.requests())) >= 2500 and store.current_id() is not None,
                timeout=300,
                what="half the pages and a checkpoint",
            )
            # The whole crawl at once: its Ray processes (gcs, raylet, actors, fetch workers), then the driver.
            killed_at = time.time()
            assert head.kill() >= 3
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=30)
            before = page_requests(web.requests())
            head.start()
            second = subprocess.run(
                [*args, "--ray-address", head.address, "--resume"],
                env=head.env,
                capture_output=True,
                text=True,
                timeout=600,
            )
        finally:
            head.stop()
        after = page_requests(web.requests())
    assert second.returncode == 0, second.stderr
    reachable = web.graph.reachable([(h, 0) for h in range(spec.hosts)])

    records = read_pages(str(out))
    counts = Counter(r["url"] for r in records)
    assert [u for u, n in counts.items() if n > 1] == []  # every URL once in the committed output
    assert {r["url"] for r in records if r["outcome"] == "fetched"} == set(reachable)
    assert {r["url"] for r in records if r["outcome"] == "robots_denied"} == web.graph.private_urls(reachable)

    warc_pages = warc_page_responses(out)
    assert set(warc_pages) == set(reachable) and max(warc_pages.values()) == 1

    # Fetched twice: at most one checkpoint interval of work, i.e. what the server saw in the interval before the
    # kill (checkpoint cuts are at most INTERVAL apart; 0.2 s for the kill itself to land).
    seen = Counter(canonicalize(f"http://{r['host']}{r['path']}") for r in after)
    twice = sum(n - 1 for n in seen.values() if n > 1)
    last_interval = sum(1 for r in before if killed_at - INTERVAL - 0.2 <= r["t"])
    print(f"fetched twice: {twice}; pages in the last checkpoint interval before the kill: {last_interval}")
    assert twice <= last_interval, (twice, last_interval)
