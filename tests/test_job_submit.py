"""Issue 6, acceptance 1: `ray job submit` (the real CLI) runs jobs/crawl.py on a `ray start --head` cluster
with token auth, against the test web; the job SUCCEEDS and its output is complete."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

from conftest import assert_each_url_once, page_requests
from ray_cluster import RayHead

from raycrawl.adapters.output import read_pages
from raycrawl.testing import TestWeb, WebSpec
from raycrawl.testing.process import gaps_by_host

REPO = Path(__file__).resolve().parent.parent
DELAY = 0.05


def test_ray_job_submit_runs_a_crawl_to_success(tmp_path: Path) -> None:
    spec = WebSpec(hosts=6, pages_per_host=80, page_bytes=200)
    head = RayHead()
    head.start(dashboard=True)
    try:
        with TestWeb(spec) as web:
            job_id = f"raycrawl-test-{uuid.uuid4().hex[:8]}"
            out = tmp_path / "out"
            api = f"http://127.0.0.1:{head.dashboard_port}"
            runtime_env = {"excludes": [".git", "tests", "benchmarks", "*.ipynb"]}
            submit = [
                "ray", "job", "submit", "--address", api, "--submission-id", job_id,
                "--working-dir", str(REPO), "--runtime-env-json", json.dumps(runtime_env),
                "--", "python", "jobs/crawl.py", *web.graph.seeds(),
                "--out", str(out), "--delay", str(DELAY), "--allow-network", "127.0.0.0/8",
            ]  # fmt: skip
            done = subprocess.run(submit, env=head.env, capture_output=True, text=True, timeout=600)
            status = subprocess.run(
                ["ray", "job", "status", "--address", api, job_id],
                env=head.env, capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            logs = subprocess.run(
                ["ray", "job", "logs", "--address", api, job_id],
                env=head.env, capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            requests = web.requests()
    finally:
        head.stop()

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "succeeded" in (status.stdout + status.stderr).lower()  # "Job '...' succeeded"
    assert "raycrawl: [" in logs.stdout and "pages/s" in logs.stdout  # progress lines reached the job log
    records = read_pages(str(out))
    reachable = web.graph.reachable([(h, 0) for h in range(spec.hosts)])
    assert_each_url_once(records)
    assert {r["url"] for r in records if r["outcome"] == "fetched"} == set(reachable)
    assert len(page_requests(requests)) == len(reachable)
    assert min(min(g) for g in gaps_by_host(page_requests(requests)).values()) >= DELAY
    summary = json.loads((out / "stats.json").read_text())
    assert summary["finished"] is True
