"""Issue 50, the head: a ``ray start`` cluster with Ray's GCS fault tolerance (its GCS backed by a Redis of the
test's own, ``RAY_REDIS_ADDRESS``). Mid-crawl the GCS process is SIGKILLed, left down for a while, and started
again with its own command line (what a supervisor -- systemd, a Kubernetes restart -- would do): the crawl goes
on, and ends with every page recorded once, polite at the server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from conftest import assert_each_url_once, page_requests, wait_until
from ray_cluster import RayHead, process_table, running

from raycrawl.adapters.output import read_pages
from raycrawl.testing import TestWeb, WebSpec
from raycrawl.testing.process import gaps_by_host

SPEC = WebSpec(hosts=4, pages_per_host=60, page_bytes=200, private_links=False)
DELAY = 0.1
DOWN_S = 8.0  # how long the GCS stays away

DRIVER = """
import json, sys
from raycrawl import Crawl, CrawlConfig
address, out, delay, *seeds = sys.argv[1:]
config = CrawlConfig(seeds=tuple(seeds), out=out, delay=float(delay), allow_network=("127.0.0.0/8",),
                     ray_address=address, quiet=True)
crawl = Crawl(config).start()
print("started", flush=True)
print(json.dumps(crawl.wait(timeout=600)), flush=True)
"""


def gcs_server(head: RayHead) -> tuple[int, list[str]]:
    """The cluster's GCS process: (pid, its command line)."""
    mark = head.temp_dir.encode()
    table = process_table()
    [pid] = [p for p, (_, c) in table.items() if b"gcs_server" in c.split(b"\0")[0] and mark in c]
    cmdline = table[pid][1]
    return pid, [part.decode() for part in cmdline.split(b"\0") if part]


def test_a_crawl_goes_on_through_its_clusters_gcs_killed_and_started_again(redis_url: str, tmp_path: Path) -> None:
    head = RayHead()
    head.env["RAY_REDIS_ADDRESS"] = redis_url.removeprefix("redis://").split("/")[0]
    head.start()
    driver: subprocess.Popen[str] | None = None
    try:
        with TestWeb(SPEC) as web:
            seeds = [web.graph.url(h, 0) for h in range(SPEC.hosts)]
            command = [sys.executable, "-c", DRIVER, head.address, str(tmp_path / "out"), str(DELAY), *seeds]
            driver = subprocess.Popen(command, env=head.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            assert driver.stdout is not None and driver.stdout.readline().strip() == "started"
            wait_until(lambda: len(page_requests(web.requests())) >= 20, 120, "the crawl's first pages")
            pid, gcs_command = gcs_server(head)
            os.kill(pid, signal.SIGKILL)
            wait_until(lambda: not running(pid), 30, "the GCS gone")
            down_at, before = time.time(), len(page_requests(web.requests()))
            # While the GCS is away, running actors and tasks go on (Ray's promise): pages keep coming, or not
            wait_until(lambda: time.time() - down_at >= DOWN_S, DOWN_S + 5, "the GCS's time away")
            during = len(page_requests(web.requests())) - before
            with (Path(head.temp_dir) / "gcs-again.log").open("w") as log:
                subprocess.Popen(gcs_command, env=head.env, stdout=log, stderr=log, start_new_session=True)
            out, err = driver.communicate(timeout=600)
            requests = web.requests()
    finally:
        if driver is not None and driver.poll() is None:
            driver.kill()
        head.stop()
    assert driver.returncode == 0, err[-3000:]
    summary = json.loads(out.strip().splitlines()[-1])
    reachable = set(web.graph.reachable([(h, 0) for h in range(SPEC.hosts)]))
    records = read_pages(str(tmp_path / "out"))
    assert_each_url_once(records)
    assert {r["url"] for r in records if r["outcome"] == "fetched"} == reachable and summary["records"] == len(records)
    seen = Counter((r["ip"], r["path"]) for r in page_requests(requests))
    assert max(seen.values()) == 1  # (nothing was fetched again: no process died but the GCS)
    assert min(min(g) for g in gaps_by_host(requests).values()) >= DELAY - 0.005
    print(f"pages requested while the GCS was away ({DOWN_S:g} s): {during}")
