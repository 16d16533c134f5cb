"""Issue 18, acceptance 1 and 2: a crawl submitted with `ray job submit` to a `ray start --head` on 127.0.0.1 is
operated by its id from other processes -- a Python one with ``Crawl.attach`` (tests/attach_client.py), and the
CLI's verbs -- asserted on the test web's own log: a paused host gets no request, a delayed one its new delay, an
added seed is crawled, and a stop checkpoints and ends the job SUCCEEDED, resumable."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from conftest import REPO, wait_until
from ray_cluster import RayHead

from raycrawl.core.crawl_loop import LoopSettings
from raycrawl.core.frontier_settings import FrontierSettings
from raycrawl.core.runs import run_size
from raycrawl.testing import TestWeb, WebSpec
from raycrawl.testing.process import gaps_by_host

SPEC = WebSpec(hosts=5, pages_per_host=300, page_bytes=200, private_links=False, cross_host_links=0.0)
DELAY = 0.2
NEW_DELAY = 1.0
TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED")


def submit(head: RayHead, crawl_id: str, out: Path, seeds: list[str]) -> str:
    """``ray job submit --no-wait`` of jobs/crawl.py under ``crawl_id``: the job's id."""
    job_id = f"raycrawl-test-{uuid.uuid4().hex[:8]}"
    runtime_env = {"excludes": [".git", "tests", "benchmarks", "*.ipynb"]}
    command = [
        "ray", "job", "submit", "--no-wait", "--address", f"http://127.0.0.1:{head.dashboard_port}",
        "--submission-id", job_id, "--working-dir", str(REPO), "--runtime-env-json", json.dumps(runtime_env),
        "--", "python", "jobs/crawl.py", *seeds, "--out", str(out), "--crawl-id", crawl_id, "--delay", str(DELAY),
        "--allow-network", "127.0.0.0/8", "--quiet",
    ]  # fmt: skip
    subprocess.run(command, env=head.env, check=True, capture_output=True, timeout=300)
    return job_id


