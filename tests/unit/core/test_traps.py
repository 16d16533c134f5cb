"""Trap rules and redirect chains, as pure functions."""

import pytest

from raycrawl.core.entry_lines import decode
from raycrawl.core.frontier import FrontierShard
from raycrawl.core.frontier_settings import HOST_BUDGET, FrontierSettings
from raycrawl.core.records import UrlEntry
from raycrawl.core.redirects import redirect_problem
from raycrawl.core.traps import TrapRules

RULES = TrapRules()


@pytest.mark.parametrize(
    ("url", "rule"),
    [
        ("http://a.test/", None),
        ("http://a.test/a/b/c?x=1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16/17/18/19/20/21", None),  # query not a path
        ("http://a.test/" + "/".join(str(i) for i in range(20)), None),
        ("http://a.test/" + "/".join(str(i) for i in range(21)), "path_too_deep"),
        ("http://a.test/x/x/y", None),
        ("http://a.test/x/x/x", "repeated_segment"),
        ("http://a.test/cal/x/y/x/y/x/y", None),  # alternating is not a run (path depth bounds it)
        ("http://a.test//", None),
        ("http://a.test/" + "a" * 2100, "url_too_long"),
    ],
)
def test_trap_rules(url: str, rule: str | None) -> None:
    assert RULES.rejects(url) == rule


def test_trap_limits_are_configurable() -> None:
    assert TrapRules(max_path_depth=2).rejects("http://a.test/a/b/c") == "path_too_deep"
    assert TrapRules(max_repeated_segments=1).rejects("http://a.test/a/a") == "repeated_segment"


def test_redirect_loop_and_chain_limits() -> None:
    a, b, c = "http://a.test/a", "http://a.test/b", "http://a.test/c"
    assert redirect_problem((), a, b, 10) is None
    rule, message = redirect_problem((a,), b, a, 10) or ("", "")
    assert rule == "redirect_loop" and message == f"redirect loop: {a} -> {b} -> {a}"
    assert redirect_problem((), a, a, 10) == ("redirect_loop", f"redirect loop: {a} -> {a}")
    chain = tuple(f"http://a.test/{i}" for i in range(10))
    assert redirect_problem(chain[:-1], chain[-1], c, 10) is None  # 10 redirects: followed
    rule, message = redirect_problem(chain, "http://a.test/10", c, 10) or ("", "")
    assert rule == "too_many_redirects" and message.startswith("more than 10 redirects: http://a.test/0 -> ")
    assert redirect_problem((), a, b, 0) is not None


def test_redirect_chain_survives_a_shard_snapshot() -> None:
    shard = FrontierShard(0, FrontierSettings(), clock=lambda: 1000.0)
    shard.push([UrlEntry("http://a.test/c", 0, "http://a.test/b", 0, ("http://a.test/a", "http://a.test/b"))])
    again = FrontierShard(0, FrontierSettings(), clock=lambda: 1000.0)
    again.restore(shard.snapshot())
    assert again.snapshot()["hosts"][0]["lines"] == shard.snapshot()["hosts"][0]["lines"]
    assert decode(again.snapshot()["hosts"][0]["lines"]).redirects == (
        "http://a.test/a",
        "http://a.test/b",
    )


def test_per_host_page_budget_turns_further_urls_away_when_leftovers_are_recorded() -> None:
    shard = FrontierShard(0, FrontierSettings(max_pages_per_host=3, hold_over_budget=False), clock=lambda: 1000.0)
    shard.push([UrlEntry(f"http://a.test/{i}", 1) for i in range(5)] + [UrlEntry("http://b.test/", 1)])
    terminals = shard.take_terminals()
    assert shard.queued == 4  # three of a.test, one of b.test
    assert [(t.entry.url, t.outcome, t.detail) for t in terminals] == [
        ("http://a.test/3", "out_of_budget", HOST_BUDGET),
        ("http://a.test/4", "out_of_budget", HOST_BUDGET),
    ]


def test_per_host_page_budget_holds_further_urls_for_a_resume_with_a_larger_one() -> None:
    import dataclasses

    settings = FrontierSettings(max_pages_per_host=3)
    shard = FrontierShard(0, settings, clock=lambda: 1000.0)
    shard.push([UrlEntry(f"http://a.test/{i}", 1) for i in range(5)] + [UrlEntry("http://b.test/", 1)])
    assert shard.take_terminals() == [] and shard.queued == 4 and shard.held == 2
    assert shard.summary()["held_over_budget"] == 2
    saved = shard.snapshot()
    same = FrontierShard(0, settings, clock=lambda: 1000.0)
    same.restore(saved)  # the same budget: still held, nothing ended, nothing more queued
    assert (same.queued, same.held, same.take_terminals()) == (4, 2, [])
    larger = FrontierShard(0, dataclasses.replace(settings, max_pages_per_host=4), clock=lambda: 1000.0)
    larger.restore(saved)  # one more page for a.test: one held URL is admitted, the other stays held
    assert (larger.queued, larger.held) == (5, 1)
    unlimited = FrontierShard(0, dataclasses.replace(settings, max_pages_per_host=None), clock=lambda: 1000.0)
    unlimited.restore(saved)
    assert (unlimited.queued, unlimited.held) == (6, 0)
