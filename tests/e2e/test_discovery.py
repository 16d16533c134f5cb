"""Issue 30, end to end and small: a crawl of a web that discovers URLs 30 times faster than it fetches them, with
a workbench of 4 URLs per host. Nothing is shed for space, nothing is lost (every reachable page fetched and
archived once), most of the queue waited on disk and the workbenches never held more than their bound, and the
checkpoints named the queue's files in the output. (benchmarks/discovery.py is the large version: 5 million
queued URLs.)"""

from __future__ import annotations

from pathlib import Path

from conftest import LOOPBACK, assert_each_url_once, warc_page_responses

from raycrawl.adapters.output import read_pages
from raycrawl.adapters.storage import resolve
from raycrawl.api import Crawl
from raycrawl.config import CrawlConfig
from raycrawl.testing import TestWeb, WebSpec

WORKBENCH = 4


def test_a_fast_discovering_crawl_keeps_its_queue_on_disk_and_loses_nothing(tmp_path: Path, ray_local: None) -> None:
    spec = WebSpec(hosts=4, pages_per_host=1000, links_per_page=30, page_bytes=100, private_links=False)
    out = tmp_path / "out"
    with TestWeb(spec) as web:
        cfg = CrawlConfig(
            seeds=tuple(web.graph.seeds()),
            out=str(out),
            delay=0.0,
            workbench=WORKBENCH,
            frontier_dir=str(tmp_path / "queues"),
            checkpoint_interval=1.0,
            allow_network=LOOPBACK,
            quiet=True,
        )
        summary = Crawl(cfg).start().wait()
    frontier = summary["frontier"]
    assert {k: v for k, v in frontier.items() if k.startswith("shed_")} == {}  # nothing shed
    assert summary["outcomes"].get("out_of_budget", 0) == 0
    reachable = set(web.graph.reachable([(h, 0) for h in range(spec.hosts)]))
    records = read_pages(str(out))
    assert_each_url_once(records)
    assert {r["url"] for r in records if r["outcome"] == "fetched"} == reachable  # nothing lost
    warc = warc_page_responses(out)
    assert set(warc) == reachable and max(warc.values()) == 1
    # Bounded memory: the workbenches (every shard's, summed) never held more than 4 URLs per host, while most of
    # the queue (up to thousands of URLs) waited on disk; the checkpoints copied it to the output as logs.
    assert 0 < frontier["queued_in_memory_peak"] <= WORKBENCH * spec.hosts
    assert frontier["queued_on_disk_peak"] > 20 * WORKBENCH * spec.hosts
    assert summary["checkpoints"]["taken"] >= 3
    queue_files = [
        f for f in resolve(str(out)).list("frontier/shard-000") + resolve(str(out)).list("frontier/shard-001")
    ]
    assert queue_files, "no checkpoint wrote the queue's log"
    assert not list((tmp_path / "queues").glob("raycrawl-queue-*"))  # each shard removed its store at the end
