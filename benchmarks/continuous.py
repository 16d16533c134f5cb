"""Continuous crawling (issue 33): what a revisit schedule buys, side by side in one run on the same test web.

The ``changing`` test web (raycrawl.testing.changing), ``--hosts`` hosts of 4 pages that change every ``--period``
seconds and 4 that never do (plus ``/`` and 2 pages that never go in this run), crawled for ``--seconds`` each by:

- the adaptive schedule (``--revisit-after 10s --revisit-min 2s --revisit-max 120s``),
- a fixed schedule as short as the adaptive minimum's neighbourhood (``fixed 5s``): fresh, and costly,
- a fixed schedule as long as the period (``fixed PERIOD``),

each on a web of its own (started for the run: versions count from its first page request). From the server's log:
requests and body bytes per group of pages, and for the changing pages the **staleness** -- the share of the time,
from each page's first capture to the end, that the crawl's latest capture of it was an older version than the one
being served -- and the versions captured out of those served. Politeness is checked (the smallest gap per host).

    python -m benchmarks.continuous [--hosts 10] [--period 20] [--seconds 150]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import tempfile
from collections import defaultdict
from typing import Any

from benchmarks.local_ray import start_local_ray
from raycrawl.testing import TestWeb, WebSpec

DELAY = 0.5


def staleness(fetches: list[float], started: float, period: float, end: float) -> tuple[float, int, int]:
    """(share of time stale, versions captured, versions served) of a page changing every ``period`` s from
    ``started``, fetched at ``fetches`` (sorted), over [first fetch, end]."""
    stale = 0.0
    for i, t in enumerate(fetches):
        until = fetches[i + 1] if i + 1 < len(fetches) else end
        next_change = started + (math.floor((t - started) / period) + 1) * period
        stale += max(0.0, until - next_change)
    versions = {math.floor((t - started) / period) for t in fetches}
    served = math.floor((end - started) / period) - math.floor((fetches[0] - started) / period) + 1
    return stale / max(end - fetches[0], 1e-9), len(versions), served


def run_one(name: str, hosts: int, period: float, seconds: float, **schedule: Any) -> dict[str, Any]:
    import ray

    from raycrawl.api import Crawl
    from raycrawl.config import CrawlConfig

    spec = WebSpec(hosts=hosts, profiles=("changing",) * hosts, change_period=period, remove_after=1e9)
    with TestWeb(spec) as web, tempfile.TemporaryDirectory(prefix="raycrawl-continuous-") as out:
        start_local_ray()
        try:
            cfg = CrawlConfig(seeds=tuple(web.graph.seeds()), out=out, delay=DELAY, revisit=True, time_limit=seconds,
                              allow_network=("127.0.0.0/8",), quiet=True, **schedule)  # fmt: skip
            summary = Crawl(cfg).start().wait(timeout=seconds + 600)
        finally:
            ray.shutdown()
        requests = [r for r in web.requests() if r["path"] != "/robots.txt"]
        started = min(r["t"] for r in requests)  # (the changing pages' clock starts at the first page request)
    end = max(r["t"] for r in requests)
    by_page: dict[tuple[str, str], list[float]] = defaultdict(list)
    by_ip: dict[str, list[float]] = defaultdict(list)
    groups: dict[str, dict[str, float]] = defaultdict(lambda: {"requests": 0, "bytes": 0})
    for r in requests:
        by_page[(r["host"], r["path"])].append(r["t"])
        by_ip[r["ip"]].append(r["t"])
        group = r["path"].split("/")[1] or "index"
        groups[group]["requests"] += 1
        groups[group]["bytes"] += r.get("bytes", 0)
    fast = [staleness(sorted(t), started, period, end) for (_, path), t in by_page.items() if "/fast/" in path]
    gaps = [b - a for times in by_ip.values() for a, b in zip(sorted(times), sorted(times)[1:], strict=False)]
    return {
        "schedule": name,
        "requests": len(requests),
        "body_mb": round(sum(r.get("bytes", 0) for r in requests) / 1e6, 3),
        "groups": {g: dict(v) for g, v in sorted(groups.items())},
        "fast_stale_pct": round(100 * statistics.mean(s for s, _, _ in fast), 1),
        "fast_versions_captured": f"{sum(c for _, c, _ in fast)}/{sum(v for _, _, v in fast)}",
        "smallest_gap_s": round(min(gaps), 3),
        "freshness": summary.get("freshness"),
        "outcomes": summary.get("outcomes"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=10)
    parser.add_argument("--period", type=float, default=20.0)
    parser.add_argument("--seconds", type=float, default=150.0)
    args = parser.parse_args()
    schedules = {
        "adaptive 10s (2s..120s)": {"revisit_after": 10.0, "revisit_min": 2.0, "revisit_max": 120.0},
        "fixed 5s": {"revisit_schedule": "fixed", "revisit_after": 5.0, "revisit_min": 1.0},
        f"fixed {args.period:g}s": {"revisit_schedule": "fixed", "revisit_after": args.period, "revisit_min": 1.0},
    }
    rows = [run_one(name, args.hosts, args.period, args.seconds, **s) for name, s in schedules.items()]
    print(json.dumps(rows, indent=1))
    print(f"\n{'schedule':26} {'requests':>8} {'body MB':>8} {'fast':>6} {'never':>6} {'fast stale':>10} "
          f"{'versions':>9} {'min gap':>8}")  # fmt: skip
    for row in rows:
        g = row["groups"]
        print(f"{row['schedule']:26} {row['requests']:>8} {row['body_mb']:>8} {g['fast']['requests']:>6} "
              f"{g['never']['requests']:>6} {row['fast_stale_pct']:>9}% {row['fast_versions_captured']:>9} "
              f"{row['smallest_gap_s']:>8}")  # fmt: skip


if __name__ == "__main__":
    main()
