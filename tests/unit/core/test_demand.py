"""Fetch demand (core/demand.py) and what the coordinator's loop does with it (core/crawl_loop.py), without Ray:
hosts due make demand, hosts waiting on their delays do not; the launch ceiling is what the cluster's CPUs hold;
the autoscaler's request follows demand up at once and down only after it has stayed lower."""

from __future__ import annotations

import pytest

from raycrawl.core.crawl_loop import CrawlLoop, LoopSettings, ShardSummary
from raycrawl.core.demand import (
    BACKLOG_CAP,
    CpuRequest,
    RecentPeak,
    fetch_demand,
    render_workers_wanted,
    task_capacity,
    workers_to_warm,
)
from raycrawl.core.frontier import FrontierShard
from raycrawl.core.frontier_settings import FrontierSettings
from raycrawl.core.politeness import DelayPolicy
from raycrawl.core.records import Ack, UrlEntry


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def shard_with(hosts: int, delay: float, clock: FakeClock, concurrency: int = 1) -> FrontierShard:
    """A shard of ``hosts`` hosts, 5 URLs queued each, robots.txt answered for all of them at ``clock.now``."""
    settings = FrontierSettings(policy=DelayPolicy(delay=delay, delay_factor=0.0), per_host_concurrency=concurrency)
    shard = FrontierShard(0, settings, clock=clock)
    shard.push([UrlEntry(f"http://h{h}.test/{i}", 1) for h in range(hosts) for i in range(5)])
    robots = shard.lease(hosts)
    shard.ack([Ack(lease.lease_id, 404, clock.now, 0.01, False) for lease in robots])
    return shard


def demand_of(shard: FrontierShard, quota: int, batch: int = 32, max_tasks: int = 64) -> tuple[int, int]:
    """(URLs leased by a round with ``quota``, the demand the loop computes from that shard's answer)."""
    leases = shard.lease(quota, horizon=0.3)
    backlog = shard.due_backlog(0.3, BACKLOG_CAP)
    return len(leases), fetch_demand(shard.leased, backlog, shard.queued, batch, max_tasks)


