"""A shard's work without Ray (core/shard_work.py, core/link_routing.py): results settled straight from a fetch
task, their links through the seen-set partitions to the shards that own their hosts, and a partition rebuilt
exactly after it died with links on their way."""

from __future__ import annotations

import dataclasses
from typing import Any

from raycrawl.core.frontier_settings import FrontierSettings
from raycrawl.core.link_routing import PartitionShare, all_delivered
from raycrawl.core.politeness import DelayPolicy
from raycrawl.core.records import FetchResult, Lease, UrlEntry, WarcSpan
from raycrawl.core.seen import ExactSeenSet
from raycrawl.core.settle import RecordRules
from raycrawl.core.shard_work import ShardSetup, ShardWork
from raycrawl.core.sharding import shard_for
from raycrawl.core.traps import TrapRules
from raycrawl.core.urls import fingerprint


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def setup(shards: int = 2, partitions: int = 2, **rules: Any) -> ShardSetup:
    return ShardSetup(
        frontier=FrontierSettings(policy=DelayPolicy(delay=0.0, delay_factor=0.0)),
        records=RecordRules(**rules),
        traps=TrapRules(),
        scope="any",
        seeds=(),
        allow=(),
        deny=(),
        shards=shards,
        partitions=partitions,
    )


def url_of_shard(shard: int, shards: int = 2, path: str = "/") -> str:
    host = next(f"h{i}.test" for i in range(100) if shard_for(f"h{i}.test", shards) == shard)
    return f"http://{host}{path}"


def work(shard: int = 0, **kw: Any) -> tuple[ShardWork, list[dict[str, Any]], FakeClock]:
    records: list[dict[str, Any]] = []
    clock = FakeClock()
    return ShardWork(shard, setup(**kw), records.extend, clock=clock), records, clock


class Partitions:
    """Seen-set partitions in process, as the shard actor asks them."""

    def __init__(self, n: int) -> None:
        self.sets = [ExactSeenSet() for _ in range(n)]

    def ask(self, p: int, share: PartitionShare) -> bytes:
        return bytes(self.sets[p].add_new(share.fingerprints))


def route(w: ShardWork, shares: dict[int, PartitionShare], seen: Partitions) -> dict[int, list[UrlEntry]]:
    out: dict[int, list[UrlEntry]] = {}
    for p, share in shares.items():
        for owner, entries in w.answered(p, share, seen.ask(p, share)).items():
            out.setdefault(owner, []).extend(entries)
    return out


def page_result(lease: Lease, outlinks: list[str], status: int = 200, **kw: Any) -> FetchResult:
    r = FetchResult(lease=lease, status=status, outlinks=outlinks, responded_at=1000.0, ended_at=1000.0, **kw)
    r.content_type, r.size, r.sha256 = "text/html", 10, "0" * 64
    return r


def lease_page(w: ShardWork, url: str, batch: int = 1) -> Lease:
    """Queue ``url`` here, answer its host's robots.txt (404: allow all), and lease the page."""
    w.receive([UrlEntry(url, 0)], w.shard_id)
    leases, _ = w.lease(10, 0.0, None, batch)
    (robots,) = leases
    assert robots.kind == "robots"
    w.settle([FetchResult(lease=robots, status=404, responded_at=1000.0, ended_at=1000.0)])
    (page,), _ = w.lease(10, 0.0, None, batch + 1)
    return page


def test_a_settled_page_is_recorded_and_its_links_go_to_their_owners_once() -> None:
    w, records, _ = work(0)
    seen = Partitions(2)
    page = lease_page(w, url_of_shard(0))
    mine, theirs = url_of_shard(0, path="/a"), url_of_shard(1, path="/b")
    span = WarcSpan("node-1", "f.warc.gz", 10, 10, 90)
    w.settle([page_result(page, [mine, theirs, theirs], warc=span)])
    out = route(w, w.take_shares(), seen)
    assert [r["url"] for r in records] == [page.url] and records[0]["outcome"] == "fetched"
    assert [e.url for e in out[1]] == [theirs] and 0 not in out  # shard 0's own link is queued here
    assert w.frontier.queued == 1
    assert w.take_output().spans == [span]
    # The same links again (another page): the seen-set has them.
    page2 = w.lease(10, 0.0, None, 9)[0][0]
    w.settle([page_result(page2, [mine, theirs])])
    assert route(w, w.take_shares(), seen) == {}
    _, s = w.lease(0, 0.0, None, 10)
    assert s.stats.events["duplicate_links"] == 2 and s.sent == [1, 1] and s.received == [2, 0]


