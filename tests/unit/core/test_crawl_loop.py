"""The coordinator's decisions without Ray (core/crawl_loop.py): budgets, launching, quiet and over, with a fake
clock -- including the interleavings a real crawl meets: results and links still moving while a checkpoint
waits, paused hosts at the end, a fetch task that dies."""

from __future__ import annotations

import dataclasses

from raycrawl.core.crawl_loop import MIN_SHARE, CrawlLoop, LoopSettings, ShardSummary, StagedBatch
from raycrawl.core.lease_batches import NO_CHAIN, ChainAllowance
from raycrawl.core.round_timing import MAX_GATHER, MAX_GATHER_CHAINED, MAX_IDLE_WAIT, MIN_ROUND
from raycrawl.core.stats import CrawlStats


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(shards: int = 2, **kw: object) -> tuple[CrawlLoop, FakeClock]:
    clock = FakeClock()
    cfg = LoopSettings(**kw)  # type: ignore[arg-type]
    return CrawlLoop(cfg, shards, clock=clock), clock


def summary(shards: int = 2, **kw: object) -> ShardSummary:
    s = ShardSummary(sent=[0] * shards, received=[0] * shards)
    for key, value in kw.items():
        setattr(s, key, value)
    return s


def answer(loop: CrawlLoop, *summaries: ShardSummary) -> None:
    plan = loop.plan()
    loop.answered(plan, list(summaries), [f"leases-{i}" for i in range(len(summaries))])


def test_the_lease_budget_is_the_fetch_capacity_not_leased_yet() -> None:
    loop, _ = make(max_tasks_in_flight=4, fetch_batch_size=32)
    plan = loop.plan()
    assert plan.quotas == [64, 64] and plan.drain is None and not plan.quiescing
    loop.answered(plan, [summary(leased=100), summary(leased=20)], ["a", "b"])
    assert sum(loop.plan().quotas) == 4 * 32 - 120
    loop.paused = "operator"
    assert sum(loop.plan().quotas) == 0


def test_max_pages_bounds_the_budget_and_then_stops_the_crawl() -> None:
    loop, _ = make(max_pages=50, leftovers="keep")
    stats = CrawlStats(started_at=0.0)
    stats.outcomes["fetched"] = 40
    answer(loop, summary(leased=5, stats=stats), summary())
    assert sum(loop.plan().quotas) == 5  # 50 - 40 fetched - 5 out
    stats = CrawlStats(started_at=0.0)
    stats.outcomes["fetched"] = 10
    answer(loop, summary(stats=stats), summary())
    plan = loop.plan()
    assert loop.user_stop == "max-pages reached" and plan.quiescing and sum(plan.quotas) == 0


def test_leftovers_recorded_drain_the_queues() -> None:
    loop, clock = make(time_limit=5.0, leftovers="record")
    clock.now += 6
    plan = loop.plan()
    assert plan.drain == "time limit reached" and sum(plan.quotas) == 0 and loop.user_stop is None


def test_batches_wait_until_full_or_due_then_share_a_task() -> None:
    loop, clock = make(fetch_batch_size=32, max_tasks_in_flight=4)
    loop.staged = [StagedBatch(0, 1, 5, clock.now + 1.0), StagedBatch(1, 2, 5, clock.now + 1.02)]
    assert loop.to_launch() == []  # not full, not due: more may join
    clock.now += 0.96
    (task,) = loop.to_launch()
    assert [b.batch_id for b in task] == [1, 2] and loop.staged == []


def test_tasks_are_capped_and_grow_when_more_is_due_than_full_tasks_carry() -> None:
    loop, clock = make(fetch_batch_size=32, max_tasks_in_flight=2)
    loop.staged = [StagedBatch(i % 2, i, 25, clock.now) for i in range(4)]
    tasks = loop.to_launch()
    assert [sum(b.leases for b in t) for t in tasks] == [50, 50]  # two tasks (the cap), each over 32 URLs
    for i, task in enumerate(tasks):
        loop.launched(i, task)
    loop.staged = [StagedBatch(0, 9, 1, clock.now)]
    assert loop.to_launch() == []  # no free slot


