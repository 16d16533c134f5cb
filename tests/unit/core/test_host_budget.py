"""Issue 34, step 1: one politeness budget per host across crawls (core/host_budget.py), on an injected clock."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from raycrawl.core.host_budget import ACTIVE_FOR, Ask, Grant, HostBudget, Wait


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_two_crawls_share_one_clock_per_host_and_the_strictest_delay_wins() -> None:
    clock = Clock()
    budget = HostBudget(clock=clock)
    (first,) = budget.reserve("a", [Ask("h.test", 0.5)])
    assert isinstance(first, Grant) and first.at == 1000.0
    (busy,) = budget.reserve("b", [Ask("h.test", 2.0)])  # (a's request is in flight)
    assert isinstance(busy, Wait)
    clock.now += 0.2
    budget.release("a", [("h.test", first.token, 1000.1)])
    (early,) = budget.reserve("a", [Ask("h.test", 0.5)])
    assert isinstance(early, Wait) and early.until == 1000.1 + 2.0  # (b asked with 2 s: it counts for a too)
    clock.now = 1002.1
    (second,) = budget.reserve("b", [Ask("h.test", 2.0)])
    assert isinstance(second, Grant) and second.at == 1002.1
    (other,) = budget.reserve("a", [Ask("other.test", 0.5)])  # (another host: its own clock)
    assert isinstance(other, Grant)


def test_a_slot_within_the_horizon_is_granted_ahead_and_a_crawl_that_stops_asking_stops_counting() -> None:
    clock = Clock()
    budget = HostBudget(clock=clock)
    (g,) = budget.reserve("slow", [Ask("h.test", 5.0)])
    budget.release("slow", [("h.test", g.token, 1000.0)])  # type: ignore[union-attr]
    (ahead,) = budget.reserve("fast", [Ask("h.test", 0.1)], horizon=10.0)
    assert isinstance(ahead, Grant) and ahead.at == 1005.0
    budget.release("fast", [("h.test", ahead.token, 1005.0)])
    clock.now += ACTIVE_FOR + 10  # (slow asked nothing since: only fast's delay counts)
    assert budget.delay("h.test") == 0.0
    budget.reserve("fast", [Ask("h.test", 0.1)])
    assert budget.delay("h.test") == 0.1


def test_a_crawl_that_dies_gives_its_hosts_back_when_its_reservations_expire() -> None:
    clock = Clock()
    budget = HostBudget(ttl=30.0, clock=clock)
    (g,) = budget.reserve("dead", [Ask("h.test", 1.0)])
    assert isinstance(g, Grant) and budget.in_flight("h.test") == 1
    (w,) = budget.reserve("alive", [Ask("h.test", 1.0)])
    assert isinstance(w, Wait) and w.until == 1001.0  # (the earliest the next slot can be: ask again then)
    clock.now = 1030.0
    (now,) = budget.reserve("alive", [Ask("h.test", 1.0)])
    assert isinstance(now, Grant) and budget.expired == 1
    budget.release("dead", [("h.test", g.token, 1001.0)])  # (too late: ignored)
    assert budget.in_flight("h.test") == 1


def test_the_budget_survives_a_restart_without_granting_early() -> None:
    clock = Clock()
    budget = HostBudget(clock=clock)
    (g,) = budget.reserve("a", [Ask("h.test", 3.0)])
    saved = budget.to_dict()  # (a request in flight: taken as ending now)
    again = HostBudget.from_dict(saved, clock=clock)
    (w,) = again.reserve("b", [Ask("h.test", 1.0)])
    assert isinstance(w, Wait) and w.until == 1003.0 and isinstance(g, Grant)


DELAYS = st.sampled_from([0.0, 0.5, 1.0, 2.0])
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("reserve"), st.integers(0, 2), st.integers(0, 1)),  # crawl, host
        st.tuples(st.just("release"), st.integers(0, 5), st.floats(0.0, 1.5)),  # which grant, how long it took
        st.tuples(st.just("wait"), st.floats(0.0, 3.0), st.just(0)),
    ),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(delays=st.lists(DELAYS, min_size=3, max_size=3), ops=OPS)
def test_whatever_the_crawls_do_no_request_starts_before_the_last_ended_plus_the_strictest_delay(
    delays: list[float], ops: list[tuple[str, float, float]]
) -> None:
    clock = Clock()
    budget = HostBudget(ttl=1e9, clock=clock)
    out: list[tuple[int, Grant]] = []  # (crawl, grant) not released
    last_end: dict[str, float] = {}
    joined: dict[str, set[int]] = {"h0": set(), "h1": set()}
    for op, a, b in ops:
        if op == "reserve":
            crawl, host = int(a), f"h{int(b)}"
            joined[host].add(crawl)
            (answer,) = budget.reserve(f"c{crawl}", [Ask(host, delays[crawl])])
            if isinstance(answer, Grant):
                assert not any(g.host == host for _, g in out), "two requests in flight to one host"
                if host in last_end:
                    assert answer.at >= last_end[host] + max(delays[c] for c in joined[host]) - 1e-9
                out.append((crawl, answer))
        elif op == "release" and out:
            crawl, grant = out.pop(int(a) % len(out))
            clock.now = max(clock.now, grant.at + b)
            ended = grant.at + b
            budget.release(f"c{crawl}", [(grant.host, grant.token, ended)])
            last_end[grant.host] = ended
        elif op == "wait":
            clock.now += a


def test_two_crawls_frontiers_on_one_budget_never_send_to_a_host_closer_than_the_strictest_delay() -> None:
    """Two crawls' shards (core/frontier.py) with the same host queued, leasing and answering in turn: every request
    either sends is at least the strictest delay after the last exchange with the host ended; alone, each would
    have sent twice as often."""
    from raycrawl.core.frontier import FrontierShard
    from raycrawl.core.frontier_settings import FrontierSettings
    from raycrawl.core.host_budget import LocalBudget
    from raycrawl.core.politeness import DelayPolicy
    from raycrawl.core.records import Ack, UrlEntry

    clock = Clock()
    budget = HostBudget(clock=clock)
    delays = {"a": 0.5, "b": 1.0}
    shards = {
        crawl: FrontierShard(
            0,
            FrontierSettings(policy=DelayPolicy(delay=d, delay_factor=0.0), first_slot_spread=0.0),
            clock=clock,
            budget=LocalBudget(budget, crawl),
        )
        for crawl, d in delays.items()
    }
    for crawl, shard in shards.items():
        shard.push([UrlEntry(f"http://h.test/{crawl}{i}", 1) for i in range(20)])
    sent: list[tuple[float, float, str]] = []  # (sent, ended, crawl)
    gaps: dict[str, set[float]] = {crawl: set() for crawl in shards}  # the page leases' gaps, by crawl
    answers: list[tuple[float, str, Ack]] = []  # (when it comes, to which crawl, the ack)
    while clock.now < 1030.0:
        for crawl, shard in shards.items():
            for lease in shard.lease(10, horizon=0.3):
                at = max(clock.now, lease.not_before)
                if lease.kind == "page":
                    gaps[crawl].add(lease.gap)
                ended = at + 0.05
                sent.append((at, ended, crawl))
                status = 404 if lease.kind == "robots" else 200
                answers.append((ended, crawl, Ack(lease.lease_id, status, ended, 0.05, False, ended_at=ended)))
        clock.now += 0.05
        for _, crawl, ack in [a for a in answers if a[0] <= clock.now]:
            shards[crawl].ack([ack])
        answers = [a for a in answers if a[0] > clock.now]
    sent.sort()
    assert len(sent) >= 20 and {c for _, _, c in sent} == {"a", "b"}
    for (_, ended, _), (start, _, _) in itertools.pairwise(sent):
        assert start >= ended + max(delays.values()) - 1e-9, (ended, start)
    assert shards["a"].counters["shared_waits"] > 0
    # A lease's gap (what a rendered page's scripts keep between their requests) is the strictest delay too.
    assert gaps == {"a": {1.0}, "b": {1.0}}


def test_after_a_restart_every_host_counts_as_just_asked_for_and_a_dead_crawl_is_forgotten() -> None:
    clock = Clock()
    budget = HostBudget(clock=clock)
    budget.reserve("a", [Ask("old.test", 2.0)])
    saved = budget.to_dict()
    clock.now += 100.0  # (the snapshot is old: what was granted since is unknown)
    again = HostBudget.from_dict(saved, clock=clock)
    (known,) = again.reserve("b", [Ask("old.test", 2.0)])
    (new,) = again.reserve("b", [Ask("new.test", 2.0)])
    assert isinstance(known, Wait) and known.until == clock.now + 2.0
    assert isinstance(new, Wait) and new.until == clock.now + 2.0
    # a crawl found gone gives its slots back at once
    clock.now += 2.0
    (held,) = again.reserve("dead", [Ask("old.test", 2.0)])
    assert isinstance(held, Grant) and again.holders() == {"dead"}
    assert again.forget("dead") == 1 and again.holders() == set()
    (mine,) = again.reserve("b", [Ask("old.test", 2.0)])
    assert isinstance(mine, Wait) and mine.until == held.at + 2.0  # (its slot counted as used)


def test_a_budget_that_cannot_be_reached_means_wait_with_every_host_and_release_kept() -> None:
    """Issue 46.8: the budget goes away mid-crawl (Redis down). The shard sends nothing meanwhile, keeps the hosts it
    had taken from its schedule and the slots it had to give back, says why it waits, and goes on when the budget
    answers again: every URL fetched once, every slot released, no request closer than the delay."""
    from collections.abc import Sequence

    from raycrawl.core.frontier import FrontierShard
    from raycrawl.core.frontier_settings import FrontierSettings
    from raycrawl.core.host_budget import BudgetUnavailable, LocalBudget, Release
    from raycrawl.core.politeness import DelayPolicy
    from raycrawl.core.records import Ack, UrlEntry

    class Flaky(LocalBudget):
        down = False

        def exchange(self, releases: Sequence[Release], asks: Sequence[Ask], horizon: float) -> list[Grant | Wait]:
            if self.down:
                raise BudgetUnavailable("Redis at redis://127.0.0.1:1/0 is unavailable (ConnectionError)")
            return super().exchange(releases, asks, horizon)

    clock = Clock()
    budget = HostBudget(clock=clock)
    client = Flaky(budget, "a")
    shard = FrontierShard(0, FrontierSettings(policy=DelayPolicy(delay=0.5, delay_factor=0.0), first_slot_spread=0.0),
                          clock=clock, budget=client)  # fmt: skip
    hosts = ["h.test", "k.test"]
    shard.push([UrlEntry(f"http://{h}/{i}", 1) for h in hosts for i in range(10)])
    sent: list[tuple[float, str, str]] = []  # (when, host, url)
    answers: list[tuple[float, Ack]] = []
    said: set[str | None] = set()
    while clock.now < 1040.0:
        client.down = 1005.0 <= clock.now < 1015.0
        for lease in shard.lease(10, horizon=0.3):
            assert not client.down
            at = max(clock.now, lease.not_before)
            sent.append((at, lease.entry.url.split("/")[2], lease.entry.url))
            status = 404 if lease.kind == "robots" else 200
            answers.append((at + 0.05, Ack(lease.lease_id, status, at + 0.05, 0.05, False, ended_at=at + 0.05)))
        said.add(shard.budget_unavailable)
        clock.now += 0.05
        shard.ack([ack for when, ack in answers if when <= clock.now])
        answers = [a for a in answers if a[0] > clock.now]
        if client.down:
            shard.settle_budget()  # (a checkpoint's: its releases are kept too)
    pages = [url for _, _, url in sent if not url.endswith("/robots.txt")]
    assert sorted(pages) == sorted(f"http://{h}/{i}" for h in hosts for i in range(10))  # each once, none lost
    assert not [s for s in sent if 1005.05 <= s[0] < 1015.0]  # nothing sent while the budget was away
    assert any(s[0] >= 1015.0 for s in sent)  # ... and the crawl went on after
    for host in hosts:
        times = sorted(t for t, h, _ in sent if h == host)
        assert all(b - a >= 0.5 + 0.05 - 1e-9 for a, b in itertools.pairwise(times))
        assert budget.in_flight(host) == 0  # every slot was given back
    assert shard.counters["shared_unavailable"] > 0 and shard.budget_unavailable is None
    assert "Redis at redis://127.0.0.1:1/0 is unavailable (ConnectionError)" in said


def test_a_redis_budget_that_is_down_answers_budget_unavailable_without_its_password() -> None:
    import pytest

    from raycrawl.actors.politeness_registry import RedisClient
    from raycrawl.core.host_budget import BudgetUnavailable
    from raycrawl.testing import free_port

    client = RedisClient(f"redis://:hunter2@127.0.0.1:{free_port()}/0", "a")  # (nothing listens there)
    with pytest.raises(BudgetUnavailable) as caught:
        client.exchange([("h.test", 1, 1000.0)], [Ask("h.test", 0.5)], 0.3)
    assert "unavailable" in str(caught.value) and "hunter2" not in str(caught.value)
