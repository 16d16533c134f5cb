"""Issue 47, acceptance 3: SIGKILL the whole crawl (driver and its Ray cluster) half way through a crawl that
extracts items, then --resume, to a directory and to a real S3 API server: every accepted URL's item exactly once,
none for a URL that was not accepted, and nothing in items/ or rejected/ that the checkpoint does not list."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import page_requests, wait_until
from ray_cluster import RayHead

import raycrawl
from raycrawl.adapters.output import ITEMS_DIR, REJECTED_DIR, committed_parts, read_pages
from raycrawl.adapters.snapshots import StorageSnapshotStore
from raycrawl.adapters.storage import resolve
from raycrawl.testing import TestWeb, WebSpec
from raycrawl.testing.articles import SHORT_PAGES

ARTICLES = 120
HOSTS = 8


@pytest.fixture(scope="module")
def ray_for_reading() -> object:
    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="WARNING", log_to_driver=False,
             _node_ip_address="127.0.0.1")  # fmt: skip
    yield None
    ray.shutdown()


@pytest.mark.parametrize("where", ["local", "s3"])
def test_sigkill_then_resume_gives_each_accepted_item_once(
    tmp_path: Path, where: str, request: pytest.FixtureRequest
) -> None:
    spec = WebSpec(hosts=HOSTS, pages_per_host=ARTICLES, profiles=("articles",) * HOSTS)
    out = request.getfixturevalue("s3_uri") if where == "s3" else str(tmp_path / "out")
    store = StorageSnapshotStore(resolve(out))
    head = RayHead()
    with TestWeb(spec) as web:
        args = [
            sys.executable, "-m", "raycrawl.cli", "crawl", *web.graph.seeds(), "--out", out, "--delay", "0.02",
            "--checkpoint-interval", "2", "--allow-network", "127.0.0.0/8", "--quiet",
            # the index, short pages and what they link to have no description: rejected, their links followed
            "--extract", "builtin:meta", "--extract-fields", "price=css:.price::text", "--min-chars",
            "description=20", "--follow-rejected",
        ]  # fmt: skip
        try:
            head.start()
            first = subprocess.Popen(
                [*args, "--ray-address", head.address], env=head.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
            wait_until(
                lambda: len(page_requests(web.requests())) >= HOSTS * ARTICLES // 2 and store.current_id() is not None,
                timeout=300,
                what="half the pages and a checkpoint",
            )
            assert head.kill() >= 3
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=30)
            head.start()
            second = subprocess.run(
                [*args, "--ray-address", head.address, "--resume"], env=head.env, capture_output=True, text=True,
                timeout=600,
            )  # fmt: skip
        finally:
            head.stop()
    assert second.returncode == 0, second.stderr

    records = read_pages(out)
    assert [u for u, n in Counter(r["url"] for r in records).items() if n > 1] == []
    verdicts = Counter(r["verdict"] for r in records)
    assert verdicts["accepted"] == HOSTS * ARTICLES
    assert verdicts["rejected"] == HOSTS * (1 + 2 * SHORT_PAGES)  # (the index, short pages, and behind them)
    request.getfixturevalue("ray_for_reading")
    items = raycrawl.read_items(out).to_pandas()
    accepted = {r["url"] for r in records if r["verdict"] == "accepted"}
    assert len(items) == len(accepted) and set(items["url"]) == accepted  # each once, and only those
    rejected = raycrawl.read_items(out, rejected=True).to_pandas()
    assert len(rejected) == verdicts["rejected"] and set(rejected["url"]) == {
        r["url"] for r in records if r["verdict"] == "rejected"
    }
    by_url = {r["url"]: r for r in records}
    assert all(row.warc_id == by_url[row.url]["warc_id"] for row in items.itertuples())
    storage = resolve(out)
    stored = storage.list(ITEMS_DIR) + storage.list(REJECTED_DIR)
    assert stored and set(stored) <= set(committed_parts(storage))
