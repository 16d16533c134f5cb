"""Issue 4: Redis goes away for 10 s mid-crawl. The crawl finishes, loses nothing, and says so clearly."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from conftest import assert_each_url_once, page_requests, start_redis, wait_until

from raycrawl.adapters.output import read_pages
from raycrawl.testing import TestWeb, WebSpec, free_port


def start_crawl(web: TestWeb, tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    """``raycrawl crawl`` of the test web into tmp_path/out, quiet, with ``args``."""
    command = [sys.executable, "-m", "raycrawl.cli", "crawl", *web.graph.seeds(), "--out", str(tmp_path / "out"),
               "--allow-network", "127.0.0.0/8", "--quiet", *args]  # fmt: skip
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def through_an_outage(
    crawl: subprocess.Popen[str], web: TestWeb, redis: subprocess.Popen[bytes], port: int, tmp_path: Path,
    pages: int, seconds: float,
) -> tuple[str, str, float, float]:  # fmt: skip
    """Once the crawl has made ``pages`` page requests, Redis is stopped for ``seconds`` (the outage: these tests are
    about a span of time without it) and started again on its port; then the crawl's end. Returns (stdout, stderr,
    when Redis stopped, when it was back). Every process started is ended, also when this fails."""
    try:
        # Crawling, with checkpoints in Redis by now (or the crawl ended early: a failure, checked next).
        wait_until(lambda: crawl.poll() is not None or len(page_requests(web.requests())) >= pages, 120, "crawling")
        assert crawl.poll() is None, "the crawl ended before Redis was stopped"
        redis.terminate()
        redis.wait(timeout=10)
        stopped = time.time()
        time.sleep(seconds)
        redis = start_redis(port, tmp_path)
        restarted = time.time()
        stdout, stderr = crawl.communicate(timeout=300)
    finally:
        if crawl.poll() is None:
            crawl.kill()
        redis.terminate()
        redis.wait(timeout=10)
    return stdout, stderr, stopped, restarted


def test_redis_outage_is_survived_with_a_warning(tmp_path: Path) -> None:
    port = free_port()
    redis_proc = start_redis(port, tmp_path)
    spec = WebSpec(hosts=20, pages_per_host=100, page_bytes=200)
    with TestWeb(spec) as web:
        crawl = start_crawl(web, tmp_path, "--delay", "0.2", "--checkpoint-interval", "1",
                            "--redis-url", f"redis://127.0.0.1:{port}/0", "--crawl-id", "outage")  # fmt: skip
        stdout, stderr, stopped, _ = through_an_outage(crawl, web, redis_proc, port, tmp_path, 300, 10)
        during = len([r for r in page_requests(web.requests()) if r["t"] >= stopped])
    assert crawl.returncode == 0, stderr
    assert "frontier exhausted" in stdout
    assert "warning: checkpoint" in stderr and "Redis at redis://127.0.0.1" in stderr
    assert during > 0  # it kept crawling without Redis
    records = read_pages(str(tmp_path / "out"))
    assert_each_url_once(records)
    reachable = web.graph.reachable([(h, 0) for h in range(spec.hosts)])
    assert {r["url"] for r in records if r["outcome"] == "fetched"} == set(reachable)  # 0 lost


def test_shared_politeness_waits_out_a_redis_outage_and_goes_on(tmp_path: Path) -> None:
    """Issue 46.8: with --shared-politeness on a Redis that goes away, the crawl sends nothing while it is away (once
    what was already granted has gone), says why it waits, and goes on when it returns: every page once, no gap at
    the server under the delay, exit 0 with a final checkpoint."""
    import itertools
    from collections import defaultdict

    port = free_port()
    redis_proc = start_redis(port, tmp_path)
    spec = WebSpec(hosts=6, pages_per_host=40, page_bytes=200, private_links=False)
    delay = 0.2
    with TestWeb(spec) as web:
        crawl = start_crawl(web, tmp_path, "--delay", str(delay), "--crawl-id", "shared-outage",
                            "--shared-politeness", f"redis://:s3cret@127.0.0.1:{port}/0")  # fmt: skip
        _, stderr, stopped, restarted = through_an_outage(crawl, web, redis_proc, port, tmp_path, 40, 9)
        requests = web.requests()
    # (3 s after it stopped, what was granted before is sent and answered: from then on, no request until it is back)
    during = len([r for r in requests if stopped + 3 <= r["t"] < restarted])
    assert crawl.returncode == 0, stderr
    assert during == 0  # no request while the budget could not be asked
    assert "warning: shared politeness: Redis at redis://127.0.0.1" in stderr and "s3cret" not in stderr, stderr
    assert "Traceback" not in stderr
    records = read_pages(str(tmp_path / "out"))
    assert_each_url_once(records)
    reachable = web.graph.reachable([(h, 0) for h in range(spec.hosts)])
    assert {r["url"] for r in records if r["outcome"] == "fetched"} == set(reachable)  # 0 lost
    by_ip: dict[str, list[float]] = defaultdict(list)
    for r in requests:
        by_ip[r["ip"]].append(float(r["t"]))
    assert min(b - a for t in by_ip.values() for a, b in itertools.pairwise(sorted(t))) >= delay - 0.005
