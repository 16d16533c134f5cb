"""Which embedded store should hold a shard's queued URLs on disk (issue 30)? Each candidate, in a process of its
own, takes N queued URLs on H hosts in batches (as a shard's pushes come), then gives them back host by host in
small batches (as leases refill a workbench), and reports what that costs:

    python -m benchmarks.queue_stores [--urls 1000000] [--hosts 1000] [--stores memory rocksdict lmdb]

- resident bytes per queued URL (the process's RSS growth, after the pushes);
- pushes/s and pops/s (a pop takes a host's next few URLs by score and deletes them);
- bytes on disk per URL.

Keys sort as (host, score, sequence), so a host's next URLs are one prefix scan; values are the URL rows. The
in-memory baseline is a dict of per-host heaps, as today's frontier keeps them.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BATCH = 512  # URLs a push carries (a shard's round of new links)
POP = 8  # URLs a pop takes from one host (a workbench refill)
KEY = struct.Struct(">IqQ")  # host id, score (lower first), sequence


def anonymous_rss() -> int:
    """The process's anonymous resident memory (its heap: what a store keeps in memory), not the page cache of
    files it maps (which the kernel may take back at any time)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) * 1024
    return 0


def batches(n: int, hosts: int, seed: int = 1) -> Iterator[list[tuple[int, int, int, bytes]]]:
    """(host, score, sequence, row) in batches of BATCH, made as they are pushed (so they are not resident)."""
    rng = random.Random(seed)
    for start in range(0, n, BATCH):
        batch = []
        for i in range(start, min(n, start + BATCH)):
            host = rng.randrange(hosts)
            url = f"http://h{host}.site{host // 4}.example/section/{i % 97}/page-{i}.html?ref={i % 13}".encode()
            batch.append((host, rng.randrange(16), i, url))
        yield batch


class Memory:
    def __init__(self, path: str) -> None:
        self.heaps: dict[int, list[tuple[int, int, bytes]]] = {}

    def push(self, batch: list[tuple[int, int, int, bytes]]) -> None:
        for host, score, seq, row in batch:
            heapq.heappush(self.heaps.setdefault(host, []), (score, seq, row))

    def pop(self, host: int, n: int) -> list[bytes]:
        heap = self.heaps.get(host, [])
        return [heapq.heappop(heap)[2] for _ in range(min(n, len(heap)))]

    def disk(self) -> int:
        return 0


class Rocks:
    def __init__(self, path: str) -> None:
        from rocksdict import Options, Rdict, WriteBatch

        self._batch_type = WriteBatch
        options = Options(raw_mode=True)
        options.create_if_missing(True)
        self.db = Rdict(path, options)
        self.path = path

    def push(self, batch: list[tuple[int, int, int, bytes]]) -> None:
        wb = self._batch_type(raw_mode=True)
        for host, score, seq, row in batch:
            wb.put(KEY.pack(host, score, seq), row)
        self.db.write(wb)

    def pop(self, host: int, n: int) -> list[bytes]:
        prefix = struct.pack(">I", host)
        it = self.db.iter()
        it.seek(prefix)
        taken: list[tuple[bytes, bytes]] = []
        while it.valid() and len(taken) < n:
            key = it.key()
            if not key.startswith(prefix):
                break
            taken.append((key, it.value()))
            it.next()
        del it
        if taken:
            self.db.delete_range(taken[0][0], taken[-1][0] + b"\x00")
        return [row for _, row in taken]

    def disk(self) -> int:
        self.db.flush()
        return sum(p.stat().st_size for p in Path(self.path).rglob("*") if p.is_file())


class Lmdb:
    def __init__(self, path: str) -> None:
        import lmdb

        self.env = lmdb.open(path, map_size=64 << 30, writemap=True, sync=False, metasync=False)
        self.path = path

    def push(self, batch: list[tuple[int, int, int, bytes]]) -> None:
        with self.env.begin(write=True) as txn:
            for host, score, seq, row in batch:
                txn.put(KEY.pack(host, score, seq), row)

    def pop(self, host: int, n: int) -> list[bytes]:
        prefix = struct.pack(">I", host)
        rows = []
        with self.env.begin(write=True) as txn:
            cursor = txn.cursor()
            if not cursor.set_range(prefix):
                return []
            while len(rows) < n and cursor.key().startswith(prefix):
                rows.append(cursor.value())
                if not cursor.delete():
                    break
        return rows

    def disk(self) -> int:
        return sum(p.stat().st_blocks * 512 for p in Path(self.path).rglob("*") if p.is_file())


STORES: dict[str, Any] = {"memory": Memory, "rocksdict": Rocks, "lmdb": Lmdb}


def measure(store: str, n: int, hosts: int) -> dict[str, float]:
    directory = tempfile.mkdtemp(prefix=f"qs-{store}-")
    try:
        next(batches(BATCH, hosts))  # (the generator's own imports and first allocations, before the baseline)
        before = anonymous_rss()
        db = STORES[store](os.path.join(directory, "db"))
        started = time.perf_counter()
        for batch in batches(n, hosts):
            db.push(batch)
        push_s = time.perf_counter() - started
        resident = anonymous_rss() - before
        disk = db.disk()
        started, popped = time.perf_counter(), 0
        while popped < n // 2:  # (half: a crawl keeps a deep queue while it pops)
            for host in range(hosts):
                popped += len(db.pop(host, POP))
        pop_s = time.perf_counter() - started
        return {
            "resident_bytes_per_url": round(resident / n, 1),
            "disk_bytes_per_url": round(disk / n, 1),
            "pushes_per_s": round(n / push_s),
            "pops_per_s": round(popped / pop_s),
        }
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--stores", nargs="+", default=list(STORES))
    parser.add_argument("--one", help=argparse.SUPPRESS)  # (run in a child: each store in a fresh process)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.urls, args.hosts)))
        return
    for store in args.stores:
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.queue_stores", "--one", store, "--urls", str(args.urls),
             "--hosts", str(args.hosts)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        result = done.stdout.strip().splitlines()[-1] if done.returncode == 0 else done.stderr.strip()[-300:]
        print(f"{store:10} {result}", flush=True)


if __name__ == "__main__":
    main()
