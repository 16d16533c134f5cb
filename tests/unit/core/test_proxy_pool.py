"""Issue 34, step 1: a proxy pool's sessions and cool-downs (core/proxy_pool.py), on an injected clock."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from raycrawl.core.proxy_pool import ProxyPool, outcome_of, redact

PROXIES = ["http://127.0.0.1:3128", "http://bob:s3cret@127.0.0.1:3129", "socks5://127.0.0.1:1080"]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_hosts_keep_their_proxy_and_new_hosts_spread_over_the_pool() -> None:
    pool = ProxyPool(PROXIES, clock=Clock())
    first = {host: pool.choose(host) for host in ("a", "b", "c")}
    assert sorted(first.values()) == sorted(PROXIES)  # (the fewest hosts first: one each)
    assert all(pool.choose(host) == proxy for host, proxy in first.items())  # (sticky)


def test_a_failing_proxy_rests_its_hosts_move_and_it_comes_back_after_its_cooldown() -> None:
    clock = Clock()
    pool = ProxyPool(PROXIES[:2], strikes=3, cooldown=60.0, clock=clock)
    dead = pool.choose("a")
    pool.report(dead, "connect_error")
    pool.report(dead, "ok")  # (a success ends the streak)
    for _ in range(3):
        pool.report(dead, outcome_of(None, connect_failed=True))
    moved = pool.choose("a")
    assert moved != dead and pool.choose("b") == moved  # (only one healthy left)
    clock.now += 60.0
    assert {row["state"] for row in pool.health()} == {"ok"}
    for _ in range(3):
        pool.report(dead, "proxy_auth")  # (sent to rest again: twice as long)
    clock.now += 60.0
    assert [r["state"] for r in pool.health() if r["proxy"] == redact(dead)] == ["resting"]
    clock.now += 60.0
    assert [r["rests"] for r in pool.health() if r["proxy"] == redact(dead)] == [2]


def test_with_every_proxy_resting_the_one_back_soonest_carries_on() -> None:
    clock = Clock()
    pool = ProxyPool(PROXIES[:2], strikes=1, cooldown=10.0, clock=clock)
    pool.report(PROXIES[0], "banned")
    clock.now += 5.0
    pool.report(PROXIES[1], "banned")
    assert pool.choose("x") == PROXIES[0]


def test_answers_say_what_they_say_of_the_proxy_and_credentials_never_show() -> None:
    assert [outcome_of(s, False) for s in (200, 404, 403, 429, 407, 503)] == [
        "ok", "ok", "banned", "banned", "proxy_auth", "ok"]  # fmt: skip
    assert outcome_of(None, True) == "connect_error"
    assert redact("http://bob:s3cret@127.0.0.1:3129") == "http://***@127.0.0.1:3129"  # (user names too: keys)
    assert redact("http://127.0.0.1:3128") == "http://127.0.0.1:3128"
    pool = ProxyPool(PROXIES, clock=Clock())
    for proxy in PROXIES:
        pool.report(proxy, "connect_error")
    assert "s3cret" not in json.dumps(pool.health())


@settings(max_examples=200, deadline=None)
@given(ops=st.lists(st.tuples(st.sampled_from(["choose", "fail", "ok", "wait"]), st.integers(0, 5)), max_size=80))
def test_a_resting_proxy_carries_no_host_while_another_is_healthy(ops: list[tuple[str, int]]) -> None:
    clock = Clock()
    pool = ProxyPool(PROXIES, strikes=2, cooldown=30.0, clock=clock)
    for op, n in ops:
        if op == "choose":
            proxy = pool.choose(f"h{n}")
            states = {r["proxy"]: r["state"] for r in pool.health()}
            if any(state == "ok" for state in states.values()):
                assert states[redact(proxy)] == "ok"
        elif op in ("fail", "ok"):
            pool.report(PROXIES[n % 3], "connect_error" if op == "fail" else "ok")
        else:
            clock.now += n * 10.0
    assert sum(r["hosts"] for r in pool.health()) == len({f"h{n}" for op, n in ops if op == "choose"})
