"""A host's next run handed to the fetch task that settled its last (core/lease_batches.py, core/shard_work.py):
within the coordinator's allowance, into the batch that earned it, taken back with it when its task dies."""

from __future__ import annotations

from test_shard_work import page_result, url_of_shard, work

from raycrawl.core.lease_batches import NO_CHAIN, ChainAllowance
from raycrawl.core.records import FetchResult, Lease, UrlEntry
from raycrawl.core.shard_work import ShardWork

EVERY = ChainAllowance(None)


def host_with(w: ShardWork, pages: int) -> str:
    """A host of shard 0 with ``pages`` queued and its robots.txt answered (404: allow all)."""
    w.receive([UrlEntry(url_of_shard(0, path=f"/{i}"), 0) for i in range(pages)], w.shard_id)
    (robots,), _ = w.lease(10, 0.0, None, 1)
    w.settle([FetchResult(lease=robots, status=404, responded_at=1000.0, ended_at=1000.0)])
    return robots.url


def answered(leases: list[Lease]) -> list[FetchResult]:
    return [page_result(lease, []) for lease in leases]


def test_a_settled_run_brings_its_hosts_next_run_into_the_same_batch() -> None:
    w, records, _ = work(0)
    host_with(w, 40)
    run, summary = w.lease(1000, 0.3, None, 2, chain=EVERY)
    assert len(run) == 16 and summary.leased == 16  # (a run: --run-length)
    assert w.settle(answered(run[:8])) == []  # (half a run earned, and the host is still out)
    chained = w.settle(answered(run[8:]))
    assert [lease.url for lease in chained] == [url_of_shard(0, path=f"/{i}") for i in range(16, 32)]
    assert w.frontier.leased == 16 and len(records) == 16
    w.release_batches([2], "fetch task failed")  # (its task died: the chained leases go back with the rest)
    assert w.frontier.leased == 0 and w.frontier.queued == 24
    _, summary = w.lease(0, 0.3, None, 3)
    assert summary.stats.events["leases_chained"] == 16


def test_nothing_is_chained_without_the_allowance_or_when_the_task_takes_none() -> None:
    w, _, _ = work(0)
    host_with(w, 60)
    run, _ = w.lease(1000, 0.3, None, 2)  # (NO_CHAIN: draining, quiescing, paused, a budget near its end)
    assert w.settle(answered(run)) == []
    run, _ = w.lease(1000, 0.3, None, 3, chain=EVERY)
    assert w.settle(answered(run), chain=False) == []  # (a task past its time: core/lease_batches.py)
    run, _ = w.lease(1000, 0.3, None, 4, chain=ChainAllowance(5))
    assert len(w.settle(answered(run))) == 5  # (the allowance, whatever the credit)
    w.lease(0, 0.3, None, 5, chain=NO_CHAIN)
    assert w.frontier.leased == 5


def test_the_time_limit_ends_chaining() -> None:
    w, _, clock = work(0)
    host_with(w, 40)
    run, _ = w.lease(1000, 0.3, None, 2, chain=ChainAllowance(None, until=clock.now + 1))
    clock.now += 1
    assert w.settle(answered(run)) == []
