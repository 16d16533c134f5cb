"""The machinery's own ceiling: raycrawl's real actors and tasks against the test web answered in process.

    python -m benchmarks.machinery [--shards 1 2 4] [--hosts 40] [--pages 250]

No sockets: each fetch worker answers every request from the test web's page generator
(``raycrawl.testing.synthetic``), and everything else -- robots.txt, decoding, link extraction, WARC, shards,
the seen-set, the coordinator, output and checkpoints -- runs as in a crawl. No delay, 8 requests per host at a
time. For each shard count: pages/s over the crawl (the summary's own clock, worker warm-up excluded) and the CPU
per page of every process by role (``benchmarks/cpu_use.py``), each in a fresh local Ray with 2 CPUs.
"""

from __future__ import annotations

import argparse
import os
import tempfile

from benchmarks.cpu_use import CpuSampler, mark_when_crawling
from benchmarks.local_ray import start_local_ray
from raycrawl.testing import WebSpec
from raycrawl.testing.synthetic import SyntheticWeb


def run(web: SyntheticWeb, shards: int, **settings: object) -> tuple[float, int, str]:
    import ray

    from raycrawl.api import Crawl
    from raycrawl.config import CrawlConfig

    os.environ.update(web.env())  # (Ray's workers inherit the driver's environment)
    start_local_ray()
    try:
        with tempfile.TemporaryDirectory() as out:
            cfg = CrawlConfig(
                seeds=tuple(web.graph.seeds()), out=out, delay=0.0, delay_factor=0.0, per_host_concurrency=8,
                shards=shards, allow_network=("127.0.0.0/8",), quiet=True, **settings,
            )  # fmt: skip
            with CpuSampler() as cpu:
                crawl = Crawl(cfg).start()
                marked_at = mark_when_crawling(crawl, cpu)
                summary = crawl.wait()
    finally:
        ray.shutdown()
        for name in web.env():
            os.environ.pop(name, None)
    pages = int(summary["outcomes"].get("fetched", 0))
    report = cpu.report(pages - marked_at, pages)
    rounds = f"\n  coordinator rounds: {summary.get('rounds')}"
    return float(summary["pages_per_s"]), pages, report + rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shards", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--hosts", type=int, default=40)
    parser.add_argument("--pages", type=int, default=500, help="pages per host")
    parser.add_argument("--tasks", type=int, default=None, help="--max-tasks-in-flight (default: the crawl's)")
    args = parser.parse_args()
    web = SyntheticWeb(WebSpec(hosts=args.hosts, pages_per_host=args.pages, page_bytes=500, private_links=False))
    rates = {}
    for shards in args.shards:
        settings = {"max_tasks_in_flight": args.tasks} if args.tasks else {}
        rate, pages, report = run(web, shards, **settings)
        rates[shards] = rate
        print(f"shards {shards}: {pages} pages, {rate:.1f} pages/s")
        print(report, flush=True)
    print("pages/s by shards: " + ", ".join(f"{n}: {r:.1f}" for n, r in rates.items()))


if __name__ == "__main__":
    main()
