"""Issue 34: the politeness budget in Redis (adapters/redis_budget.py) keeps the in-memory budget's rules
(core/host_budget.py, unit-tested on a fake clock in tests/unit/core/test_host_budget.py), on the real server the
session started."""

from __future__ import annotations

from conftest import FakeClock as Clock

from raycrawl.core.host_budget import Ask, Grant, HostBudget


def test_the_budget_in_redis_keeps_the_same_rules_for_crawls_and_for_any_process_using_its_keys(
    redis_url: str,
) -> None:
    """One scenario, step by step, on the in-memory budget and on the one in Redis (the real server the session
    started): the same answers. A third client -- a process that is not a crawl -- reserves through the same keys."""
    import uuid

    import redis

    from raycrawl.adapters.redis_budget import RedisHostBudget

    clocks = (Clock(), Clock())
    memory = HostBudget(ttl=30.0, clock=clocks[0])
    prefix = f"test:{uuid.uuid4().hex}"
    shared = RedisHostBudget(redis.Redis.from_url(redis_url), prefix, ttl=30.0, clock=clocks[1])
    other_process = RedisHostBudget(redis.Redis.from_url(redis_url), prefix, ttl=30.0, clock=clocks[1])
    script: list[tuple[str, object]] = [
        ("reserve", ("a", [Ask("h.test", 0.5), Ask("k.test", 1.0)])),
        ("reserve", ("b", [Ask("h.test", 2.0)])),
        ("wait", 0.25),
        ("release", ("a", "h.test", 0, 1000.2)),
        ("reserve", ("tool", [Ask("h.test", 0.0)])),
        ("wait", 2.0),
        ("reserve", ("tool", [Ask("h.test", 0.0), Ask("h.test", 0.0)])),
        ("wait", 40.0),  # (the second grant's reservation expires: its holder died)
        ("reserve", ("b", [Ask("h.test", 2.0)])),
    ]
    tokens: dict[tuple[int, int], int] = {}  # (side, n-th grant) -> token
    for op, arg in script:
        if op == "wait":
            for clock in clocks:
                clock.now += arg  # type: ignore[operator]
        elif op == "release":
            crawl, host, n, ended = arg  # type: ignore[misc]
            memory.release(crawl, [(host, tokens[(0, n)], ended)])
            shared.release(crawl, [(host, tokens[(1, n)], ended)])
        else:
            crawl, asks = arg  # type: ignore[misc]
            answers = []
            for side, budget in enumerate((memory, shared if crawl != "tool" else other_process)):
                got = budget.reserve(crawl, asks)
                answers.append(
                    [(type(g).__name__, g.host, getattr(g, "at", getattr(g, "until", None)), getattr(g, "delay", None))
                     for g in got]
                )  # fmt: skip
                for g in got:
                    if isinstance(g, Grant):
                        tokens[(side, sum(1 for k in tokens if k[0] == side))] = g.token
            assert answers[0] == answers[1], (op, arg, answers)
    assert memory.expired == shared.expired + other_process.expired == 1
