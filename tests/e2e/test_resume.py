"""Issue 4: SIGKILL the whole crawl (driver and its Ray cluster) half way, then --resume.

The cluster is a real `ray start --head` on 127.0.0.1 with token auth (tests/ray_cluster.py).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from conftest import page_requests, wait_until, warc_page_responses
from ray_cluster import RayHead

from raycrawl.adapters.output import committed_parts, read_pages
from raycrawl.adapters.snapshots import SnapshotStore, StorageSnapshotStore
from raycrawl.adapters.storage import resolve
from raycrawl.config import DEFAULT_TRACKING_PARAMS
from raycrawl.core.urls import canonicalize
from raycrawl.testing import TestWeb, WebSpec

INTERVAL = 2.0


# (checkpoints in Redis: the store's contract against a real redis-server in tests/e2e/test_snapshots.py, and
# --redis-url through the CLI in tests/e2e/test_redis_outage.py)
@pytest.mark.parametrize("where", ["local", "s3"])
def test_sigkill_then_resume_records_every_page_once(
    tmp_path: Path, where: str, request: pytest.FixtureRequest
) -> None:
    spec = WebSpec(hosts=20, pages_per_host=150, page_bytes=200)
    out: Path | str = tmp_path / "out"
    extra: list[str] = []
    if where == "s3":  # everything -- records, WARC, stats.json, checkpoints -- in a bucket of a real S3 API server
        out = request.getfixturevalue("s3_uri")
    store: SnapshotStore = StorageSnapshotStore(resolve(str(out)))
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
                lambda: len(page_requests(web.requests())) >= 1500 and store.current_id() is not None,
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
    # What is in the store is the committed output, nothing else: parts the kill left unlisted were removed.
    storage = resolve(str(out))
    assert set(storage.list("pages") + storage.list("warc")) == set(committed_parts(storage))
    assert json.loads(storage.read("stats.json") or b"{}")["finished"] is True
    # The queues waited on disk (a workbench of 16 URLs per host in memory) and the checkpoints that the resume
    # replayed named their logs in the output; so did the seen-set's partitions (their changes since each cut).
    assert any(storage.list(f"frontier/shard-{i:03d}") for i in range(2))
    assert storage.list("seen/part-000")

    # Fetched twice: at most one checkpoint interval of work, i.e. what the server saw in the interval before the
    # kill (checkpoint cuts are at most INTERVAL apart; 0.2 s for the kill itself to land).
    seen = Counter(canonicalize(f"http://{r['host']}{r['path']}", DEFAULT_TRACKING_PARAMS) for r in after)
    twice = sum(n - 1 for n in seen.values() if n > 1)
    last_interval = sum(1 for r in before if killed_at - INTERVAL - 0.2 <= r["t"])
    print(f"fetched twice: {twice}; pages in the last checkpoint interval before the kill: {last_interval}")
    assert twice <= last_interval, (twice, last_interval)