def test_a_link_the_seen_set_answered_for_is_a_duplicate_without_asking_it_again() -> None:
    w, _, _ = work(0)
    seen = Partitions(2)
    page = lease_page(w, url_of_shard(0))
    mine, theirs, later = url_of_shard(0, path="/a"), url_of_shard(1, path="/b"), url_of_shard(1, path="/c")
    w.settle([page_result(page, [mine, theirs])])
    route(w, w.take_shares(), seen)
    page2 = w.lease(10, 0.0, None, 9)[0][0]
    w.settle([page_result(page2, [theirs, later, mine])])
    shares = w.take_shares()
    assert [e.url for share in shares.values() for e in share.entries] == [later]  # (only the one never asked)
    assert [e.url for e in route(w, shares, seen)[1]] == [later]
    _, s = w.lease(0, 0.0, None, 10)
    assert s.stats.events["duplicate_links"] == 2


def test_with_expiring_marks_every_link_is_asked_again() -> None:
    w = ShardWork(0, dataclasses.replace(setup(), seen_ttl=3600.0), [].extend, clock=FakeClock())
    page = lease_page(w, url_of_shard(0))
    mine, theirs = url_of_shard(0, path="/a"), url_of_shard(1, path="/b")
    w.settle([page_result(page, [mine, theirs])])
    route(w, w.take_shares(), Partitions(2))
    page2 = w.lease(10, 0.0, None, 9)[0][0]
    w.settle([page_result(page2, [theirs])])
    assert [e.url for share in w.take_shares().values() for e in share.entries] == [theirs]  # (its mark may expire)


def test_stale_and_retried_results_make_no_record_and_keep_no_warc() -> None:
    w, records, _ = work(0)
    page = lease_page(w, url_of_shard(0))
    span = WarcSpan("node-1", "f.warc.gz", 10, 10, 90)
    retried = page_result(page, [], status=503, transient=True, error="HTTP 503", warc=span)
    w.settle([retried])
    assert w.take_shares() == {} and records == []
    stale = page_result(page, [url_of_shard(1, path="/x")], warc=span)  # (the same lease again: unknown now)
    w.settle([stale])
    assert w.take_shares() == {} and records == []
    out = w.take_output()
    assert out.spans == [] and out.nodes == {"node-1"}  # its buffer is cleaned at the cut all the same
    _, s = w.lease(0, 0.0, None, 5)
    assert s.stats.events["retries"] == 1 and s.stats.events["stale_results"] == 1


def test_a_dead_tasks_batch_goes_back_and_a_finished_one_is_forgotten() -> None:
    w, _, _ = work(0)
    page = lease_page(w, url_of_shard(0), batch=1)
    assert w.frontier.leased == 1
    w.release_batches([2], "fetch task failed")  # (lease_page leased the page in batch 2)
    assert w.frontier.leased == 0 and w.frontier.queued == 1 and w.frontier.counters["released"] == 1
    w.release_batches([2], "again")  # a batch is released once
    assert w.frontier.counters["released"] == 1
    assert page.attempts == 0


def test_robots_disallow_ends_queued_urls_as_records() -> None:
    w, records, _ = work(0)
    url = url_of_shard(0, path="/private/x")
    w.receive([UrlEntry(url, 1)], 0)
    (robots,), _ = w.lease(10, 0.0, None, 1)
    body = b"User-agent: *\nDisallow: /private/\n"
    w.settle([FetchResult(lease=robots, status=200, body=body, responded_at=1000.0, ended_at=1000.0)])
    assert [(r["url"], r["outcome"]) for r in records] == [(url, "robots_denied")]


def test_a_dead_partition_is_rebuilt_exactly_from_every_shards_log() -> None:
    """Shard 0 took link X as new in partition p; the partition died; shard 1 then met it dead with X and Y.
    Rebuilt from the (empty) checkpoint and the shards' logs, the partition knows X: Y alone is new, once."""
    a, _, _ = work(0, partitions=1)
    b, _, _ = work(1, partitions=1)
    seen = Partitions(1)
    x, y = url_of_shard(1, path="/x"), url_of_shard(1, path="/y")
    links_x = [(x, 1, None, (), None, "page", 0.0)]
    a.offer(links_x)
    assert [e.url for e in route(a, a.take_shares(), seen)[1]] == [x]
    seen.sets[0] = ExactSeenSet()  # the partition died: a new, empty one
    b.offer([(x, 1, None, (), None, "page", 0.0), (y, 1, None, (), None, "page", 0.0)])
    for p, share in b.take_shares().items():
        b.router.hold(p, share)  # (its add_new failed)
    _, summary = b.lease(0, 0.0, None, 1)
    assert summary.held == 2 and summary.dead_partitions == [0]
    seen.sets[0].add_new(a.router.log(0) + b.router.log(0))  # the rebuild
    for p, shares in b.router.take_held().items():
        for share in shares:
            assert route(b, {p: share}, seen) == {}  # (both are shard 1's own hosts: queued here)
    assert b.frontier.queued == 1 and b.router.log(0) == [fingerprint(y)]  # y alone, and once
    assert b.router.held == 0