def test_batches_due_now_are_shared_among_the_free_slots_in_shares_worth_a_task() -> None:
    loop, clock = make(fetch_batch_size=512, max_tasks_in_flight=3)
    loop.staged = [
        StagedBatch(0, 1, 150, clock.now),
        StagedBatch(1, 2, 100, clock.now),
        StagedBatch(0, 3, 10, clock.now),
    ]
    tasks = loop.to_launch()
    assert [[b.batch_id for b in t] for t in tasks] == [[1], [2, 3]]  # two shares of ~130: 150, then the rest (110)
    loop.staged = [StagedBatch(0, 4, MIN_SHARE, clock.now), StagedBatch(1, 5, 30, clock.now)]
    (task,) = loop.to_launch()  # (two shares would be under MIN_SHARE: one task)
    assert [b.batch_id for b in task] == [4, 5]


def test_a_task_holds_only_batches_due_close_together() -> None:
    loop, clock = make(fetch_batch_size=32, lease_horizon=0.15)
    loop.staged = [StagedBatch(0, i, 1, clock.now + i * 0.04) for i in range(8)]
    (task,) = loop.to_launch()
    assert [b.batch_id for b in task] == [0, 1, 2]  # due within the window of the first; the rest is not due yet
    assert [b.batch_id for b in loop.staged] == [3, 4, 5, 6, 7]


def test_nothing_is_launched_while_a_checkpoint_waits_and_a_dead_task_gives_back_its_batches() -> None:
    loop, clock = make(checkpoint_interval=10.0)
    batch = StagedBatch(0, 7, 3, clock.now)
    loop.launched("task-1", [batch])
    clock.now += 10
    assert loop.plan().quiescing and loop.checkpoint_due
    loop.staged = [StagedBatch(1, 8, 3, clock.now)]
    assert loop.to_launch() == []
    assert loop.task_ended("task-1") == [batch] and loop.tasks == {}


def test_quiet_only_when_no_task_runs_nothing_is_held_and_no_link_travels() -> None:
    """A checkpoint's quiesce meets results still settling, links on their way, and a partition being rebuilt."""
    loop, clock = make(checkpoint_interval=10.0)
    loop.launched("task", [StagedBatch(0, 1, 2, clock.now)])
    clock.now += 10
    answer(loop, summary(leased=2), summary())
    assert loop.checkpoint_due and not loop.at_rest()  # a task is still settling its results
    loop.task_ended("task")
    # Its last results were settled by shard 0, whose links went to shard 1: sent, not received yet.
    answer(loop, summary(sent=[3, 1], received=[3, 0]), summary(sent=[0, 0], received=[0, 0]))
    assert not loop.at_rest()
    answer(loop, summary(sent=[3, 1], received=[3, 0], held=4), summary(received=[1, 0]))
    assert not loop.at_rest()  # shard 0 holds links for a partition that is being rebuilt
    answer(loop, summary(sent=[3, 1], received=[3, 0]), summary(received=[1, 0]))
    assert loop.at_rest()
    loop.checkpointed()
    assert not loop.checkpoint_due and not loop.plan().quiescing


def test_over_when_quiet_and_nothing_queued_or_leased_and_paused_hosts_drained_first() -> None:
    loop, _ = make()
    answer(loop, summary(queued=3), summary())
    assert not loop.over()
    answer(loop, summary(leased=1), summary())
    assert not loop.over()
    answer(loop, summary(queued=2, queued_paused=2), summary())
    assert not loop.over() and loop.final_drain == "frontier exhausted"
    assert loop.plan().drain == "frontier exhausted"
    answer(loop, summary(), summary())
    assert loop.over()


def test_counters_from_the_shards_add_up() -> None:
    loop, _ = make()
    a, b = CrawlStats(started_at=0.0), CrawlStats(started_at=0.0)
    a.outcomes["fetched"], a.bytes, b.outcomes["fetched"], b.dropped["out_of_scope"] = 3, 300, 2, 7
    answer(loop, summary(stats=a), summary(stats=b))
    assert loop.stats.pages_fetched == 5 and loop.stats.bytes == 300 and loop.stats.dropped["out_of_scope"] == 7
    answer(loop, summary(), summary())
    assert loop.stats.pages_fetched == 5  # (each summary carries only what moved since the last one)


def test_the_next_round_comes_soon_while_urls_are_out_and_before_a_host_is_due() -> None:
    loop, clock = make(lease_horizon=0.3)
    started = clock.now
    answer(loop, summary(next_due=clock.now + 2.0), summary())
    earliest, latest = loop.wake_at(started)
    assert earliest == started + MIN_ROUND and latest == clock.now + MAX_IDLE_WAIT  # idle: every so often
    answer(loop, summary(next_due=clock.now + 0.4), summary())
    assert loop.wake_at(started)[1] == clock.now + 0.4 - 0.3  # a host due: lease it a horizon ahead
    answer(loop, summary(leased=1, next_due=clock.now + 2.0), summary())
    assert loop.wake_at(started)[1] == started + MAX_GATHER  # an answer may come any time: gather briefly


