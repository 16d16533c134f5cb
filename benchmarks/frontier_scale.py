"""One frontier shard filled to tens of millions of queued URLs, in process (issue 30): with its queue on disk
(a workbench per host in memory, the rest in LMDB, checkpoints as logs) and, side by side in the same run, the
in-memory frontier at a size it can hold. Reports, at each size:

    python -m benchmarks.frontier_scale [--urls 50000000] [--hosts 20000] [--memory-urls 2000000]

- resident bytes per queued URL beyond the workbench (the growth of the process's anonymous memory -- its own
  heap -- from the point every host's workbench is full; the store's pages are the kernel's page cache, mapped,
  and reported apart);
- push and lease+ack rates;
- a checkpoint's pause (the shard's snapshot: hosts, workbenches, and this cut's log written to storage) and
  bytes, after an interval of crawl-like change (new links pushed, URLs leased and acked);
- bytes on disk per queued URL.

URLs are ~60 characters on ``--hosts`` hosts, pushed in batches of 10,000 (a shard's round of new links).
"""

from __future__ import annotations

import argparse
import gc
import json
import tempfile
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

from raycrawl.adapters.lmdb_queue import LmdbQueueStore
from raycrawl.adapters.queue_segments import BaseWriter, QueueSegments
from raycrawl.adapters.storage import open_storage
from raycrawl.core.frontier import FrontierShard
from raycrawl.core.frontier_settings import FrontierSettings
from raycrawl.core.politeness import DelayPolicy
from raycrawl.core.queue_log import LoggedQueueStore
from raycrawl.core.records import Ack, UrlEntry

PUSH = 10_000
INTERVAL_PUSHES = 300_000  # an interval's new links: 30 s at 10,000 a second
INTERVAL_LEASES = 30_000  # ... and its fetches: 30 s at 1,000 pages a second


def rss() -> tuple[int, int]:
    """(anonymous, file-backed) resident bytes of this process."""
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return int(fields["RssAnon"].split()[0]) * 1024, int(fields["RssFile"].split()[0]) * 1024


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def urls(start: int, n: int, hosts: int) -> Iterator[list[UrlEntry]]:
    batch: list[UrlEntry] = []
    for i in range(start, start + n):
        host = i % hosts
        batch.append(UrlEntry(f"http://host-{host:06d}.example.test/section/{i % 97}/page-{i:010d}.html", 2))
        if len(batch) == PUSH:
            yield batch
            batch = []
    if batch:
        yield batch


class Bench:
    def __init__(self, hosts: int, directory: str | None) -> None:
        self.hosts = hosts
        self.clock = Clock()
        settings = FrontierSettings(policy=DelayPolicy(delay=0.0, delay_factor=0.0), max_queue_per_host=10**9)
        self.lmdb: LmdbQueueStore | None = None
        self.segments: QueueSegments | None = None
        store = None
        if directory is not None:
            self.lmdb = LmdbQueueStore(Path(directory) / "queue")
            store = LoggedQueueStore(self.lmdb)
            out = open_storage(str(Path(directory) / "out"))
            self.segments = QueueSegments(out, 0, store, BaseWriter(self.lmdb.path, out))  # (as the actor does)
        else:
            settings = FrontierSettings(
                policy=settings.policy, max_queue_per_host=10**9, max_queue_total=10**10, workbench=32
            )
        self.shard = FrontierShard(0, settings, clock=self.clock, store=store)
        self.pushed = 0
        # robots.txt answered for every host first, as in a running crawl
        self.push(hosts)
        leases = self.shard.lease(hosts)
        self.shard.ack([Ack(lease.lease_id, 404, self.clock.now, 0.0, False) for lease in leases])

    def push(self, n: int, cut_every: int = 0) -> float:
        """Push ``n`` URLs; ``cut_every``: with a checkpoint after each that many (as a crawl's interval would),
        outside the clock."""
        elapsed, since_cut = 0.0, 0
        for batch in urls(self.pushed, n, self.hosts):
            started = time.perf_counter()
            self.shard.push(batch)
            elapsed += time.perf_counter() - started
            since_cut += len(batch)
            if cut_every and since_cut >= cut_every:
                self.checkpoint()
                since_cut = 0
        self.pushed += n
        return n / elapsed

    def lease_ack(self, n: int) -> float:
        started, done = time.perf_counter(), 0
        while done < n:
            self.clock.now += 0.001
            leases = self.shard.lease(min(512, n - done))
            if not leases:
                break
            self.shard.ack([Ack(lease.lease_id, 200, self.clock.now, 0.0, False) for lease in leases])
            done += len(leases)
        return done / (time.perf_counter() - started)

    def checkpoint(self) -> tuple[float, int]:
        """(seconds, bytes) of a shard's snapshot, as the actor makes it."""
        started = time.perf_counter()
        if self.segments is None:
            blob = zlib.compress(json.dumps(self.shard.snapshot()).encode(), 3)
            return time.perf_counter() - started, len(blob)
        snapshot = self.shard.snapshot(stored_rows=False)
        before = self.segments.refs
        snapshot["queue"] = self.segments.checkpoint()
        blob = zlib.compress(json.dumps(snapshot).encode(), 3)
        elapsed = time.perf_counter() - started
        out = self.segments.storage
        logs = [ref for ref in snapshot["queue"] if ref not in before]
        written = sum(Path(out.path(ref)).stat().st_size for ref in logs)
        self.segments.committed()
        return elapsed, len(blob) + written

    def disk(self) -> int:
        return self.lmdb.disk_bytes() if self.lmdb is not None else 0