def test_all_delivered_compares_what_each_shard_sent_with_what_the_other_received() -> None:
    assert all_delivered([[1, 2], [0, 5]], [[1, 0], [2, 5]])
    assert not all_delivered([[1, 2], [0, 5]], [[1, 0], [1, 5]])  # one batch from shard 0 to shard 1 is on its way


def test_a_continuous_crawl_s_shard_schedules_pages_again_by_what_they_did_and_renews_their_marks() -> None:
    import dataclasses

    from raycrawl.core.revisit_schedule import RevisitPolicy

    records: list[dict[str, Any]] = []
    clock = FakeClock()
    policy = RevisitPolicy(True, "adaptive", revisit_after=100.0, revisit_min=10.0, revisit_max=1000.0)
    w = ShardWork(0, dataclasses.replace(setup(), revisit=policy, seen_ttl=500.0), records.extend, clock=clock)
    url = url_of_shard(0)
    w._take_hints({url: (None, None, "daily")})  # (its sitemap says it changes daily: bounded to --revisit-max)
    page = lease_page(w, url)
    w.settle([page_result(page, [], etag='"v1"')])
    assert w.frontier.scheduled == 1 and records[-1]["outcome"] == "fetched"
    assert [fp for fps in w.router.take_touches().values() for fp in fps] == [fingerprint(url)]  # (mark renewed)
    (entry,) = w.frontier.queues.due.take_due(float("inf"), 10)
    assert entry.known is not None and entry.known.interval == 1000.0 and entry.known.due == 1000.0 + 1000.0
    assert entry.known.etag == '"v1"'  # (asked for conditionally next time)
    # Its next visit: not modified -> x1.4; then changed -> x0.8 (within the bounds).
    w.frontier.schedule([(dataclasses.replace(entry, known=dataclasses.replace(entry.known, interval=100.0,
                                                                                due=clock.now)), None)])  # fmt: skip
    clock.now += 5.0
    (again,), _ = w.lease(10, 0.0, None, 50)
    w.settle([page_result(again, [], status=304)])
    (entry,) = w.frontier.queues.due.take_due(float("inf"), 10)
    assert records[-1]["outcome"] == "not_modified" and entry.known is not None
    assert entry.known.interval == 140.0
    # A page gone (410) leaves the schedule: its record says so, once.
    w.frontier.schedule([(entry, None)])
    clock.now += 1000.0
    (last,), _ = w.lease(10, 0.0, None, 60)
    w.settle([page_result(last, [], status=410)])
    assert records[-1]["outcome"] == "gone" and w.frontier.scheduled == 0
    host = w.frontier.host_table()[0]
    assert (host["revisits"], host["change_rate"]) == (1, 0.0)


def test_a_revisit_that_waited_past_its_mark_s_expiry_is_renewed_as_it_comes_due_and_not_queued_twice() -> None:
    """A continuous crawl resumed after a stop longer than the seen-set's ttl (or running behind): the pages on
    its schedule are overdue and their marks gone. Each is renewed as it comes due, so a link to it found before
    it is fetched again -- its site's "/" is overdue too -- does not queue it a second time."""
    import dataclasses

    from raycrawl.core.revisit_schedule import RevisitPolicy
    from raycrawl.core.seen_expiry import ExpiringSeenSet

    records: list[dict[str, Any]] = []
    clock = FakeClock()
    ttl, every = 8.0, 6.0
    policy = RevisitPolicy(True, "fixed", revisit_after=every, revisit_min=1.0, revisit_max=every)
    continuous = dataclasses.replace(setup(partitions=1), revisit=policy, seen_ttl=ttl)
    w = ShardWork(0, continuous, records.extend, clock=clock)
    seen = ExpiringSeenSet(ExactSeenSet, ttl, clock)
    home, page = url_of_shard(0), url_of_shard(0, path="/page")
    seen.add_new([fingerprint(home), fingerprint(page)])  # (both found by the crawl)
    first = lease_page(w, page)
    w.settle([page_result(first, [])])
    for fps in w.router.take_touches().values():
        seen.touch(fps)
    assert w.frontier.scheduled == 1

    clock.now += 5 * ttl  # (stopped, or behind: the mark renewed when it was scheduled is gone)
    leases, _ = w.lease(10, 0.0, None, 2)
    assert [lease.entry.url for lease in leases] == [page]
    for fps in w.router.take_touches().values():
        seen.touch(fps)

    clock.now += 0.5
    w.offer([(page, 1, home, (), None, "page", 0.0)])  # its site's "/" links to it
    shares = w.take_shares()
    assert list(shares) == [0]
    assert w.answered(0, shares[0], bytes(seen.add_new(shares[0].fingerprints))) == {}  # (its own host's)
    assert w.frontier.queued == 0 and w.frontier.leased == 1  # (leased once, not queued again)
