"""A host's run (core/runs.py): several URLs of one host leased at once and sent one after another.

The shard's half: which URLs a run takes, that the host gets nothing more until the run is answered, and that
unsent leases go back as they were. The fetcher's half, against the test web: tests/e2e/test_runs_at_the_server.py.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from raycrawl.core.frontier import FrontierShard
from raycrawl.core.frontier_settings import FrontierSettings
from raycrawl.core.politeness import DelayPolicy
from raycrawl.core.records import Ack, Lease, UrlEntry
from raycrawl.core.runs import ends_run, gap_after, run_size


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def shard(clock: Clock, delay: float, run_length: int = 4, concurrency: int = 1) -> FrontierShard:
    settings = FrontierSettings(
        policy=DelayPolicy(delay=delay, delay_factor=0.0), run_length=run_length, per_host_concurrency=concurrency
    )
    return FrontierShard(0, settings, clock=clock)


def with_robots(frontier: FrontierShard, clock: Clock, urls: list[str]) -> None:
    frontier.push([UrlEntry(u, 1) for u in urls])
    robots = frontier.lease(10)
    assert {x.kind for x in robots} == {"robots"}
    frontier.ack([Ack(x.lease_id, 404, clock.now, 0.01, False, ended_at=clock.now) for x in robots])


def answer(frontier: FrontierShard, leases: list[Lease], at: float, status: int = 200) -> None:
    frontier.ack([Ack(x.lease_id, status, at, 0.01, status == 503, ended_at=at) for x in leases])


def a_run(pages: int) -> tuple[Clock, FrontierShard, list[str], list[Lease]]:
    """A shard without delay whose one host has ``pages`` URLs queued, robots.txt answered, and its first lease:
    (its clock, the shard, the URLs, the leases)."""
    clock = Clock()
    frontier = shard(clock, delay=0.0)
    urls = [f"http://a.test/{i}" for i in range(pages)]
    with_robots(frontier, clock, urls)
    return clock, frontier, urls, frontier.lease(10, horizon=0.3)


def test_a_due_host_is_leased_a_run_each_lease_after_the_one_before() -> None:
    clock, frontier, urls, run = a_run(10)
    assert len(run) == 4 and [x.url for x in run] == urls[:4]
    assert [x.after for x in run] == [0] + [x.lease_id for x in run[:-1]] and {x.gap for x in run} == {0.0}
    assert frontier.lease(10, horizon=0.3) == []  # (its run is out: nothing more for the host)
    answer(frontier, run[:3], clock.now)
    assert frontier.lease(10, horizon=0.3) == []  # (... until the whole run is answered)
    answer(frontier, run[3:], clock.now)
    assert [x.url for x in frontier.lease(10, horizon=0.3)] == urls[4:8]


def test_a_run_keeps_the_delay_an_operator_set_for_its_host() -> None:
    clock, frontier, _, run = a_run(20)
    answer(frontier, run, clock.now)
    assert frontier.set_delay("a.test", 0.1)
    clock.now += 1.0
    run = frontier.lease(10, horizon=0.3)
    assert len(run) > 1 and {x.gap for x in run[1:]} == {0.1}, run
    answer(frontier, run, clock.now)
    assert frontier.set_delay("a.test", 5.0)  # longer than the horizon: one URL at a time
    clock.now += 10.0
    assert len(frontier.lease(10, horizon=0.3)) == 1


def test_a_run_holds_as_many_gaps_as_the_horizon_and_no_more_than_the_quota() -> None:
    clock = Clock()
    frontier = shard(clock, delay=0.25, run_length=8)
    with_robots(frontier, clock, [f"http://a.test/{i}" for i in range(10)] + ["http://b.test/0", "http://b.test/1"])
    clock.now += 1.0
    leases = frontier.lease(3, horizon=0.3)
    by_host = [x.url.split("/")[2] for x in leases]
    # a.test's run: 0.3 s of horizon holds one gap of 0.25 s (two requests); b.test's robots.txt takes the third.
    assert by_host[:2] == ["a.test", "a.test"] and leases[1].gap == 0.25 and len(leases) == 3
    assert run_size(8, 0.25, 0.3) == 2 and run_size(8, 0.0, 0.0) == 8 and run_size(1, 0.0, 5) == 1


def test_unsent_leases_go_back_as_they_were_and_the_host_is_leased_again() -> None:
    clock, frontier, urls, run = a_run(4)
    answer(frontier, run[:1], clock.now, status=503)  # (the run ends: its host backs off)
    frontier.give_back([x.lease_id for x in run[1:]])
    assert frontier.queued == 4 and frontier.lease(10) == []  # (backing off)
    clock.now += 60.0
    again = frontier.lease(10, horizon=0.3)
    assert sorted(x.url for x in again) == sorted(urls) and {x.attempts for x in again if x.url != urls[0]} == {0}


def test_several_requests_in_flight_per_host_take_no_runs() -> None:
    clock = Clock()
    frontier = shard(clock, delay=0.0, concurrency=2)
    with_robots(frontier, clock, [f"http://a.test/{i}" for i in range(6)])
    assert [x.after for x in frontier.lease(10, horizon=0.3)] == [0, 0]


@given(gap=st.floats(0, 30), factor=st.floats(0, 5), max_delay=st.floats(0, 60), exchange=st.floats(0, 100))
def test_the_gap_after_an_exchange_is_the_delay_the_shard_would_set(
    gap: float, factor: float, max_delay: float, exchange: float
) -> None:
    from raycrawl.core.politeness import host_delay

    policy = DelayPolicy(delay=gap, delay_factor=factor, min_delay=0.0, max_delay=max(max_delay, gap))
    assert gap_after(gap, factor, policy.max_delay, exchange) == host_delay(policy, None, exchange)[0]


def test_answers_the_shard_acts_on_end_a_run() -> None:
    assert not ends_run(200, False, None) and not ends_run(404, False, None) and not ends_run(301, False, None)
    assert ends_run(503, True, "HTTP 503") and ends_run(403, False, None) and ends_run(451, False, None)
    assert ends_run(None, True, "ClientConnectorError") and ends_run(200, False, "ValueError: bad body")


# --- the fetcher's half, against the test web ---------------------------------------------------------------


def test_a_run_that_refills_from_the_store_counts_what_robots_txt_ends_there() -> None:
    """URLs stored before the host's robots.txt came are checked against it when they come out of the store -- here
    in the middle of a run's lease. Those it forbids end (a record each), and the shard's count of queued URLs says
    so: it stayed one too high for each (a crawl that then never ended), when the lease wrote back its own count."""
    from raycrawl.core.queue_store import MemoryQueueStore

    clock = Clock()
    settings = FrontierSettings(policy=DelayPolicy(delay=0.01, delay_factor=0.0), run_length=8, workbench=2,
                                first_slot_spread=0.0)  # fmt: skip
    frontier = FrontierShard(0, settings, clock=clock, store=MemoryQueueStore())
    frontier.push([UrlEntry(f"http://a.test/{'private/' if i % 2 else ''}{i}", 1) for i in range(12)])
    (robots,) = frontier.lease(10)
    frontier.ack([Ack(robots.lease_id, 200, clock.now, 0.01, False, None, b"User-agent: *\nDisallow: /private/\n",
                      ended_at=clock.now)])  # fmt: skip
    fetched: list[str] = []
    for _ in range(50):
        clock.now += 1.0
        leases = frontier.lease(10, horizon=1.0)
        fetched += [x.url for x in leases]
        answer(frontier, leases, clock.now)
        stored = sum(hs.queue.size + hs.stored for hs in frontier.hosts.values())
        assert frontier.queued == stored, (frontier.queued, stored)
    denied = [t.entry.url for t in frontier.take_terminals()]
    assert sorted(fetched + denied) == sorted(f"http://a.test/{'private/' if i % 2 else ''}{i}" for i in range(12))
    assert all("/private/" in u for u in denied) and frontier.queued == 0


def test_a_run_whose_task_died_spends_an_attempt_only_on_the_request_that_may_have_been_sent() -> None:
    clock, frontier, urls, run = a_run(10)
    answer(frontier, run[:1], clock.now)  # (the first was answered; the second may have been sent)
    frontier.release([x.lease_id for x in run])
    clock.now += 60.0
    attempts: dict[str, int] = {}
    for _ in range(3):  # (queued again behind the others)
        leases = frontier.lease(10, horizon=0.3)
        attempts |= {x.url: x.attempts for x in leases}
        answer(frontier, leases, clock.now)
    assert {u: attempts[u] for u in urls[1:4]} == {urls[1]: 1, urls[2]: 0, urls[3]: 0}
    assert frontier.counters["released_unsent"] == 2
