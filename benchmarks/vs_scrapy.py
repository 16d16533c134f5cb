"""raycrawl side by side with Scrapy on the test web, in one run; every figure is read from the server's log.

    pip install -e '.[bench]'
    python -m benchmarks.vs_scrapy --scenario polite        # (a) 40 hosts, 0.25 s, light pages
    python -m benchmarks.vs_scrapy --scenario unthrottled   # (b) 40 hosts, no delay, 8 per host
    python -m benchmarks.vs_scrapy --scenario heavy         # (c) 40 hosts, 0.25 s, ~300 KB pages, 300 links each

Scrapy runs first (its own process), then raycrawl (a local Ray with 2 CPUs), against one test web in its own
process. Requests are told apart by User-Agent. For each crawler: pages/s over its span of page requests,
share of the ideal rate (hosts / delay, polite scenarios), gaps under the delay, and pages fetched more than
once (same path, any query); then the ratio raycrawl / Scrapy.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from benchmarks.cpu_use import CpuSampler, mark_when_crawling
from benchmarks.local_ray import start_local_ray
from raycrawl.testing import TestWeb, WebSpec
from raycrawl.testing.process import gaps_by_host

RAYCRAWL_UA = "raycrawl-bench/1.0"


@dataclass(frozen=True)
class Scenario:
    spec: WebSpec
    delay: float
    concurrency: int


SCENARIOS = {
    "polite": Scenario(WebSpec(hosts=40, pages_per_host=60, page_bytes=500, private_links=False), 0.25, 1),
    "unthrottled": Scenario(WebSpec(hosts=40, pages_per_host=150, page_bytes=500, private_links=False), 0.0, 8),
    "heavy": Scenario(
        WebSpec(hosts=40, pages_per_host=30, page_bytes=300_000, links_per_page=300, private_links=False), 0.25, 1
    ),
}


def measure(requests: list[dict[str, Any]], ua: str, sc: Scenario, wall: float) -> dict[str, float]:
    mine = [r for r in requests if r["ua"].startswith(ua) and r["path"] != "/robots.txt"]
    times = sorted(r["t"] for r in mine)
    span = times[-1] - times[0] if len(times) > 1 else float("nan")
    rate = (len(times) - 1) / span if len(times) > 1 else 0.0
    gaps = gaps_by_host(mine)
    under = sum(1 for g in gaps.values() for x in g if x < sc.delay) if sc.delay else 0
    pages = Counter((r["host"], r["path"].split("?", 1)[0]) for r in mine)
    return {
        "pages": len(mine),
        "distinct pages": len(pages),
        "pages fetched twice+": sum(1 for n in pages.values() if n > 1),
        "pages/s": rate,
        "share of ideal": rate / (sc.spec.hosts / sc.delay) if sc.delay else float("nan"),
        "gaps under delay": under,
        "gaps": sum(len(g) for g in gaps.values()),
        "wall s": wall,
    }


def run_scrapy(seeds: list[str], sc: Scenario) -> float:
    started = time.time()
    cmd = [sys.executable, "-m", "benchmarks.scrapy_spider", "--delay", str(sc.delay)]
    subprocess.run([*cmd, "--concurrency", str(sc.concurrency), *seeds], check=True, timeout=1800)
    return time.time() - started


def run_raycrawl(seeds: list[str], sc: Scenario, web_pid: int | None, **settings: Any) -> tuple[float, str]:
    import ray

    from raycrawl.api import Crawl
    from raycrawl.config import CrawlConfig

    start_local_ray()
    try:
        with tempfile.TemporaryDirectory() as out:
            cfg = CrawlConfig(
                seeds=tuple(seeds), out=out, delay=sc.delay, per_host_concurrency=sc.concurrency,
                delay_factor=0.0 if sc.delay == 0 else 1.0,  # Scrapy without AutoThrottle has no latency delay
                user_agent=RAYCRAWL_UA, allow_network=("127.0.0.0/8",), quiet=True, **settings,
            )  # fmt: skip
            started = time.time()
            with CpuSampler(exclude={web_pid} if web_pid else set()) as cpu:
                crawl = Crawl(cfg).start()
                marked_at = mark_when_crawling(crawl, cpu)
                summary = crawl.wait()
            pages = int(summary["outcomes"].get("fetched", 0))
            return time.time() - started, cpu.report(pages - marked_at, pages)
    finally:
        ray.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), default="polite")
    parser.add_argument("--no-revisit-duplicates", action="store_true", help="raycrawl stores every payload whole")
    args = parser.parse_args()
    sc = SCENARIOS[args.scenario]
    with TestWeb(sc.spec) as web:
        seeds = web.graph.seeds()
        scrapy_wall = run_scrapy(seeds, sc)
        extra = {"revisit_duplicates": False} if args.no_revisit_duplicates else {}
        raycrawl_wall, cpu_report = run_raycrawl(seeds, sc, web.pid, **extra)
        requests = web.requests()
    from benchmarks.scrapy_spider import USER_AGENT

    peer = measure(requests, USER_AGENT, sc, scrapy_wall)
    ours = measure(requests, RAYCRAWL_UA, sc, raycrawl_wall)
    ideal = f", ideal {sc.spec.hosts / sc.delay:.0f} pages/s" if sc.delay else ""
    print(f"scenario {args.scenario}: {sc.spec.hosts} hosts, delay {sc.delay} s, {sc.concurrency} per host{ideal}")
    print(f"{'':24}{'Scrapy':>12}{'raycrawl':>12}")
    for key in peer:
        print(f"{key:24}{peer[key]:12.3f}{ours[key]:12.3f}" if isinstance(peer[key], float)
              else f"{key:24}{peer[key]:12}{ours[key]:12}")  # fmt: skip
    print(f"ratio raycrawl/Scrapy pages/s: {ours['pages/s'] / peer['pages/s']:.2f}")
    print(f"raycrawl's {cpu_report}")


if __name__ == "__main__":
    main()