def job_state(head: RayHead, job_id: str) -> str:
    shown = subprocess.run(
        ["ray", "job", "status", "--address", f"http://127.0.0.1:{head.dashboard_port}", job_id],
        env=head.env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    text = (shown.stdout + shown.stderr).upper()
    return next((state for state in TERMINAL if state in text), "RUNNING")


def requests_to(requests: list[dict[str, Any]], ip: str, after: float = 0.0) -> list[dict[str, Any]]:
    return [r for r in requests if r["ip"] == ip and r["t"] > after and r["path"] != "/robots.txt"]


def assert_steered(web: TestWeb, paused_at: float, delayed_at: float) -> None:
    """Host 1 paused, host 2 slowed to NEW_DELAY, host 4 added by a seed: what the server saw."""
    requests = web.requests()
    # Leases handed out before the pause may still be sent -- one run, at most what DELAY fits in the lease horizon
    # (core/runs.py), late on a loaded machine (1.0 s after the pause once in CI) -- and nothing after them.
    after_pause = requests_to(requests, web.graph.ip(1), paused_at)
    assert len(after_pause) <= run_size(FrontierSettings().run_length, DELAY, LoopSettings().lease_horizon), after_pause
    slowed = requests_to(requests, web.graph.ip(2), delayed_at + 1.0)
    assert len(slowed) >= 2
    assert min(gaps_by_host(slowed)[web.graph.ip(2)]) >= NEW_DELAY - 0.01
    assert [r["path"] for r in requests_to(requests, web.graph.ip(4))][:1] == ["/p/7"]


def test_a_submitted_crawl_is_steered_and_stopped_from_another_python_process(tmp_path: Path) -> None:
    head = RayHead()
    head.start(dashboard=True)
    out = tmp_path / "out"
    try:
        with TestWeb(SPEC) as web:
            seeds = [web.graph.url(h, 0) for h in range(4)]  # (host 4 comes in later, as an added seed)
            job = submit(head, "live", out, seeds)

            def client(*args: str) -> dict[str, Any]:
                done = subprocess.run(
                    [sys.executable, str(REPO / "tests" / "attach_client.py"), *args],
                    env=head.env, capture_output=True, text=True, timeout=300,
                )  # fmt: skip
                assert done.returncode == 0, done.stderr[-3000:]
                return dict(json.loads(done.stdout.strip().splitlines()[-1]))

            steer = client("steer", "live", head.address, web.graph.netloc(1), web.graph.netloc(2), web.graph.url(4, 7))
            ip2 = web.graph.ip(2)
            wait_until(lambda: len(requests_to(web.requests(), ip2, steer["delayed_at"] + 1.0)) >= 3, 60, "host 2")
            wait_until(lambda: requests_to(web.requests(), web.graph.ip(4)), 60, "the added seed's request")
            stopped = client("stop", "live", head.address)
            wait_until(lambda: job_state(head, job) in TERMINAL, 180, "the job's end")
            assert job_state(head, job) == "SUCCEEDED"
            assert_steered(web, steer["paused_at"], steer["delayed_at"])
    finally:
        head.stop()

    assert [c["crawl_id"] for c in steer["crawls"]] == ["live"] and steer["crawls"][0]["state"] in (
        "starting",
        "running",
    )
    assert steer["status"]["state"] == "running" and steer["status"]["pages"] >= 10
    assert {web.graph.netloc(1), web.graph.netloc(2)} <= set(steer["hosts"])
    assert steer["paused"] is True and steer["delayed"] is True and steer["added"] == 1
    assert steer["unknown_host"] is False
    summary = stopped["summary"]
    assert summary["stop_reason"] == "stopped from another process" and summary["resumable"] is True
    assert summary["left_queued"] > 0 and stopped["status_after"]["state"] == "finished"
    saved = json.loads((out / "stats.json").read_text())
    assert saved["resumable"] is True and (out / "checkpoints" / "CURRENT").exists()


def test_the_cli_verbs_operate_a_submitted_crawl_by_its_id(tmp_path: Path) -> None:
    head = RayHead()
    head.start(dashboard=True)
    out = tmp_path / "out"

    def cli(*args: str, address: str | None = None) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "raycrawl.cli", *args, "--ray-address", address or head.address]
        return subprocess.run(command, env=head.env, capture_output=True, text=True, timeout=180)

    def cli_json(*args: str) -> Any:
        done = cli(*args, "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    try:
        with TestWeb(SPEC) as web:
            job = submit(head, "by-cli", out, [web.graph.url(h, 0) for h in range(4)])
            wait_until(lambda: "by-cli" in [c["crawl_id"] for c in cli_json("list")], 120, "the crawl in the list")
            wait_until(lambda: cli_json("status", "--crawl-id", "by-cli").get("pages", 0) >= 10, 60, "pages")
            hosts = cli_json("hosts", "--crawl-id", "by-cli", "--top", "100")
            assert {web.graph.netloc(1), web.graph.netloc(2)} <= {row["host"] for row in hosts}
            people = cli("hosts", "--crawl-id", "by-cli")
            assert people.returncode == 0 and web.graph.netloc(1) in people.stdout
            assert cli_json("pause-host", "--crawl-id", "by-cli", web.graph.netloc(1))["ok"] is True
            paused_at = time.time()
            assert cli_json("set-delay", "--crawl-id", "by-cli", web.graph.netloc(2), str(NEW_DELAY))["ok"] is True
            delayed_at = time.time()
            assert cli_json("add-seeds", "--crawl-id", "by-cli", web.graph.url(4, 7))["added"] == 1
            mistakes = {
                5: cli("pause-host", "--crawl-id", "by-cli", "nowhere.test:1"),
                4: cli("status", "--crawl-id", "no-such-crawl"),
                3: cli("status", "--crawl-id", "by-cli", address="127.0.0.1:1"),
                2: cli("set-delay", "--crawl-id", "by-cli", web.graph.netloc(2), "soon"),
            }
            ip2 = web.graph.ip(2)
            wait_until(lambda: len(requests_to(web.requests(), ip2, delayed_at + 1.0)) >= 3, 60, "host 2")
            wait_until(lambda: requests_to(web.requests(), web.graph.ip(4)), 60, "the added seed's request")
            stopped = cli_json("stop", "--crawl-id", "by-cli")
            wait_until(lambda: job_state(head, job) in TERMINAL, 180, "the job's end")
            assert job_state(head, job) == "SUCCEEDED"
            assert_steered(web, paused_at, delayed_at)
            gone = cli("status", "--crawl-id", "by-cli")
    finally:
        head.stop()

    for code, done in mistakes.items():
        assert done.returncode == code, (code, done.stderr)
        assert done.stderr.count("\n") == 1 and done.stderr.startswith("raycrawl: error: "), done.stderr
        assert done.stdout == ""
    assert "no running crawl named 'no-such-crawl'" in mistakes[4].stderr
    summary = stopped["summary"]
    assert summary["resumable"] is True and summary["left_queued"] > 0
    assert (out / "checkpoints" / "CURRENT").exists()
    assert gone.returncode == 4 and "no running crawl named 'by-cli'" in gone.stderr
