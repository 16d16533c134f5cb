"""When a fetch task sends its results to their shards: several a call, each within what its host allows.

A Ray call costs its two ends ~0.3-0.5 ms of CPU whatever it carries (benchmarks/README.md, issue 51), more than a
page's own work, so results wait for others to their shard. How long one may wait is its host's to say
(``settle_within``); the waiting results go when the first one's time is up, or when SETTLE_BATCH wait, or when
their bodies make SETTLE_BYTES (a page held for its payload claim keeps its body in memory until then).

Pure: the fetch task (actors/fetch_task.py) gives the clock's readings.
"""

from __future__ import annotations

from raycrawl.core.records import FetchResult, Lease

SETTLE_SOONEST = 0.02
SETTLE_LATEST = 0.1
SETTLE_BATCH = 256
SETTLE_BYTES = 16 * 1024 * 1024


def settle_within(lease: Lease) -> float:
    """How long a result may wait before it goes to its shard: what the host's next request waits anyway.

    The shard leases the host again only once it has the answer, and that lease waits for the coordinator's round
    and a task: a host with a delay gets its answer in within a quarter of it (between SETTLE_SOONEST and
    SETTLE_LATEST), so its next slot is not missed; a robots.txt answer at once (the host's pages wait for it). A
    host with no delay at all has no slot to keep -- such a crawl is bound by its CPU, which larger sends save --
    so its answers wait up to SETTLE_LATEST."""
    if lease.kind == "robots":
        return SETTLE_SOONEST
    if lease.gap <= 0:
        return SETTLE_LATEST
    return min(SETTLE_LATEST, max(SETTLE_SOONEST, lease.gap / 4))


class Waiting:
    """The results a fetch task holds for their shards, and whether it is time to send them."""

    def __init__(self) -> None:
        self.by_shard: dict[int, list[FetchResult]] = {}
        self.count = 0
        self.bytes = 0  # their bodies'
        self.due = float("inf")  # the soonest of their settle_within, from when each exchange ended

    def add(self, results: list[FetchResult], now: float) -> None:
        """Results handed over at ``now`` (the wall clock, as their ``ended_at``). Each one's time counts from its
        exchange's end, never from later than ``now``: the fetcher hands results over a few at a time
        (adapters/handoff.py), and that wait is part of the host's, not added to it."""
        for result in results:
            self.by_shard.setdefault(result.lease.shard, []).append(result)
            ended = min(now, result.ended_at) if result.ended_at else now
            self.due = min(self.due, ended + settle_within(result.lease))
            self.bytes += result.size
        self.count += len(results)

    def time_to_send(self, now: float) -> bool:
        return self.count > 0 and (now >= self.due or self.count >= SETTLE_BATCH or self.bytes >= SETTLE_BYTES)

    def take(self) -> dict[int, list[FetchResult]]:
        """The results by shard; nothing waits after."""
        out = self.by_shard
        self.by_shard, self.count, self.bytes, self.due = {}, 0, 0, float("inf")
        return out
