"""A fetch worker's own work, in process (no Ray): CPU per page of ``Fetcher.fetch_stream`` against the bare loop's,
on the same light test web.

    python -m benchmarks.fetch_worker [--hosts 40] [--pages 500] [--rounds 3]

The fetcher gets each host's pages as runs of leases (as shards lease them: each names the one before, gap 0) in
batches of 128 (the default fetch batch), with its WARC held and written as a fetch task writes it (``hold_pages``,
no partition: every page written whole). What it spends beyond the bare loop (``benchmarks/bare_loop.py``: fetch and
extract links, nothing else) is the crawl's own per-page work in a fetch worker -- records, WARC, canonical links,
the hand-over between the fetch loop's thread and the caller's -- without the Ray calls a task adds around it.
Rounds alternate; each figure is the process's own CPU (``resource.getrusage``) over its pages.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time

from raycrawl.adapters.fetcher import Fetcher
from raycrawl.core.fetch_settings import FetchSettings
from raycrawl.core.records import Lease, UrlEntry
from raycrawl.testing import TestWeb, WebSpec

BATCH = 128


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def leases_of(web: TestWeb, pages: int) -> list[list[Lease]]:
    """Each host's pages as one run of leases (every lease after the one before), cut into batches of BATCH."""
    now = time.time()
    leases = []
    lease_id = 0
    for seed in web.graph.seeds():
        root = seed.rstrip("/")
        before = 0
        for page in range(pages):
            lease_id += 1
            url = f"{root}/p/{page}" if page else f"{root}/"
            leases.append(Lease(lease_id, 0, "page", now, now + 3600, UrlEntry(url, 1), after=before))
            before = lease_id
    # (interleaved by host, as a shard's batch holds many hosts' runs)
    leases.sort(key=lambda lease: (lease.lease_id - 1) % pages)
    return [leases[i : i + BATCH] for i in range(0, len(leases), BATCH)]


def fetcher_run(web: TestWeb, pages: int) -> tuple[int, float]:
    with tempfile.TemporaryDirectory() as buffer:
        settings = FetchSettings(allow_network=("127.0.0.0/8",), warc_buffer=buffer, user_agent="fetch-worker/1")
        fetcher = Fetcher(settings)
        try:
            batches = leases_of(web, pages)
            started = cpu_seconds()
            fetched = 0
            for batch in batches:
                for results in fetcher.fetch_stream(batch, tick=0.02, hold_pages=True):
                    claims = fetcher.held_claims()
                    if claims:
                        fetcher.write_held([None] * len(claims))
                    fetched += sum(1 for r in results if r.status == 200)
            return fetched, cpu_seconds() - started
        finally:
            fetcher.close()


def bare_run(web: TestWeb) -> tuple[int, float]:
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.bare_loop", *web.graph.seeds()], capture_output=True, text=True, check=True
    )
    run = json.loads(out.stdout)
    return run["pages"], run["cpu_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=40)
    parser.add_argument("--pages", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    spec = WebSpec(hosts=args.hosts, pages_per_host=args.pages, page_bytes=500, private_links=False)
    with TestWeb(spec) as web:
        for i in range(args.rounds):
            pages, cpu = fetcher_run(web, args.pages)
            loop_pages, loop_cpu = bare_run(web)
            fetcher_ms, loop_ms = 1000 * cpu / pages, 1000 * loop_cpu / loop_pages
            print(
                f"round {i + 1}: fetcher {pages} pages {fetcher_ms:.3f} ms CPU/page; bare loop {loop_pages} pages "
                f"{loop_ms:.3f} (its interpreter start included); fetcher / loop {fetcher_ms / loop_ms:.2f}x",
                flush=True,
            )


if __name__ == "__main__":
    main()
