"""How close to the ideal polite rate raycrawl gets, and whether any gap falls under the delay.

    python -m benchmarks.politeness [--hosts 40] [--delay 0.25] [--pages 60]

The ideal rate is hosts / delay (every host hit exactly once per delay). Rates are computed from the test
web's own request log, per host over its span of page requests, so start-up (Ray workers, robots.txt) and
the tail (hosts finishing at different times) do not count against the crawler.

The peer, run after raycrawl on a test web of its own, is the floor client (benchmarks/floor_client.py): how
close answer-paced politeness can get on this machine at all.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from typing import Any

import ray

from benchmarks.floor_client import crawl_floor
from benchmarks.local_ray import start_local_ray
from raycrawl.api import Crawl
from raycrawl.config import CrawlConfig
from raycrawl.testing import TestWeb, WebSpec
from raycrawl.testing.process import gaps_by_host


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=40)
    parser.add_argument("--delay", type=float, default=0.25)
    parser.add_argument("--pages", type=int, default=60, help="pages per host")
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--batch", type=int, default=CrawlConfig().fetch_batch_size, help="--fetch-batch-size")
    parser.add_argument("--tasks", type=int, default=CrawlConfig().max_tasks_in_flight, help="--max-tasks-in-flight")
    args = parser.parse_args()

    start_local_ray(args.cpus)
    spec = WebSpec(hosts=args.hosts, pages_per_host=args.pages, page_bytes=500, private_links=False)
    with TestWeb(spec) as web, tempfile.TemporaryDirectory() as out:
        cfg = CrawlConfig(
            seeds=tuple(web.graph.seeds()),
            out=out,
            delay=args.delay,
            allow_network=("127.0.0.0/8",),
            fetch_batch_size=args.batch,
            max_tasks_in_flight=args.tasks,
            quiet=True,
        )
        started = time.time()
        summary = Crawl(cfg).start().wait()
        wall = time.time() - started
        requests = [r for r in web.requests() if r["path"] != "/robots.txt"]
    ray.shutdown()
    with TestWeb(spec) as web:  # the peer, on a test web of its own
        crawl_floor(web, args.hosts, args.pages, args.delay)
        floor_requests = [r for r in web.requests() if r["path"] != "/robots.txt"]

    ideal = args.hosts / args.delay
    print(f"scenario: {args.hosts} hosts x {args.pages} pages, delay {args.delay} s, ideal {ideal:.1f} pages/s")
    print(f"pages fetched            {summary['outcomes'].get('fetched', 0)}")
    print(f"wall time                {wall:.1f} s (crawl {summary['elapsed_s']} s)")
    print(f"URLs per fetch task      {summary['urls_per_task']}")
    raycrawl_share = _report("raycrawl", requests, args.delay, ideal)
    floor_share = _report("floor client", floor_requests, args.delay, ideal)
    print(f"raycrawl / floor client  {raycrawl_share / floor_share:.3f} (per-host rate)")


def _report(name: str, requests: list[dict[str, Any]], delay: float, ideal: float) -> float:
    """Print a crawler's figures from the server's log; return its per-host rate as a share of the ideal."""
    gaps = gaps_by_host(requests)
    per_host_share = [delay * len(g) / sum(g) for g in gaps.values() if g]
    under = sum(1 for g in gaps.values() for x in g if x < delay)
    times = sorted(r["t"] for r in requests)
    overall = (len(times) - 1) / (times[-1] - times[0])
    reused = _reused_connections(requests)
    print(f"{name}:")
    print(f"  rate over request span {overall:.1f} pages/s = {overall / ideal:.1%} of ideal")
    print(f"  per-host rate (mean)   {statistics.mean(per_host_share):.1%} of ideal (min {min(per_host_share):.1%})")
    print(f"  gaps under the delay   {under} of {sum(len(g) for g in gaps.values())}")
    print(f"  smallest gap           {min(min(g) for g in gaps.values() if g):.4f} s")
    print(f"  kept-alive connections {reused:.0%} of a host's requests came on its previous request's connection")
    return statistics.mean(per_host_share)


def _reused_connections(requests: list[dict[str, Any]]) -> float:
    last_port: dict[str, int] = {}
    reused = 0
    for r in sorted(requests, key=lambda r: r["t"]):
        reused += last_port.get(r["host"]) == r["client_port"]
        last_port[r["host"]] = r["client_port"]
    return reused / max(1, len(requests))


if __name__ == "__main__":
    main()
