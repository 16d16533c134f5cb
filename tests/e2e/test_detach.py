"""Issue 50, acceptance 3: a detached crawl (``detach=True``, ``raycrawl crawl --detach``) runs on a ``ray start``
cluster to its end though the process that started it is killed with SIGKILL mid-crawl; ``raycrawl wait
--crawl-id`` from another process returns its summary, and ``raycrawl status`` still has it after the crawl's
coordinator (and name) are gone. Asserted on the test web's own log: every reachable page requested once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from conftest import assert_each_url_once, page_requests, wait_until
from ray_cluster import RayHead

from raycrawl.adapters.output import read_pages
from raycrawl.testing import TestWeb, WebSpec

SPEC = WebSpec(hosts=3, pages_per_host=40, page_bytes=200, private_links=False, cross_host_links=0.0)
DELAY = 0.1

# The starting process: a script that starts the crawl detached, says so, and would go on waiting (it is killed).
DRIVER = """
import signal, sys
from raycrawl import Crawl, CrawlConfig
address, out, crawl_id, delay, *seeds = [a for a in sys.argv[1:] if a != "--attached"]
config = CrawlConfig(seeds=tuple(seeds), out=out, crawl_id=crawl_id, delay=float(delay), allow_network=("127.0.0.0/8",),
                     ray_address=address, quiet=True)
crawl = Crawl(config).start(detach=sys.argv[-1] != "--attached")
print("started", crawl.crawl_id, flush=True)
signal.pause()  # (until the test kills it)
"""


# What of the crawls is alive on the cluster: their coordinators' names and their crews' (actors/crew_registry.py).
NAMES = """
import json, sys, ray
ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)
names = ray.util.list_named_actors(all_namespaces=True)
print(json.dumps(sorted(n["namespace"] for n in names if n["namespace"].startswith("raycrawl"))))
"""


def alive(head: RayHead) -> list[str]:
    """The namespaces of the raycrawl actors alive on the cluster, one entry each."""
    done = subprocess.run([sys.executable, "-c", NAMES, head.address], env=head.env, capture_output=True, text=True,
                          timeout=120, check=True)  # fmt: skip
    return list(json.loads(done.stdout))


def cli(head: RayHead, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "raycrawl.cli", *args]
    return subprocess.run(command, env=head.env, capture_output=True, text=True, timeout=300)


def test_a_detached_crawl_outlives_its_starting_process_and_leaves_its_summary(tmp_path: Path) -> None:
    head = RayHead()
    head.start()
    driver: subprocess.Popen[str] | None = None
    try:
        with TestWeb(SPEC) as web:
            seeds = [web.graph.url(h, 0) for h in range(SPEC.hosts)]
            reachable = set(web.graph.reachable([(h, 0) for h in range(SPEC.hosts)]))
            command = [sys.executable, "-c", DRIVER, head.address, str(tmp_path / "out"), "alone", str(DELAY), *seeds]
            driver = subprocess.Popen(command, env=head.env, stdout=subprocess.PIPE, text=True)
            assert driver.stdout is not None and driver.stdout.readline().split() == ["started", "alone"]
            wait_until(lambda: len(page_requests(web.requests())) >= 10, 120, "the crawl's first pages")
            os.kill(driver.pid, signal.SIGKILL)  # (mid-crawl: 120 pages at 0.1 s a host take 4 s at least)
            driver.wait(timeout=30)
            killed_at_pages = len(page_requests(web.requests()))
            waited = cli(head, "wait", "--crawl-id", "alone", "--ray-address", head.address, "--json")
            status = cli(head, "status", "--crawl-id", "alone", "--ray-address", head.address, "--json")
            requested = Counter((r["ip"], r["path"]) for r in page_requests(web.requests()))
            # The CLI's way: `raycrawl crawl --detach` returns once the crawl runs, saying how to reach it.
            started = cli(head, "crawl", seeds[0], "--out", str(tmp_path / "out2"), "--crawl-id", "by-cli",
                          "--detach", "--ray-address", head.address, "--max-pages", "5",
                          "--allow-network", "127.0.0.0/8", "--quiet")  # fmt: skip
            second = cli(head, "wait", "--crawl-id", "by-cli", "--ray-address", head.address)
            listed = cli(head, "list", "--ray-address", head.address, "--json")
            after_detached = alive(head)
            # A crawl that is not detached ends with its driver: its coordinator (the driver's) and its crew (which
            # watches the coordinator's name) go, nothing left running on the cluster.
            command = [*command[:4], str(tmp_path / "out3"), "attached", str(DELAY), *seeds]
            driver = subprocess.Popen([*command, "--attached"], env=head.env, stdout=subprocess.PIPE, text=True)
            assert driver.stdout is not None and driver.stdout.readline().split() == ["started", "attached"]
            wait_until(lambda: "raycrawl-crew" in alive(head), 60, "the attached crawl's crew")
            os.kill(driver.pid, signal.SIGKILL)
            driver.wait(timeout=30)
            wait_until(lambda: alive(head) == [], 60, "nothing of the crawl whose driver died")
    finally:
        if driver is not None and driver.poll() is None:
            driver.kill()
        head.stop()

    assert killed_at_pages < len(reachable)
    assert waited.returncode == 0, waited.stderr
    summary: dict[str, Any] = json.loads(waited.stdout)
    assert summary["stop_reason"] == "frontier exhausted" and summary["records"] == len(reachable)
    assert len(requested) == len(reachable)
    assert [u for u, n in requested.items() if n > 1] == []  # every page asked for once, across the driver's death
    records = read_pages(str(tmp_path / "out"))
    assert_each_url_once(records)
    assert {r["url"] for r in records if r["outcome"] == "fetched"} == reachable
    saved = json.loads((tmp_path / "out" / "stats.json").read_text())
    assert saved["records"] == len(reachable)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["state"] == "finished"  # (the coordinator is gone: its kept summary)
    assert started.returncode == 0, started.stderr
    assert "runs detached" in started.stdout and "raycrawl wait --crawl-id by-cli" in started.stdout
    assert second.returncode == 0, second.stderr
    assert "max pages" in second.stdout or "records" in second.stdout
    assert listed.returncode == 0 and json.loads(listed.stdout) == []  # (both ended: neither holds a name)
    assert after_detached == []  # (their crews ended with them)