def test_rounds_come_less_often_while_every_slot_has_a_task_the_shards_chain_to() -> None:
    loop, clock = make(max_tasks_in_flight=2)
    started = clock.now
    answer(
        loop, summary(leases=150, leased=150, earliest=clock.now), summary(leases=150, leased=150, earliest=clock.now)
    )
    first, second = loop.to_launch()  # (300 due now: two shares)
    loop.launched("a", first)
    answer(loop, summary(leased=150), summary(leased=150))  # (one slot free: a round soon, to fill it)
    assert loop.wake_at(started)[1] == started + MAX_GATHER
    loop.launched("b", second)
    answer(loop, summary(leased=150), summary(leased=150))  # (both run; this round let the shards chain)
    assert loop.wake_at(started)[1] == started + MAX_GATHER_CHAINED
    loop.paused = "operator"
    answer(loop, summary(leased=150), summary(leased=150))  # (no chaining: answered hosts wait for rounds)
    assert loop.wake_at(started)[1] == started + MAX_GATHER


def test_a_task_that_ended_frees_its_capacity_before_the_next_summaries() -> None:
    loop, clock = make(max_tasks_in_flight=2, fetch_batch_size=10)
    batch = StagedBatch(0, 1, 10, clock.now)
    answer(loop, summary(leased=20), summary())
    loop.launched("t", [batch])
    assert loop.lease_budget() == 0
    loop.task_ended("t")  # its results are all settled: its 10 leases are closed
    assert loop.lease_budget() == 10
    loop.cfg = dataclasses.replace(loop.cfg, max_pages=25)
    assert loop.lease_budget() == 5  # ... but a page budget counts every lease the summaries still show


def test_a_continuous_crawl_is_not_over_while_revisits_are_scheduled_and_reports_its_freshness() -> None:
    loop, clock = make(checkpoint_interval=0)
    answer(loop, summary(scheduled=5, due_within_hour=2, schedule_overdue=0.0), summary())
    assert not loop.over()
    assert loop.freshness() == {"scheduled": 5, "due_within_hour": 2, "freshness_lag_s": 0.0}
    late = summary(scheduled=4, due_within_hour=4, schedule_overdue=1.5)
    late.stats.revisit_lag = 3.25  # (a revisit was sent 3.25 s after its time)
    answer(loop, late, summary())
    assert loop.freshness()["freshness_lag_s"] == 3.25 and loop.stats.revisit_lag == 3.25
    clock.now += 61.0  # (a minute later only the schedule's own lag counts)
    answer(loop, summary(scheduled=4, schedule_overdue=1.5), summary())
    assert loop.freshness()["freshness_lag_s"] == 1.5
    answer(loop, summary(), summary())
    assert loop.over()


def test_with_rollover_a_cut_comes_as_each_period_ends_and_names_the_period_it_began_in() -> None:
    loop, clock = make(checkpoint_interval=0, rollover=60.0)
    clock.now = 1_800_000_000.0 + 30.0  # (half a minute into a period)
    loop.checkpointed()
    answer(loop, summary(), summary())
    assert not loop.checkpoint_due
    clock.now += 29.0
    answer(loop, summary(), summary())
    assert not loop.checkpoint_due
    clock.now += 1.0
    answer(loop, summary(), summary())
    assert loop.checkpoint_due and loop.cut_period() == "2027-01-15T0800Z"
    loop.checkpointed()
    assert loop.cut_period() == "2027-01-15T0801Z"
    assert make()[0].cut_period() is None


def test_a_loop_made_anew_keeps_the_operators_stop_and_pause() -> None:
    # (a roll-back makes the coordinator's loop anew, and a restarted coordinator its own: a stop asked just before a
    # shard died was dropped with the old loop, and a continuous crawl then never ended -- seen in a chaos run, its
    # driver waiting out its timeout)
    before, _ = make()
    before.stop("the operator's")
    before.paused = "paused by operator"
    after, _ = make()
    after.heed(before.operator_said())
    assert (after.user_stop, after.paused) == ("the operator's", "paused by operator")
    # Nothing said: nothing changes; a stop the new loop was already asked is kept; an unpause holds.
    fresh, _ = make()
    fresh.heed({})
    assert (fresh.user_stop, fresh.paused) == (None, None)
    fresh.stop("asked of the new one")
    fresh.paused = "paused by operator"
    fresh.heed({"stop": None, "paused": None})
    assert (fresh.user_stop, fresh.paused) == ("asked of the new one", None)


