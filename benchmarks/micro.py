"""Micro-benchmarks of the hot paths, in process (and the dedup actor through Ray, batched).

    python -m benchmarks.micro [--ray]

Prints operations per second for: FrontierShard push + lease, exact and Bloom seen-set checks,
canonicalisation, link extraction from a page of 300 links, and memory per URL of the exact seen-set at 1M.
Each figure is the best of three runs (the machine is shared; the best is the least disturbed).
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
import tracemalloc
from collections.abc import Callable

from benchmarks.local_ray import start_local_ray
from raycrawl.adapters.lmdb_queue import LmdbQueueStore
from raycrawl.core.frontier import FrontierShard
from raycrawl.core.frontier_settings import FrontierSettings
from raycrawl.core.links import extract_links
from raycrawl.core.politeness import DelayPolicy
from raycrawl.core.records import Ack, UrlEntry
from raycrawl.core.seen import BloomSeenSet, ExactSeenSet
from raycrawl.core.urls import canonicalize, fingerprint


def best_rate(work: Callable[[], int], runs: int = 3) -> float:
    rates = []
    for _ in range(runs):
        started = time.perf_counter()
        n = work()
        rates.append(n / (time.perf_counter() - started))
    return max(rates)


def frontier_rates(n: int = 200_000, hosts: int = 500, stored: bool = False) -> tuple[float, float]:
    """URLs per second through one shard: (push + lease, push + lease + ack).

    The full cycle of a URL through a shard is push, lease, ack; the issue's target names push + lease, so
    both are timed (the acks are made outside either clock; the URLs before it, as the coordinator makes them).
    ``stored``: the shard keeps a workbench per host in memory and the rest in LMDB, in a temporary directory.
    """
    with tempfile.TemporaryDirectory(prefix="raycrawl-micro-") as directory:
        store = LmdbQueueStore(directory) if stored else None
        try:
            return _frontier_rates(n, hosts, store)
        finally:
            if store is not None:
                store.close()


def _frontier_rates(n: int, hosts: int, store: LmdbQueueStore | None) -> tuple[float, float]:
    now = [1000.0]
    settings = FrontierSettings(policy=DelayPolicy(delay=0.0, delay_factor=0.0))
    shard = FrontierShard(0, settings, clock=lambda: now[0], store=store)
    entries = [UrlEntry(f"http://h{i % hosts}.test/p/{i}", 1) for i in range(n)]
    for h in range(hosts):  # robots.txt answered for every host first, as in a running crawl
        shard.push([entries[h]])
    for lease in shard.lease(hosts):
        shard.ack([Ack(lease.lease_id, 404, now[0], 0.0, False)])
    started = time.perf_counter()
    shard.push(entries[hosts:])
    push_lease = time.perf_counter() - started
    acking = 0.0
    leased = 0
    while leased < n - hosts:
        now[0] += 0.001
        started = time.perf_counter()
        batch = shard.lease(512)
        push_lease += time.perf_counter() - started
        acks = [Ack(lease.lease_id, 200, now[0], 0.0, False) for lease in batch]
        started = time.perf_counter()
        shard.ack(acks)
        acking += time.perf_counter() - started
        leased += len(batch)
    return leased / push_lease, leased / (push_lease + acking)


def seen_checks(seen_factory: Callable[[], ExactSeenSet | BloomSeenSet], n: int = 500_000) -> int:
    seen = seen_factory()
    rng = random.Random(1)
    fps = [rng.getrandbits(64) for _ in range(n)]
    for i in range(0, n, 5000):
        seen.add_new(fps[i : i + 5000])
    return n


def canonicalisation(n: int = 100_000) -> int:
    urls = [f"HTTP://Example.COM:80/a/./b/../p{i}?b=2&a=1&utm_source=x#frag" for i in range(n)]
    for u in urls:
        canonicalize(u, ("utm_*",))
    return n


def link_extraction(pages: int = 200, links: int = 300) -> int:
    html = "<html><body>" + "".join(f'<a href="/p/{i}?utm_source=z">x</a>' for i in range(links)) + "</body></html>"
    for _ in range(pages):
        extract_links(html, "http://a.test/", ("utm_*",))
    return pages * links


def fingerprints(n: int = 200_000) -> int:
    for i in range(n):
        fingerprint(f"http://a.test/{i}")
    return n


def exact_bytes_per_url(n: int = 1_000_000) -> float:
    tracemalloc.start()
    seen = ExactSeenSet()
    rng = random.Random(2)
    for _ in range(n // 10_000):
        seen.add_new([rng.getrandbits(64) for _ in range(10_000)])
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return current / n


def dedup_actor_checks(n: int = 500_000, batch: int = 5000) -> int:
    import ray

    from raycrawl.actors.dedup import DedupActor, pack_fingerprints

    actor = DedupActor.remote("exact", 1000, 0.01)  # type: ignore[attr-defined]
    rng = random.Random(3)
    packs = [pack_fingerprints([rng.getrandbits(64) for _ in range(batch)]) for _ in range(n // batch)]
    ray.get(actor.stats.remote())  # started
    started = time.perf_counter()
    refs = [actor.add_new.remote(p) for p in packs]  # pipelined: the actor takes them in order
    masks = ray.get(refs)
    elapsed = time.perf_counter() - started
    assert sum(len(m) for m in masks) == n  # one mask byte per fingerprint
    return int(n / elapsed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ray", action="store_true", help="also measure the dedup actor through Ray")
    args = parser.parse_args()
    frontier, stored = [], []
    for _ in range(5):  # (alternating: both see the same machine)
        frontier.append(frontier_rates())
        stored.append(frontier_rates(stored=True))
    rows = [
        ("FrontierShard push+lease", max(r[0] for r in frontier), "URLs/s", ">= 200,000"),
        ("FrontierShard push+lease+ack", max(r[1] for r in frontier), "URLs/s", ""),
        ("... with an LMDB store: p+l", max(r[0] for r in stored), "URLs/s", ">= 80% of in memory"),
        ("... with an LMDB store: p+l+a", max(r[1] for r in stored), "URLs/s", ""),
        ("exact seen-set checks", best_rate(lambda: seen_checks(ExactSeenSet)), "/s", ">= 500,000"),
        ("bloom seen-set checks", best_rate(lambda: seen_checks(lambda: BloomSeenSet(2_000_000, 0.001))), "/s", ""),
        ("canonicalize", best_rate(canonicalisation), "URLs/s", ""),
        ("extract_links (300/page)", best_rate(link_extraction), "links/s", ""),
        ("fingerprint", best_rate(fingerprints), "/s", ""),
    ]
    for name, value, unit, target in rows:
        print(f"{name:30}{value:>12,.0f} {unit:8}{'target ' + target if target else ''}")
    print(f"{'exact seen-set at 1M URLs':30}{exact_bytes_per_url():>12.1f} B/URL   target <= 40")
    if args.ray:
        import ray

        start_local_ray()
        rates = [dedup_actor_checks() for _ in range(3)]
        print(f"{'dedup actor checks (batched)':30}{max(rates):>12,.0f} /s      target >= 100,000")
        ray.shutdown()


if __name__ == "__main__":
    main()
