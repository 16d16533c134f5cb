"""A separate Python process that operates a running crawl by its id, as a notebook would (``Crawl.attach``), for
tests/e2e/test_operate.py. Prints one JSON line of what it saw and when.

    python tests/attach_client.py steer CRAWL_ID ADDRESS PAUSED_HOST SLOW_HOST SEED
    python tests/attach_client.py stop CRAWL_ID ADDRESS
"""

from __future__ import annotations

import json
import sys
import time

from raycrawl.api import Crawl
from raycrawl.errors import CrawlNotFound


def attach(crawl_id: str, address: str) -> Crawl:
    deadline = time.monotonic() + 120
    while True:  # (the job's driver may not have started the crawl yet)
        try:
            return Crawl.attach(crawl_id, address)
        except CrawlNotFound:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.25)


def main() -> None:
    mode, crawl_id, address, *rest = sys.argv[1:]
    crawl = attach(crawl_id, address)
    out: dict[str, object] = {"crawls": Crawl.list(address)}
    if mode == "steer":
        paused, slow, seed = rest
        deadline = time.monotonic() + 120
        while crawl.status().get("pages", 0) < 10 and time.monotonic() < deadline:
            time.sleep(0.1)
        out["status"] = crawl.status()
        out["hosts"] = [row["host"] for row in crawl.host_rows()]
        out["paused"] = crawl.pause_host(paused)
        out["paused_at"] = time.time()
        out["delayed"] = crawl.set_delay(slow, 1.0)
        out["delayed_at"] = time.time()
        out["added"] = crawl.add_seeds([seed])
        out["unknown_host"] = crawl.pause_host("nowhere.test:1")
    else:
        crawl.stop("stopped from another process")
        out["summary"] = crawl.wait(timeout=300)
        out["status_after"] = crawl.status()
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main()