BATCH = LoopSettings().fetch_batch_size  # (a task's leases, by default)


def test_shards_may_chain_leases_unless_the_crawl_is_stopping_pausing_or_cutting() -> None:
    loop, clock = make(time_limit=60.0)
    assert loop.plan().chains == [ChainAllowance(64 * BATCH, until=clock.now + 60.0)] * 2  # (at most what tasks hold)
    loop.paused = "operator"
    assert loop.plan().chains == [NO_CHAIN] * 2
    loop.paused = None
    loop.checkpoint_now()
    assert loop.plan().chains == [NO_CHAIN] * 2  # (a cut waits for the tasks to end: they must not run on)
    loop.checkpointed()
    loop.stop("operator")
    assert loop.plan().chains == [NO_CHAIN] * 2


def test_no_chaining_while_staged_batches_wait_for_a_task_to_end() -> None:
    loop, clock = make(max_tasks_in_flight=1)
    answer(loop, summary(leases=5, earliest=clock.now), summary())
    loop.launched("t", loop.to_launch()[0])
    answer(loop, summary(leases=5, earliest=clock.now), summary())
    assert loop.to_launch() == [] and loop.plan().chains == [NO_CHAIN] * 2  # (the task must end for them)
    loop.task_ended("t")
    assert loop.plan().chains == [ChainAllowance(BATCH)] * 2


def test_no_chaining_while_fewer_tasks_run_than_the_leases_out_are_worth() -> None:
    loop, clock = make(max_tasks_in_flight=2)
    answer(
        loop, summary(leases=150, leased=150, earliest=clock.now), summary(leases=110, leased=110, earliest=clock.now)
    )
    first, second = loop.to_launch()  # (260 due now: two shares)
    loop.launched("a", first)
    assert loop.plan().chains == [NO_CHAIN] * 2  # (one runs; 260 are worth two: the round fills the other slot)
    loop.launched("b", second)
    assert loop.plan().chains == [ChainAllowance(2 * BATCH)] * 2
    loop.task_ended("b")
    answer(loop, summary(leased=40), summary(leased=40))
    assert loop.plan().chains == [ChainAllowance(2 * BATCH)] * 2  # (80 out: one share, and one task runs)


def test_no_chaining_while_a_ranked_host_waits_for_capacity() -> None:
    loop, _ = make()
    answer(loop, summary(best_waiting=-3.0), summary())  # (with priorities: the best score of a host no lease took)
    assert loop.plan().chains == [NO_CHAIN] * 2  # (spare capacity goes to the best-scored hosts, shard by shard)
    answer(loop, summary(), summary())
    assert loop.plan().chains == [ChainAllowance(64 * BATCH)] * 2


def test_a_page_budget_is_never_overshot_by_what_shards_chain_between_rounds() -> None:
    loop, _ = make(max_pages=30, max_tasks_in_flight=1, fetch_batch_size=10)
    plan = loop.plan()
    assert plan.quotas == [5, 5] and plan.chains == [ChainAllowance(10)] * 2  # (30 - the quotas' 10, by shard)
    # The shards leased their quotas and may have chained all 20 since their summaries: the next round counts them.
    loop.answered(plan, [summary(leased=5), summary(leased=5)], ["a", "b"])
    plan = loop.plan()
    assert plan.quotas == [0, 0] and plan.chains == [ChainAllowance(0)] * 2
    # They had chained 15 when they answered that round (their summaries count them); those come, and no more.
    stats = CrawlStats(started_at=0.0)
    stats.outcomes["fetched"] = 15
    loop.answered(plan, [summary(leased=10, stats=stats), summary(leased=5)], ["a", "b"])
    plan = loop.plan()
    assert sum(plan.quotas) + sum(c.leases or 0 for c in plan.chains) <= 30 - 15 - 15


def test_a_lost_shard_may_have_chained_what_its_last_two_rounds_granted() -> None:
    loop, _ = make(max_tasks_in_flight=1, fetch_batch_size=10)
    answer(loop, summary(leased=10), summary(leased=0))
    loop.plan()  # (the round it missed: its reply never came)
    assert loop.lost_shards([0]) == 10 + 2 * 10  # (leased when last asked, and up to a task's leases a round)
