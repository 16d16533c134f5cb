"""Issue 6, acceptance 1: `ray job submit` (the real CLI) runs jobs/crawl.py on a `ray start --head` cluster
with token auth, against the test web; the job SUCCEEDS and its output is complete."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO, assert_each_url_once, page_requests, wait_until
from ray_cluster import RayHead

from raycrawl.adapters.output import read_pages
from raycrawl.testing import TestWeb, WebSpec
from raycrawl.testing.process import gaps_by_host

DELAY = 0.05


@pytest.fixture(scope="module")
def head() -> Iterator[RayHead]:
    """One ``ray start --head`` (token auth, a dashboard for the job API) for the module's jobs, each its own."""
    cluster = RayHead()
    cluster.start(dashboard=True)
    try:
        yield cluster
    finally:
        cluster.stop()


def submit(
    head: RayHead, script: str, *args: str, working_dir: Path = REPO
) -> tuple[str, subprocess.CompletedProcess[str]]:
    """``ray job submit`` of ``script`` with ``args`` (loopback allowed) to the head, waited for: (job id, the CLI's
    run)."""
    job_id = f"raycrawl-test-{uuid.uuid4().hex[:8]}"
    runtime_env = {"excludes": [".git", "tests", "benchmarks", "*.ipynb"]}
    command = [
        "ray", "job", "submit", "--address", f"http://127.0.0.1:{head.dashboard_port}", "--submission-id", job_id,
        "--working-dir", str(working_dir), "--runtime-env-json", json.dumps(runtime_env),
        "--", "python", script, *args, "--allow-network", "127.0.0.0/8",
    ]  # fmt: skip
    return job_id, subprocess.run(command, env=head.env, capture_output=True, text=True, timeout=600)


def kill_coordinator_when(head: RayHead, web: TestWeb, pages: int) -> tuple[threading.Thread, list[int]]:
    """SIGKILL the crawl's coordinator once the server has seen ``pages`` page requests: (the killer, the pids it
    killed)."""
    killed: list[int] = []

    def killer() -> None:
        wait_until(lambda: len(page_requests(web.requests())) >= pages and head.pids("ray::Coordinator"), 300, "pages")
        killed.extend(head.pids("ray::Coordinator"))
        os.kill(killed[0], signal.SIGKILL)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    return thread, killed