def run(kind: str, total: int, hosts: int, marks: list[int], directory: str | None) -> list[dict[str, float]]:
    gc.collect()
    bench = Bench(hosts, directory)
    bench.push(hosts * 40)  # every workbench full (and some stored): the baseline
    bench.checkpoint()
    base_anon, _ = rss()
    base_urls = bench.shard.queued
    previous = (base_anon, base_urls)
    rows = []
    for mark in marks:
        rate = bench.push(mark - bench.pushed, cut_every=2_000_000)
        bench.checkpoint()
        # an interval of change, then a checkpoint of it
        bench.push(INTERVAL_PUSHES)
        base_writing = bench.segments is not None and bench.segments._compaction is not None
        lease_rate = bench.lease_ack(INTERVAL_LEASES)
        pause, written = bench.checkpoint()
        anon, file_backed = rss()  # (after the cut: the log of an interval is held in memory until then)
        queued = bench.shard.queued
        previous_row, previous = previous, (anon, queued)
        rows.append(
            {
                "kind": kind,
                "queued": queued,
                "anon_bytes_per_url": (anon - base_anon) / max(1, queued - base_urls),
                "anon_bytes_per_url_since_last": (anon - previous_row[0]) / max(1, queued - previous_row[1]),
                "page_cache_mb": file_backed / 2**20,
                "push_per_s": rate,
                "lease_ack_per_s": lease_rate,
                "base_being_written": base_writing,  # (by the shard's base writer process, beside it)
                "checkpoint_pause_s": pause,
                "checkpoint_mb": written / 2**20,
                "disk_bytes_per_url": bench.disk() / queued,
            }
        )
        print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in rows[-1].items()}), flush=True)
    if bench.segments is not None:
        bench.segments.close()  # (a base being written)
    if bench.lmdb is not None:
        bench.lmdb.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--urls", type=int, default=50_000_000)
    parser.add_argument("--hosts", type=int, default=20_000)
    parser.add_argument("--memory-urls", type=int, default=2_000_000, help="the in-memory frontier's size, beside")
    parser.add_argument("--dir", default=None, help="where the store and the checkpoint files go (a temp dir)")
    args = parser.parse_args()
    marks = sorted({m for m in (1_000_000, 2_000_000, 10_000_000, 20_000_000, 50_000_000) if m <= args.urls})
    marks = marks if marks and marks[-1] == args.urls else [*marks, args.urls]
    run(
        "in memory",
        args.memory_urls,
        args.hosts,
        [m for m in marks if m <= args.memory_urls] or [args.memory_urls],
        None,
    )
    with tempfile.TemporaryDirectory(prefix="raycrawl-scale-", dir=args.dir) as directory:
        run("on disk", args.urls, args.hosts, marks, directory)


if __name__ == "__main__":
    main()