@pytest.mark.parametrize("hosts", [1, 10, 100, 1000, 5000])
def test_ready_hosts_make_demand_up_to_the_ceiling(hosts: int) -> None:
    clock = FakeClock()
    shard = shard_with(hosts, delay=1.0, clock=clock)
    clock.now += 1.0  # every host due
    leased, demand = demand_of(shard, quota=4 * 32)  # (a round under a ceiling of 4 tasks)
    assert leased == min(hosts, 4 * 32)
    assert demand == min(64, -(-hosts // 32))  # every due host in full batches, capped by the ceiling
    assert demand <= hosts  # never above per-host concurrency (1) x ready hosts


def test_hosts_waiting_on_their_delays_need_only_their_next_slots() -> None:
    clock = FakeClock()
    shard = shard_with(2000, delay=30.0, clock=clock)
    clock.now += 30.0
    leases = shard.lease(10_000, horizon=0.3)  # every host fetched once ...
    clock.now += 0.5
    shard.ack([Ack(lease.lease_id, 200, clock.now, 0.5, False) for lease in leases])
    leased, demand = demand_of(shard, quota=10_000)  # ... and now every one waits 30 s
    assert leased == 0 and shard.due_backlog(0.3, BACKLOG_CAP) == 0
    assert demand == 1  # a task for the next slot that comes due, not 2000 / 32
    clock.now += 30.0  # all due again
    assert demand_of(shard, quota=64)[1] == 63  # (2000 URLs in batches of 32)


def test_per_host_concurrency_bounds_what_a_host_adds() -> None:
    clock = FakeClock()
    shard = shard_with(3, delay=0.0, clock=clock, concurrency=2)
    leased, demand = demand_of(shard, quota=100, batch=1)
    assert leased == 6  # two leases per host: the concurrency, not the five queued
    assert demand <= 2 * 3


def test_an_idle_crawl_wants_no_task_and_a_queued_one_at_least_one() -> None:
    assert fetch_demand(0, 0, 0, 32, 64) == 0
    assert fetch_demand(0, 0, 5, 32, 64) == 1  # (a host comes due)
    assert fetch_demand(33, 0, 0, 32, 64) == 2
    assert fetch_demand(10_000, 10_000, 0, 32, 64) == 64


def test_the_backlog_count_stops_at_its_cap_and_skips_stale_entries() -> None:
    clock = FakeClock()
    shard = shard_with(300, delay=1.0, clock=clock)
    clock.now += 1.0
    assert shard.due_backlog(0.0, 100) == 100
    shard.lease(250)
    assert shard.due_backlog(0.0, 1000) == 50  # (the 250 leased hosts left the heap)


def test_the_cpus_the_cluster_holds_cap_launches_and_leases() -> None:
    assert task_capacity(2.0, 0.5, 64) == 4 and task_capacity(0.0, 0.5, 64) == 1 and task_capacity(100, 1, 8) == 8
    loop = CrawlLoop(LoopSettings(max_tasks_in_flight=64, fetch_batch_size=10), 8, clock=FakeClock())
    loop.task_capacity = 3
    assert loop.task_ceiling == 3 and sum(loop.plan().quotas) == 30
    plan = loop.plan()
    due = [ShardSummary(leases=10, earliest=0.0, sent=[0] * 8, received=[0] * 8, leased=10) for _ in range(8)]
    loop.answered(plan, due, [f"ref-{i}" for i in range(8)])
    assert len(loop.to_launch()) == 3  # not 8 (a task per batch), nor 64


def test_the_request_follows_demand_up_at_once_and_down_after_it_held() -> None:
    clock = FakeClock()
    request = CpuRequest(0.5, every=5.0, hold=30.0, clock=clock)
    first = request.update(4)
    assert first is not None and first.as_list() == [{"CPU": 0.5}] * 4
    assert request.update(4) is None  # unchanged: nothing sent
    clock.now += 1
    assert request.update(10) is None  # up again within 5 s: waits
    clock.now += 5
    up = request.update(10)
    assert up is not None and up.count == 10
    clock.now += 10
    assert request.update(1) is None  # down: not before it has stayed down for 30 s
    clock.now += 25
    down = request.update(1)
    assert down is not None and down.count == 1 and request.requested == 1
    gone = request.withdraw()
    assert gone is not None and gone.as_list() == [] and request.requested == 0
    assert request.withdraw() is None


def test_the_render_pool_wants_a_browser_per_render_pages_in_hand_within_its_bounds() -> None:
    assert render_workers_wanted(0, 2, fewest=1, most=4) == 1  # an idle pool keeps its fewest
    assert render_workers_wanted(3, 2, fewest=1, most=4) == 2  # 3 pages, 2 at once each
    assert render_workers_wanted(40, 2, fewest=1, most=4) == 4  # never more than the most
    assert render_workers_wanted(5, 2, fewest=2, most=2) == 2  # a fixed pool (render_workers_max 0)


def test_a_recent_peak_follows_up_at_once_and_down_only_after_the_hold() -> None:
    clock = FakeClock()
    peak = RecentPeak(30.0, clock=clock)
    assert peak.update(1) == 1
    clock.now += 1
    assert peak.update(4) == 4  # up at once
    clock.now += 20
    assert peak.update(2) == 4  # down: held
    clock.now += 10.5
    assert peak.update(2) == 2  # the 4 is over 30 s old
    peak.clear()
    assert peak.update(0) == 0


def test_a_crawl_starts_one_fetch_worker_per_cpu_however_many_tasks_they_hold() -> None:
    # Two tasks a CPU (the default 0.5): the second of each starts only when demand asks for it.
    assert workers_to_warm(2.0, 0.5, 64) == 2 and task_capacity(2.0, 0.5, 64) == 4
    assert workers_to_warm(8.0, 1.0, 64) == 8 and workers_to_warm(8.0, 2.0, 64) == 4  # (never more than tasks)
    assert workers_to_warm(16.0, 0.5, 3) == 3 and workers_to_warm(0.0, 0.5, 64) == 1
