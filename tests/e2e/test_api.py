"""The notebook API on a running crawl: pause/resume, add_seeds, hosts() as a table, results() as a Dataset."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import assert_each_url_once, local_config, page_requests, wait_until, warc_page_responses

from raycrawl.api import Crawl
from raycrawl.testing import TestWeb, WebSpec

pytestmark = pytest.mark.usefixtures("ray_local")


def test_pause_add_seeds_resume_and_analyse(tmp_path: Path) -> None:
    spec = WebSpec(hosts=4, pages_per_host=60, page_bytes=200, cross_host_links=0.0)
    with TestWeb(spec) as web:
        seeds = web.graph.seeds()
        crawl = Crawl(local_config(seeds=(seeds[0],), out=str(tmp_path), delay=0.05)).start()
        wait_until(lambda: crawl.status().get("pages", 0) >= 10, 120, "10 pages")
        # Demand in view: this Ray's 2 CPUs hold 2 tasks of 1 CPU; no autoscaler here, so nothing is asked.
        demand = crawl.status()["demand"]
        assert demand["tasks_ceiling"] == 2 and demand["cluster_cpus"] == 2.0 and demand["nodes"] == 1
        assert 1 <= demand["tasks_wanted"] <= 2 and not demand["autoscaler"] and demand["cpus_requested"] == 0
        crawl.pause()
        wait_until(lambda: crawl.status().get("state") == "paused", 30, "the paused state")
        wait_until(lambda: crawl.status().get("leased") == 0, 30, "in-flight fetches to finish")
        seen = len(web.requests())
        # The crawl keeps running rounds while paused; after several status refreshes nothing more was sent.
        elapsed = crawl.status()["elapsed_s"]
        wait_until(lambda: crawl.status()["elapsed_s"] >= elapsed + 1.0, 30, "one more second of crawl time")
        assert len(web.requests()) == seen and not crawl.done()
        assert crawl.add_seeds([*seeds[1:], seeds[1]]) == len(seeds) - 1  # duplicates collapse
        with pytest.raises(ValueError, match="not http"):
            crawl.add_seeds(["ftp://u:secret@a.test/"])
        crawl.unpause()
        summary = crawl.wait(timeout=300)
        hosts = crawl.hosts()
        dataset = crawl.results()
        records = crawl.records()
        requests = web.requests()
    reachable = web.graph.reachable([(h, 0) for h in range(spec.hosts)])
    assert_each_url_once(records)
    assert {r["url"] for r in records if r["outcome"] == "fetched"} == set(reachable)  # added hosts joined the scope
    assert len(page_requests(requests)) == len(reachable)
    assert summary["seeds"] == len(seeds)
    assert summary["demand"]["peaks"]["tasks_wanted"] >= 1 and summary["demand"]["cpus_requested"] == 0
    assert set(hosts.index) == {web.graph.netloc(h) for h in range(spec.hosts)}
    assert {"queued", "delay", "delay_reason", "robots", "paused"} <= set(hosts.columns)
    frame = dataset.to_pandas()
    assert dataset.count() == len(records) and set(frame["url"]) == {r["url"] for r in records}
    assert (frame["outcome"] == "fetched").sum() == len(reachable)


def test_a_filesystem_object_takes_the_output_and_results_read_it_back(s3_server: Any, s3_uri: str) -> None:
    """As Ray Data's ``filesystem=``: a pyarrow filesystem (here S3, on the test's S3 server) and a path in it."""
    import pyarrow.fs as pafs

    from raycrawl.adapters.storage import resolve

    fs = pafs.S3FileSystem(endpoint_override=s3_server.endpoint, scheme="http", region="us-east-1")
    path = resolve(s3_uri).root  # bucket/crawl
    spec = WebSpec(hosts=2, pages_per_host=15)
    with TestWeb(spec) as web:
        crawl = Crawl(local_config(seeds=tuple(web.graph.seeds()), out=path, filesystem=fs, delay=0.01)).start()
        summary = crawl.wait(timeout=300)
    reachable = set(web.graph.reachable([(h, 0) for h in range(spec.hosts)]))
    frame = crawl.results().to_pandas()  # read from the bucket in Ray tasks
    assert set(frame[frame.outcome == "fetched"].url) == reachable and frame.url.is_unique
    assert set(warc_page_responses(s3_uri)) == reachable
    assert summary["out_dir"].startswith("S3FileSystem:") and fs.get_file_info(f"{path}/stats.json").size > 0


def test_a_command_reached_through_the_coordinators_client(tmp_path: Path) -> None:
    """checkpoint_now, added to the coordinator and its client only, works from the Crawl handle at once."""
    spec = WebSpec(hosts=2, pages_per_host=200, page_bytes=200, cross_host_links=0.0)
    with TestWeb(spec) as web:
        cfg = local_config(seeds=tuple(web.graph.seeds()), out=str(tmp_path), delay=0.05, checkpoint_interval=3600.0)
        crawl = Crawl(cfg).start()
        wait_until(lambda: crawl.status().get("pages", 0) >= 20, 120, "20 pages")
        assert crawl.status().get("checkpoints") == 0  # (an hour's interval: none yet)
        crawl.coordinator.checkpoint_now()
        wait_until(lambda: crawl.status().get("checkpoints", 0) >= 1, 60, "the checkpoint asked for")
        pages = crawl.status()["pages"]
        assert (tmp_path / "committed.json").exists() and pages < spec.hosts * spec.pages_per_host
        crawl.stop()
        crawl.wait(timeout=120)
