"""Issue 33: revisit schedules (core/revisit_schedule.py) and a shard's schedule of due URLs (core/due_queue.py), on
an injected clock, without Ray."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raycrawl.adapters.lmdb_queue import LmdbQueueStore
from raycrawl.config import CrawlConfig, load_config, read_toml
from raycrawl.core.due_queue import DueQueue
from raycrawl.core.frontier import FrontierShard
from raycrawl.core.frontier_settings import FrontierSettings
from raycrawl.core.politeness import DelayPolicy
from raycrawl.core.queue_log import LoggedQueueStore, replay
from raycrawl.core.queue_store import MemoryQueueStore, QueueStore, QueueStoreFull
from raycrawl.core.records import Ack, Known, UrlEntry
from raycrawl.core.revisit_schedule import (
    DEC_RATE,
    INC_RATE,
    RevisitPolicy,
    change_of,
    format_duration,
    parse_duration,
    scheduled_again,
)
from raycrawl.errors import ConfigError

# --- durations and the policy -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("10m", 600), ("6h", 21600), ("7d", 604800), ("2w", 1209600), ("1.5h", 5400), ("45", 45), (30, 30)],
)
def test_durations_read_as_people_write_them(text: str | int, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "7x", "-1d", "1d2h", "inf", True])
def test_a_duration_that_does_not_parse_says_what_is_expected(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)


def test_durations_are_shown_in_their_largest_whole_unit() -> None:
    assert [format_duration(s) for s in (90, 3600, 86400, 604800, 2592000, 1.5)] == ["90s", "1h", "1d", "1w", "30d",
                                                                                     "1.5s"]  # fmt: skip


def test_adaptive_intervals_shorten_after_a_change_and_lengthen_after_none() -> None:
    policy = RevisitPolicy(True, "adaptive", 100.0, 10.0, 1000.0)
    assert policy.next("http://a/", None, "first") == 100.0
    assert policy.next("http://a/", 100.0, "changed") == pytest.approx(100.0 * (1 - DEC_RATE))
    assert policy.next("http://a/", 100.0, "unchanged") == pytest.approx(100.0 * (1 + INC_RATE))
    assert policy.next("http://a/", 900.0, "unchanged") == 1000.0  # (bounded)
    assert policy.next("http://a/", 11.0, "changed") == 10.0
    assert policy.first("http://a/", changefreq="hourly") == 1000.0 and policy.first("http://a/", "always") == 10.0
    assert policy.first("http://a/", None, unchanged_for=50.0) == 50.0  # (its lastmod: unchanged for 50 s)
    assert policy.first("http://a/", "never", unchanged_for=50.0) == 1000.0


def test_fixed_schedules_and_pattern_rules_ignore_what_the_page_did() -> None:
    fixed = RevisitPolicy(True, "fixed", 60.0, 10.0, 1000.0)
    assert {fixed.next("http://a/", 5.0, change) for change in ("first", "changed", "unchanged")} == {60.0}
    ruled = RevisitPolicy(True, "adaptive", 100.0, 10.0, 1000.0, ("/news/=5s", "/archive/=30d"))
    assert ruled.next("http://a/news/1", 500.0, "unchanged") == 5.0  # (a rule is outside the adaptive bounds)
    assert ruled.first("http://a/archive/2001") == 30 * 86400.0
    assert ruled.next("http://a/other", 100.0, "changed") == pytest.approx(80.0)


def test_what_a_visit_found_and_whether_it_stays_scheduled() -> None:
    assert change_of("not_modified", True) == change_of("unchanged", True) == "unchanged"
    assert change_of("fetched", True) == "changed" and change_of("fetched", False) == "first"
    assert scheduled_again("fetched", 200, "page") and scheduled_again("not_modified", 304, "page")
    assert scheduled_again("unchanged", 200, "page")
    ended = [("gone", 410, "page"), ("fetched", 404, "page"), ("fetched", 301, "page"), ("error", None, "page"),
             ("fetched", 200, "sitemap"), ("robots_denied", None, "page")]  # fmt: skip
    for outcome, status, kind in ended:
        assert not scheduled_again(outcome, status, kind)


@settings(max_examples=300, deadline=None)
@given(
    after=st.floats(1.0, 1e7),
    low=st.floats(1.0, 1e6),
    span=st.floats(1.0, 1e3),
    visits=st.lists(st.sampled_from(["first", "changed", "unchanged"]), max_size=60),
)
def test_an_adaptive_interval_stays_within_its_bounds_whatever_the_pages_do(
    after: float, low: float, span: float, visits: list[str]
) -> None:
    policy = RevisitPolicy(True, "adaptive", after, low, low * span)
    interval: float | None = None
    for change in visits:
        interval = policy.next("http://a/p", interval, change)  # type: ignore[arg-type]
        assert low <= interval <= low * span
        assert math.isfinite(interval)


@settings(max_examples=100, deadline=None)
@given(period=st.floats(20.0, 2000.0), start=st.floats(1.0, 1e5))
def test_an_adaptive_interval_settles_near_a_page_s_change_period(period: float, start: float) -> None:
    """A page that changes every ``period`` seconds, visited as the schedule says: after enough visits the interval
    stays between 0.3 and 2 periods (changes are seen when a visit crosses a period boundary)."""
    policy = RevisitPolicy(True, "adaptive", start, 1.0, 1e6)
    t, interval = 0.0, policy.next("http://a/p", None, "first")
    seen: list[float] = []
    for _ in range(400):
        before, t = t, t + interval
        changed = math.floor(t / period) != math.floor(before / period)
        interval = policy.next("http://a/p", interval, "changed" if changed else "unchanged")
        seen.append(interval)
    settled = sorted(seen[-100:])
    assert 0.3 * period <= settled[50] <= 2 * period, (period, settled[50])


# --- the settings -------------------------------------------------------------------------------------------


def test_revisit_settings_from_flags_toml_and_python(tmp_path: Path) -> None:
    toml = tmp_path / "crawl.toml"
    toml.write_text('revisit_after = "6h"\nrevisit_min = "10m"\n[[revisit]]\npattern = "/news/"\nevery = "1h"\n')
    cfg = load_config({"revisit_max": "7d"}, str(toml), environ={"RAYCRAWL_REVISIT_SCHEDULE": "adaptive"})
    assert (cfg.revisit, cfg.revisit_after, cfg.revisit_min, cfg.revisit_max) == (True, 21600.0, 600.0, 604800.0)
    assert cfg.revisit_rules == ("/news/=1h",)
    assert CrawlConfig(revisit=True, revisit_after="90s", revisit_min="1m").revisit_after == 90.0


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"revisit_after": "soon"}, "revisit_after: 'soon' is not a duration"),
        ({"revisit_min": "0s"}, "revisit_min = 0.0: expected a duration > 0"),
        ({"revisit_max": "1m"}, "revisit_max = 60.0: expected a duration >= revisit_min"),
        ({"revisit_rules": ("[a=1h",)}, "is not a valid regular expression"),
        ({"revisit_rules": ("/a/=often",)}, "'often' is not a duration"),
        ({"revisit_schedule": "weekly"}, "one of adaptive, fixed"),
    ],
)
def test_a_bad_revisit_setting_is_one_line_naming_it(values: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("[", r"\[")):
        load_config(values, environ={})


def test_a_bad_revisit_table_in_toml_names_the_file(tmp_path: Path) -> None:
    toml = tmp_path / "crawl.toml"
    toml.write_text('[[revisit]]\npattern = "/news/"\nweight = 3\n')
    with pytest.raises(ConfigError, match=r"pattern .* and every .*crawl\.toml"):
        read_toml(toml)


# --- a shard's schedule ---------------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def revisit(url: str, due: float, interval: float = 60.0) -> UrlEntry:
    return UrlEntry(url, 1, None, known=Known('"e"', None, "ab" * 32, "<urn:uuid:1>", "2026-01-01T00:00:00Z",
                                              interval=interval, due=due))  # fmt: skip


@pytest.fixture(params=["memory", "lmdb", "none"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> QueueStore | None:
    if request.param == "none":
        return None
    return MemoryQueueStore() if request.param == "memory" else LmdbQueueStore(tmp_path / "q")


def test_the_schedule_gives_urls_back_only_when_due_earliest_first(store: QueueStore | None) -> None:
    due = DueQueue(store)
    due.add([revisit(f"http://a/{i}", 1000.0 + 10 * (9 - i)) for i in range(10)])
    assert due.count == 10 and due.best() == 1000.0
    assert due.take_due(999.0, 100) == []
    assert [e.url for e in due.take_due(1035.0, 100)] == ["http://a/9", "http://a/8", "http://a/7", "http://a/6"]
    assert [e.url for e in due.take_due(2000.0, 2)] == ["http://a/5", "http://a/4"]  # (a bound per call)
    assert due.count == 4 and due.best() == 1060.0
    # (counted by the minute of their due time: 1060 and 1070 in one, 1080 and 1090 in the next)
    assert [due.due_within(1000.0, s) for s in (0.0, 60.0, 80.0, 3600.0)] == [0, 2, 4, 4]


def shard(clock: Clock, store: QueueStore | None) -> FrontierShard:
    settings = FrontierSettings(policy=DelayPolicy(delay=1.0, delay_factor=0.0), workbench=4 if store else 0,
                                run_length=1, first_slot_spread=0.0)  # fmt: skip
    return FrontierShard(0, settings, clock=clock, store=store)


def answer(frontier: FrontierShard, clock: Clock) -> list[str]:
    """Lease what is due, answer it (robots.txt: none, 404), and return the page URLs leased."""
    pages = []
    for lease in frontier.lease(100):
        frontier.ack([Ack(lease.lease_id, 404 if lease.kind == "robots" else 200, clock.now, 0.01, False)])
        if lease.kind == "page":
            pages.append(lease.url)
    return pages


def test_a_scheduled_url_waits_for_its_time_then_its_host_s_delay(store: QueueStore | None) -> None:
    clock = Clock()
    frontier = shard(clock, store)
    frontier.push([UrlEntry("http://a.test/", 0)])
    answer(frontier, clock)  # (robots.txt)
    clock.now += 1.0
    assert answer(frontier, clock) == ["http://a.test/"]
    frontier.schedule([(revisit("http://a.test/", clock.now + 30.0), None),
                       (revisit("http://a.test/x", clock.now + 30.0), None)])  # fmt: skip
    assert frontier.scheduled == 2 and frontier.queued == 0
    assert frontier.next_due() == clock.now + 30.0
    clock.now += 29.0
    assert answer(frontier, clock) == []
    clock.now += 1.0
    assert answer(frontier, clock) == ["http://a.test/"]  # (due: into the host's queue, paced by its delay)
    assert frontier.scheduled == 0 and frontier.queued == 1
    clock.now += 0.5
    assert answer(frontier, clock) == []
    clock.now += 0.5
    assert answer(frontier, clock) == ["http://a.test/x"]
    assert frontier.counters["revisits_due"] == 2 and frontier.summary()["scheduled"] == 0


def test_a_drained_revisit_goes_back_to_the_schedule_not_to_a_record() -> None:
    clock = Clock()
    frontier = shard(clock, None)
    frontier.push([UrlEntry("http://a.test/new", 0)])
    frontier.schedule([(revisit("http://a.test/old", clock.now), None)])
    frontier.lease(0)  # (due now: moved to its host's queue)
    assert frontier.queued == 2 and frontier.scheduled == 0
    frontier.drain("time limit reached")
    ended = frontier.take_terminals()
    assert [t.entry.url for t in ended] == ["http://a.test/new"]
    assert frontier.scheduled == 1 and frontier.queued == 0


def test_the_schedule_survives_a_checkpoint_in_memory_and_by_the_store_s_log(tmp_path: Path) -> None:
    clock = Clock()
    for kind in ("memory", "logged"):
        logged = LoggedQueueStore(MemoryQueueStore()) if kind == "logged" else None
        frontier = shard(clock, logged)
        frontier.push([UrlEntry("http://a.test/", 0)])
        frontier.schedule([(revisit(f"http://a.test/{i}", clock.now + i), None) for i in range(1, 6)])
        frontier.lease(0)
        saved = json.loads(json.dumps(frontier.snapshot(stored_rows=logged is None)))
        again_store = None
        if logged is not None:
            again_store = MemoryQueueStore()
            replay(again_store, logged.take_log())
        again = shard(clock, again_store)
        again.restore(saved)
        assert again.scheduled == 5 and again.schedule_summary(clock.now)["due_within_hour"] == 5, kind
        clock.now += 3.0
        assert sorted(e.url for e in again.queues.due.take_due(clock.now, 100)) == ["http://a.test/1", "http://a.test/2",
                                                                             "http://a.test/3"], kind  # fmt: skip


class RefusingStore(MemoryQueueStore):
    """A store whose disk fills up when told to."""

    def __init__(self) -> None:
        super().__init__()
        self.refuse = False

    def push(self, items: list[tuple[str, float, bytes]]) -> None:  # type: ignore[override]
        if self.refuse:
            raise QueueStoreFull("disk full")
        super().push(items)


def test_a_full_store_under_the_schedule_loses_nothing_and_says_so() -> None:
    clock = Clock()
    store = RefusingStore()
    frontier = shard(clock, store)
    frontier.schedule([(revisit("http://a.test/1", clock.now + 10), None)])
    store.refuse = True
    frontier.schedule(
        [(revisit("http://a.test/2", clock.now + 5), None), (revisit("http://a.test/3", clock.now + 20), None)]
    )
    assert frontier.store_full == "disk full" and frontier.scheduled == 3
    assert frontier.next_due() == clock.now + 5
    saved = json.loads(json.dumps(frontier.snapshot(stored_rows=True)))
    again = shard(clock, MemoryQueueStore())
    again.restore(saved)
    clock.now += 30
    assert [e.url for e in again.queues.due.take_due(clock.now, 10)] == [
        "http://a.test/2",
        "http://a.test/1",
        "http://a.test/3",
    ]
    assert [e.url for e in frontier.queues.due.take_due(clock.now, 10)] == [
        "http://a.test/2",
        "http://a.test/1",
        "http://a.test/3",
    ]


def test_an_operator_sees_a_continuous_crawl_s_freshness_and_each_host_s_change_rate() -> None:
    from raycrawl.operate import _host_lines, _status_line
    from raycrawl.progress import status_line

    status = {"state": "running", "pages": 40, "queued": 0, "scheduled": 12, "due_within_hour": 12,
              "freshness_lag_s": 0.4}  # fmt: skip
    assert "scheduled 12, due within hour 12, freshness lag s 0.4" in _status_line("news", status)
    assert "scheduled 12  lag 0.4s" in status_line(status)
    rows = [{"host": "a.test", "queued": 0, "in_flight": 0, "requests": 9, "delay": 1.0, "revisits": 8,
             "change_rate": 0.25, "interval": 5400.0, "paused": None, "closed": None}]  # fmt: skip
    header, line = _host_lines(rows)
    assert header.split()[-4:] == ["revisits", "changed", "interval", "state"]
    assert line.split()[-4:] == ["8", "25%", "90m", "ok"]