def test_ray_job_submit_runs_a_crawl_to_success_though_its_coordinator_is_killed(head: RayHead, tmp_path: Path) -> None:
    """... and issue 50, acceptance 1 on a submitted crawl: its coordinator's process SIGKILLed mid-crawl, Ray makes
    it again, it picks the crawl up from its live crew, and the job succeeds with every page recorded once."""
    spec = WebSpec(hosts=6, pages_per_host=80, page_bytes=200)
    with TestWeb(spec) as web:
        out = tmp_path / "out"
        api = f"http://127.0.0.1:{head.dashboard_port}"
        killer, killed = kill_coordinator_when(head, web, 100)
        job_id, done = submit(head, "jobs/crawl.py", *web.graph.seeds(), "--out", str(out), "--delay", str(DELAY))
        killer.join(timeout=60)
        status = subprocess.run(
            ["ray", "job", "status", "--address", api, job_id],
            env=head.env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        logs = subprocess.run(
            ["ray", "job", "logs", "--address", api, job_id],
            env=head.env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        requests = web.requests()

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "succeeded" in (status.stdout + status.stderr).lower()  # "Job '...' succeeded"
    assert "raycrawl: [" in logs.stdout and "pages/s" in logs.stdout  # progress lines reached the job log
    records = read_pages(str(out))
    reachable = web.graph.reachable([(h, 0) for h in range(spec.hosts)])
    assert_each_url_once(records)
    assert {r["url"] for r in records if r["outcome"] == "fetched"} == set(reachable)
    assert min(min(g) for g in gaps_by_host(page_requests(requests)).values()) >= DELAY
    summary = json.loads((out / "stats.json").read_text())
    assert summary["finished"] is True
    assert len(killed) == 1
    [recovery] = summary["recoveries"]
    assert recovery["kind"] == "coordinator restarted" and "picked up" in recovery["cause"], recovery
    # The pages in flight when it died are all that may be fetched twice
    seen = Counter((r["ip"], r["path"]) for r in page_requests(requests))
    assert len(seen) == len(reachable)
    assert sum(n - 1 for n in seen.values()) <= recovery["pages_again_at_most"], recovery


def test_a_python_score_function_rides_along_with_ray_job_submit(head: RayHead, tmp_path: Path) -> None:
    """Issue 17, acceptance 3: jobs/scored_crawl.py's score() runs in the shards of a submitted job."""
    spec = WebSpec(hosts=2, pages_per_host=30, page_bytes=200, private_links=False, cross_host_links=0.0)
    with TestWeb(spec) as web:
        seeds = [web.graph.url(h, p) for h in range(spec.hosts) for p in range(spec.pages_per_host)]
        out = tmp_path / "out"
        _, done = submit(head, "jobs/scored_crawl.py", *seeds, "--out", str(out), "--delay", str(DELAY), "--quiet")
        requests = page_requests(web.requests())

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert len(requests) == spec.hosts * spec.pages_per_host
    for h in range(spec.hosts):
        paths = [r["path"] for r in requests if r["ip"] == web.graph.ip(h)]
        favoured = [i for i, p in enumerate(paths) if len(p) == 5 and p.startswith("/p/1")]
        assert favoured == list(range(10)), paths  # score() put /p/10 ... /p/19 first on each host


EXTRACTOR = """
import os


def extract(page):
    title = page.tree.css_first("title")
    price = page.tree.css_first(".price")
    if price is None:
        return None  # (not a data page: the index, the short pages; their links are followed)
    return {"title": title.text() if title else None, "price": price.text(),
            "worker_cwd": os.path.basename(os.getcwd())}
"""


def test_an_extractor_module_in_the_jobs_working_dir_runs_on_the_workers(head: RayHead, tmp_path: Path) -> None:
    """Issue 47, acceptance 4: ``--extract module:function`` with the module only in the job's working directory
    (not installed, not in the repo): the driver checks it imports, the fetch workers run it."""
    import ray

    from raycrawl.results import read_items
    from raycrawl.testing.articles import article_page, article_seed

    job_dir = tmp_path / "job"
    (job_dir / "jobs").mkdir(parents=True)
    (job_dir / "jobs" / "crawl.py").write_text((REPO / "jobs" / "crawl.py").read_text())
    (job_dir / "my_items.py").write_text(EXTRACTOR)
    spec = WebSpec(hosts=2, pages_per_host=10, profiles=("articles", "articles"))
    out = tmp_path / "out"
    with TestWeb(spec) as web:
        _, done = submit(
            head, "jobs/crawl.py", *web.graph.seeds(), "--out", str(out), "--delay", str(DELAY), "--quiet",
            "--extract", "my_items:extract", "--require", "title", working_dir=job_dir,
        )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ray.init(address="local", num_cpus=1, include_dashboard=False, _node_ip_address="127.0.0.1")
    try:
        items = read_items(str(out)).to_pandas()
    finally:
        ray.shutdown()
    assert len(items) == spec.hosts * spec.pages_per_host  # every article (the index and short pages: no price)
    assert set(items["extractor"]) == {"my_items:extract"}
    assert items["worker_cwd"].nunique() == 1 and items["worker_cwd"].iloc[0] != "main"  # (the job's own copy)
    for row in items.itertuples():
        host_ip, number = row.url.split("//")[1].split(":")[0], int(row.url.rsplit("/", 1)[1])
        assert row.price == article_page(article_seed(host_ip, number)).price
