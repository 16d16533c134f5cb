"""Priorities without Ray: scores from depth, rules and a function; best URLs and hosts first when capacity is
scarce (never before a host's delay); a full host queue sheds its lowest score first; the settings' layers."""

from __future__ import annotations

from pathlib import Path

import pytest

from raycrawl.cli import _cli_values, build_parser
from raycrawl.config import CrawlConfig, load_config
from raycrawl.core.frontier import FrontierShard
from raycrawl.core.frontier_settings import FrontierSettings
from raycrawl.core.politeness import DelayPolicy
from raycrawl.core.priority import Priority, by_depth, parse_rule
from raycrawl.core.records import Ack, Lease, UrlEntry
from raycrawl.errors import ConfigError


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def shard(clock: Clock, priority: Priority, **kw: object) -> FrontierShard:
    settings = FrontierSettings(policy=DelayPolicy(delay=1.0, delay_factor=0.0), **kw)  # type: ignore[arg-type]
    return FrontierShard(0, settings, priority.frontier_key(), clock)


def answer(frontier: FrontierShard, leases: list[Lease], at: float) -> None:
    frontier.ack([Ack(lease.lease_id, 200 if lease.kind == "page" else 404, at, 0.0, False) for lease in leases])


def test_scores_from_depth_rules_and_a_function() -> None:
    assert Priority().frontier_key() is by_depth
    key = Priority.of(["/news/=5", r"\.pdf$=-10", "/news/=1"]).frontier_key()
    assert key(UrlEntry("http://a.test/news/1", 2)) == -(-2 + 5 + 1)
    assert key(UrlEntry("http://a.test/x.pdf", 0)) == 10
    by_length = Priority.of(["a=1"], score=lambda url, depth: len(url)).frontier_key()
    assert by_length(UrlEntry("http://b.test/aaaa", 9)) == -(18 + 1)
    failing = Priority(score=lambda url, depth: 1 / 0).frontier_key()
    assert failing(UrlEntry("http://a.test/", 3)) == 3.0  # a function that fails scores by depth
    assert Priority(score=lambda url, depth: float("nan")).frontier_key()(UrlEntry("http://a.test/", 2)) == 2.0
    for bad in ("no-weight", "=3", "x=heavy", "(=1", "x=inf"):
        with pytest.raises(ValueError):
            parse_rule(bad)
    assert parse_rule("a=b=2.5") == ("a=b", 2.5)


def test_within_a_host_the_best_url_goes_first() -> None:
    clock = Clock()
    frontier = shard(clock, Priority.of(["/important=10"]))
    frontier.push([UrlEntry("http://a.test/1", 0), UrlEntry("http://a.test/important", 3)])
    answer(frontier, frontier.lease(5), clock.now)  # robots.txt
    clock.now += 1
    assert [lease.url for lease in frontier.lease(5)] == ["http://a.test/important"]


def test_scarce_capacity_goes_to_the_best_hosts_and_no_host_before_its_delay() -> None:
    clock = Clock()
    frontier = shard(clock, Priority.of(["^http://gold=10"]))
    hosts = ["http://lead1.test", "http://gold.test", "http://lead2.test", "http://gold2.test"]
    frontier.push([UrlEntry(f"{h}/{i}", 1) for h in hosts for i in range(3)])
    answer(frontier, frontier.lease(10), clock.now)  # every robots.txt
    clock.now += 1.0
    first = frontier.lease(1)  # capacity for one: the gold host, though all four are due
    assert [lease.url for lease in first] == ["http://gold.test/0"]
    answer(frontier, first, clock.now)
    second = frontier.lease(1)  # gold.test waits its delay: the next best is another host
    assert [lease.url for lease in second] == ["http://gold2.test/0"]
    answer(frontier, second, clock.now)
    third = frontier.lease(2)
    assert sorted(lease.url for lease in third) == ["http://lead1.test/0", "http://lead2.test/0"]
    answer(frontier, third, clock.now)
    clock.now += 0.5
    assert frontier.lease(10) == []  # nobody's delay has passed
    clock.now += 0.5
    assert [lease.url for lease in frontier.lease(1)] == ["http://gold.test/1"]


def test_a_full_host_queue_sheds_its_lowest_score_first() -> None:
    clock = Clock()
    frontier = shard(clock, Priority(), max_queue_per_host=2)
    frontier.push([UrlEntry("http://a.test/deep", 5), UrlEntry("http://a.test/mid", 2)])
    frontier.push([UrlEntry("http://a.test/top", 0), UrlEntry("http://a.test/deeper", 9)])
    shed = frontier.take_terminals()
    assert [(t.entry.url, t.outcome) for t in shed] == [
        ("http://a.test/deep", "out_of_budget"),  # pushed out by /top
        ("http://a.test/deeper", "out_of_budget"),  # no better than what is queued: not taken
    ]
    assert frontier.queued == 2


def test_priority_rules_from_each_layer(tmp_path: Path) -> None:
    toml = tmp_path / "crawl.toml"
    toml.write_text('[[priority]]\npattern = "/news/"\nweight = 5\n[[priority]]\npattern = "/old/"\nweight = -2\n')
    cfg = load_config({"seeds": ("http://a.test/",)}, str(toml), {})
    assert cfg.priority == ("/news/=5", "/old/=-2")
    args = build_parser().parse_args(["crawl", "http://a.test/", "--priority", "/a/=1", "--priority", "/b/=2"])
    assert load_config(_cli_values(args), None, {}).priority == ("/a/=1", "/b/=2")
    assert load_config({}, None, {"RAYCRAWL_PRIORITY": "/x/=3"}).priority == ("/x/=3",)
    toml.write_text('[[priority]]\npattern = "/news/"\n')
    with pytest.raises(ConfigError, match="weight"):
        load_config({}, str(toml), {})
    with pytest.raises(ConfigError, match="priority"):
        CrawlConfig(seeds=("http://a.test/",), priority=("(=1",))
    with pytest.raises(ConfigError, match="score"):
        CrawlConfig(seeds=("http://a.test/",), score="not a function")
    assert CrawlConfig(seeds=("http://a.test/",), score=lambda url, depth: 0.0).score is not None


def test_a_shard_says_how_good_its_best_waiting_host_is() -> None:
    clock = Clock()
    assert shard(clock, Priority()).best_waiting() is None  # by depth: no ranking across shards
    frontier = shard(clock, Priority.of(["gold=10"]))
    assert frontier.best_waiting() is None
    frontier.push([UrlEntry("http://gold.test/1", 1), UrlEntry("http://lead.test/1", 1)])
    answer(frontier, frontier.lease(10), clock.now)  # robots.txt
    clock.now += 1
    assert frontier.best_waiting() == -9.0  # gold.test's URL waits: -(-1 + 10)
    assert [lease.url for lease in frontier.lease(1)] == ["http://gold.test/1"]
    assert frontier.best_waiting() == 1.0  # now lead.test's
