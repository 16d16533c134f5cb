"""FrontierShard without Ray: a fake clock drives politeness, robots and retries."""

import itertools
from dataclasses import fields

from raycrawl.core.frontier import FrontierShard
from raycrawl.core.frontier_settings import FrontierSettings
from raycrawl.core.politeness import DelayPolicy
from raycrawl.core.records import Ack, Lease, UrlEntry

POLICY_KEYS = {f.name for f in fields(DelayPolicy)}


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def robots_ok(shard: FrontierShard, lease: Lease, body: bytes = b"", status: int = 404, at: float = 0.0) -> None:
    assert lease.kind == "robots"
    shard.ack([Ack(lease.lease_id, status, at, 0.001, False, None, body)])


def make(clock: FakeClock, **kw: object) -> FrontierShard:
    """A shard; DelayPolicy keys go to its policy (latency-driven delay off unless asked for)."""
    policy = {"delay_factor": 0.0} | {k: v for k, v in kw.items() if k in POLICY_KEYS}
    rest = {k: v for k, v in kw.items() if k not in POLICY_KEYS}
    return FrontierShard(0, FrontierSettings(policy=DelayPolicy(**policy), **rest), clock=clock)  # type: ignore[arg-type]


def test_robots_first_then_pages_paced_by_delay() -> None:
    clock = FakeClock()
    shard = make(clock, delay=2.0)
    shard.push([UrlEntry("http://a.test/1", 0), UrlEntry("http://a.test/2", 1)])
    (robots,) = shard.lease(10)
    assert robots.url == "http://a.test/robots.txt"
    assert shard.lease(10) == []  # pages wait for robots.txt
    robots_ok(shard, robots, at=clock.now)
    assert shard.lease(10) == []  # the robots request counts: next slot is 2 s after it
    clock.now += 2.0
    (page,) = shard.lease(10)
    assert page.url == "http://a.test/1" and page.not_before == clock.now
    clock.now += 0.5
    shard.ack([Ack(page.lease_id, 200, clock.now, 0.5, False)])
    assert shard.lease(10, horizon=1.0) == []
    clock.now += 1.5
    (page2,) = shard.lease(10, horizon=1.0)
    # leased early within the horizon, but not to be sent before the host's slot
    assert page2.not_before == 1000.0 + 2.0 + 0.5 + 2.0


def test_one_lease_per_host_and_many_hosts_per_batch() -> None:
    clock = FakeClock()
    shard = make(clock, delay=1.0)
    hosts = [f"h{i}.test" for i in range(5)]
    shard.push([UrlEntry(f"http://{h}/{j}", 0) for h in hosts for j in range(3)])
    leases = shard.lease(100)
    assert sorted(lease.url for lease in leases) == sorted(f"http://{h}/robots.txt" for h in hosts)
    for lease in leases:
        robots_ok(shard, lease, at=clock.now)
    assert shard.lease(100) == []
    clock.now += 1.0
    pages = shard.lease(100)
    assert len(pages) == 5 and len({p.url.split("/")[2] for p in pages}) == 5
    assert shard.queued == 10 and shard.leased == 5


def test_hosts_met_together_get_their_first_slots_spread_over_the_delay() -> None:
    clock = FakeClock()
    shard = make(clock, delay=0.25, first_slot_spread=1.0)
    hosts = [f"h{i}.test" for i in range(40)]
    shard.push([UrlEntry(f"http://{h}/", 0) for h in hosts])
    slots = sorted(lease.not_before - clock.now for lease in shard.lease(100, horizon=1.0))
    assert len(slots) == 40 and slots[0] == 0.0 and slots[-1] < 0.25  # within one delay, never later
    assert min(b - a for a, b in itertools.pairwise(slots)) > 0.25 / 40 / 3  # no two together
    # a long delay spreads over at most `first_slot_spread`; no delay, no wait
    slow, fast = make(clock, delay=30.0, first_slot_spread=1.0), make(clock, delay=0.0, first_slot_spread=1.0)
    for shard in (slow, fast):
        shard.push([UrlEntry(f"http://{h}/", 0) for h in hosts])
    assert max(lease.not_before for lease in slow.lease(100, horizon=5.0)) - clock.now < 1.0
    assert {lease.not_before for lease in fast.lease(100)} == {clock.now}


def test_robots_disallow_ends_urls_without_request() -> None:
    clock = FakeClock()
    shard = make(clock, delay=0.0)
    shard.push([UrlEntry("http://a.test/private/x", 1), UrlEntry("http://a.test/ok", 1)])
    (robots,) = shard.lease(10)
    robots_ok(shard, robots, b"User-agent: *\nDisallow: /private/\n", status=200)
    terminals = shard.take_terminals()
    assert [(t.entry.url, t.outcome) for t in terminals] == [("http://a.test/private/x", "robots_denied")]
    shard.push([UrlEntry("http://a.test/private/y", 2)])
    assert [t.outcome for t in shard.take_terminals()] == ["robots_denied"]
    (page,) = shard.lease(10)
    assert page.url == "http://a.test/ok"


def test_crawl_delay_raises_host_delay_up_to_cap() -> None:
    clock = FakeClock()
    shard = make(clock, delay=0.5, max_crawl_delay=3.0)
    shard.push([UrlEntry("http://a.test/1", 0), UrlEntry("http://a.test/2", 0)])
    (robots,) = shard.lease(1)
    robots_ok(shard, robots, b"User-agent: *\nCrawl-delay: 10\n", status=200, at=clock.now)
    assert shard.host_table()[0]["delay"] == 3.0


def test_robots_unavailable_blocks_then_retries_then_gives_up() -> None:
    clock = FakeClock()
    shard = make(clock, delay=0.0, max_attempts=2, backoff_base=10.0)
    shard.push([UrlEntry("http://a.test/1", 0)])
    (r1,) = shard.lease(1)
    shard.ack([Ack(r1.lease_id, 503, clock.now, 0.0, True)])
    assert shard.lease(10) == []  # disallow all for now
    clock.now += 15.0
    (r2,) = shard.lease(10)
    assert r2.kind == "robots"
    shard.ack([Ack(r2.lease_id, None, clock.now, 0.0, True, "ClientConnectorError")])
    (t,) = shard.take_terminals()
    assert t.outcome == "error" and t.detail == "robots.txt unreachable (ClientConnectorError)"
    assert shard.queued == 0 and shard.leased == 0


def test_transient_errors_retry_with_backoff_then_end() -> None:
    clock = FakeClock()
    shard = make(clock, delay=0.0, max_attempts=3, backoff_base=1.0)
    shard.push([UrlEntry("http://a.test/1", 0)])
    robots_ok(shard, shard.lease(1)[0])
    gaps = []
    for attempt in range(3):
        (page,) = shard.lease(1, horizon=100.0)
        gaps.append(page.not_before - clock.now)
        clock.now = page.not_before
        reply = shard.ack([Ack(page.lease_id, 503, clock.now, 0.0, True)])
        assert reply.retried == ([page.lease_id] if attempt < 2 else [])
    assert gaps[0] == 0.0 and 1.0 <= gaps[1] < 1.5 and 2.0 <= gaps[2] < 3.0  # exponential, with jitter
    assert shard.queued == 0 and shard.leased == 0


def test_released_lease_is_requeued_and_stale_ack_ignored() -> None:
    clock = FakeClock()
    shard = make(clock, delay=0.0, lease_ttl=30.0)
    shard.push([UrlEntry("http://a.test/1", 0)])
    robots_ok(shard, shard.lease(1)[0])
    (page,) = shard.lease(1)
    shard.release([page.lease_id])
    assert shard.queued == 1 and shard.leased == 0
    (again,) = shard.lease(1, horizon=5.0)  # a released URL is retried after a backoff
    assert again.url == page.url and again.attempts == 1 and again.not_before >= clock.now + 1.0
    clock.now += 40
    (third,) = shard.lease(1, horizon=10.0)  # the expired lease is handed out again
    assert third.url == page.url and third.attempts == 2 and shard.counters["lease_expiries"] == 1
    assert shard.ack([Ack(again.lease_id, 200, clock.now, 0.0, False)]).stale == [again.lease_id]


def test_queue_bounds_shed_with_a_record() -> None:
    clock = FakeClock()
    shard = make(clock, max_queue_per_host=2, max_queue_total=3)
    shard.push([UrlEntry(f"http://a.test/{i}", 0) for i in range(3)] + [UrlEntry("http://b.test/", 0)] * 2)
    shed = shard.take_terminals()
    assert [t.detail for t in shed] == ["per-host queue full", "frontier full"]
    assert shard.queued == 3
    assert shard.counters["shed_host_queue"] == 1 and shard.counters["shed_frontier_full"] == 1


def test_priority_is_depth_first_by_default_and_pluggable() -> None:
    clock = FakeClock()
    shard = make(clock, delay=0.0)
    shard.push([UrlEntry("http://a.test/deep", 3), UrlEntry("http://a.test/shallow", 1)])
    robots_ok(shard, shard.lease(1)[0])
    assert shard.lease(1)[0].url == "http://a.test/shallow"

    by_len = FrontierShard(0, FrontierSettings(policy=DelayPolicy(delay=0.0)), score=lambda e: -len(e.url), clock=clock)
    by_len.push([UrlEntry("http://a.test/s", 0), UrlEntry("http://a.test/longest", 0)])
    robots_ok(by_len, by_len.lease(1)[0])
    assert by_len.lease(1)[0].url == "http://a.test/longest"


def test_drain_ends_everything_queued() -> None:
    clock = FakeClock()
    shard = make(clock)
    shard.push([UrlEntry(f"http://a.test/{i}", 0) for i in range(4)])
    shard.drain("max-pages reached")
    assert {t.outcome for t in shard.take_terminals()} == {"out_of_budget"}
    assert shard.queued == 0 and shard.lease(10) == []


def test_per_host_concurrency() -> None:
    clock = FakeClock()
    shard = make(clock, delay=0.0, per_host_concurrency=3)
    shard.push([UrlEntry(f"http://a.test/{i}", 0) for i in range(10)])
    robots_ok(shard, shard.lease(5)[0])
    assert len(shard.lease(10)) == 3


def test_quota_split_never_exceeds_total() -> None:
    from raycrawl.core.batching import split_quota

    assert split_quota(5, 2, 0) == [3, 2]
    assert split_quota(5, 2, 1) == [2, 3]
    assert split_quota(1, 3, 0, first=[2]) == [0, 0, 1]  # spare capacity to the shard whose host scores best
    assert split_quota(5, 3, 0, first=[2, 1]) == [1, 2, 2]
    assert split_quota(1, 4, 2) == [0, 0, 1, 0]
    assert sum(split_quota(97, 7, 3)) == 97


def test_snapshot_restore_keeps_queue_leases_and_host_state() -> None:
    import json

    clock = FakeClock()
    shard = make(clock, delay=1.0, pause_after=2)
    shard.push([UrlEntry(f"http://a.test/{i}", 1, "http://a.test/") for i in range(4)])
    shard.push([UrlEntry("http://b.test/private/x", 0), UrlEntry("http://b.test/ok", 0)])
    for lease in shard.lease(10):  # robots.txt for both hosts
        robots_ok(shard, lease, b"User-agent: *\nDisallow: /private/\nCrawl-delay: 2\n", status=200, at=clock.now)
    shard.take_terminals()
    clock.now += 5
    leased = shard.lease(10)  # one URL of each host is now leased (held by a fetch task)
    assert len(leased) == 2
    shard.pause_host("b.test", "by hand")
    data = json.loads(json.dumps(shard.snapshot()))  # the snapshot is plain data

    restored = make(clock, delay=1.0, pause_after=2)
    restored.restore(data)
    assert restored.queued == 5  # 3 + 1 queued, and the 2 leased ones are queued again
    assert restored.lease(10, horizon=1.9) == []  # a restored host waits its delay (2 s), as if just hit
    rows = {r["host"]: r for r in restored.host_table()}
    assert rows["a.test"]["delay"] == 2.0 and rows["a.test"]["robots"] == "parsed"
    assert rows["b.test"]["paused"] == "by hand"
    restored.push([UrlEntry("http://a.test/private/y", 2)])  # the robots cache came back parsed
    assert [t.outcome for t in restored.take_terminals()] == ["robots_denied"]
    clock.now += 10
    again = restored.lease(10)
    assert len(again) == 1 and again[0].url.startswith("http://a.test/")  # b.test is paused
    assert again[0].lease_id > max(x.lease_id for x in leased)  # lease ids never repeat across a restore


def test_summary_counts_hosts_ready_waiting_and_paused() -> None:
    clock = FakeClock()
    shard = make(clock, delay=2.0)
    hosts = ("ready", "clock", "paused", "idle", "answer")
    shard.push([UrlEntry(f"http://{h}.test/{i}", 0) for h in hosts for i in range(1 if h == "idle" else 2)])
    for robots in shard.lease(10):  # robots.txt for all five, answered now
        robots_ok(shard, robots, at=clock.now)
    clock.now += 2.0
    leases = {lease.url.split("/")[2].split(".")[0]: lease for lease in shard.lease(10)}
    assert set(leases) == set(hosts)
    # "ready", "paused" (then paused) and "idle" (nothing left) answer at once; "clock" answers 2 s later, so
    # then its next slot is 2 s away while the others' has come; "answer" is never answered.
    for host in ("ready", "paused", "idle"):
        shard.ack([Ack(leases[host].lease_id, 200, clock.now, 0.1, False)])
    clock.now += 2.0
    shard.ack([Ack(leases["clock"].lease_id, 200, clock.now, 0.1, False)])
    shard.pause_host("paused.test")
    summary = shard.summary()
    assert summary["hosts"] == 5
    assert summary["hosts_ready"] == 1  # ready
    assert summary["hosts_waiting"] == 2  # clock (its slot), answer (its answer)
    assert summary["hosts_paused_now"] == 1  # paused; idle is none of these


def test_idle_hosts_whose_robots_txt_expired_are_forgotten_and_start_anew() -> None:
    from raycrawl.core.frontier import EVICT_EVERY

    clock = FakeClock()
    shard = make(clock, delay=1.0, robots_ttl=EVICT_EVERY)
    shard.push(
        [UrlEntry("http://idle.test/1", 0), UrlEntry("http://busy.test/1", 0), UrlEntry("http://busy.test/2", 0)]
    )
    for robots in shard.lease(10):
        robots_ok(shard, robots, at=clock.now)
    clock.now += 1.0
    pages = shard.lease(10)
    shard.ack([Ack(p.lease_id, 200, clock.now, 0.01, False) for p in pages])
    assert shard.summary()["hosts"] == 2
    clock.now += EVICT_EVERY / 2
    assert shard.evict_idle() == 0  # not yet time to look
    clock.now += EVICT_EVERY
    # idle.test: nothing queued, robots.txt expired -> forgotten; busy.test still has a URL queued -> kept.
    assert shard.evict_idle() == 1 and shard.summary()["hosts"] == 1
    assert shard.counters["hosts_evicted"] == 1
    shard.push([UrlEntry("http://idle.test/2", 1)])  # seen again: robots.txt first, as for a new host
    assert {lease.url for lease in shard.lease(10)} >= {"http://idle.test/robots.txt"}


def test_robots_sitemap_lines_become_sitemap_links_fetched_as_sitemaps_within_a_bound() -> None:
    clock = FakeClock()
    shard = make(clock, delay=0.0, max_pages_per_host=1, max_sitemaps_per_host=2)
    shard.push([UrlEntry("http://a.test/", 0)])
    (robots,) = shard.lease(10)
    assert shard.take_discovered() == []
    body = b"User-agent: *\nDisallow: /private/\nSitemap: http://a.test/s.xml\nSitemap: http://a.test/private/t.xml\n"
    robots_ok(shard, robots, body, status=200, at=clock.now)
    links = shard.take_discovered()
    assert [(url, depth, parent, kind) for url, depth, parent, _, _, kind, _ in links] == [
        ("http://a.test/s.xml", 0, "http://a.test/robots.txt", "sitemap"),
        ("http://a.test/private/t.xml", 0, "http://a.test/robots.txt", "sitemap"),
    ]
    sitemaps = [UrlEntry(f"http://a.test/s{i}.xml", 0, None, 0, (), None, "sitemap") for i in range(3)]
    shard.push([*sitemaps, UrlEntry("http://a.test/private/t.xml", 0, None, 0, (), None, "sitemap")])
    ended = shard.take_terminals()
    # The page budget (1) does not count sitemaps; their own bound (2) ends the third; robots.txt still rules.
    assert [(t.entry.url, t.outcome) for t in ended] == [
        ("http://a.test/s2.xml", "out_of_budget"),
        ("http://a.test/private/t.xml", "robots_denied"),
    ]
    leases = []
    for _ in range(3):
        leases += shard.lease(10)
        for lease in leases[-1:]:
            shard.ack([Ack(lease.lease_id, 200, clock.now, 0.001, False)])
    # sitemaps first (level 0), then the page (depth 0 too, queued first): each leased as what it is
    assert sorted((lease.url, lease.kind) for lease in leases) == [
        ("http://a.test/", "page"), ("http://a.test/s0.xml", "sitemap"), ("http://a.test/s1.xml", "sitemap"),
    ]  # fmt: skip


def test_sitemap_xml_is_tried_on_every_host_when_asked_once_even_if_named() -> None:
    clock = FakeClock()
    for guess, expected in ((False, []), (True, ["http://a.test/sitemap.xml"])):
        shard = make(clock, sitemap_xml=guess)
        shard.push([UrlEntry("http://a.test/", 0)])
        (robots,) = shard.lease(10)
        robots_ok(shard, robots, b"User-agent: *\nDisallow:\n", status=200, at=clock.now)
        assert [link[0] for link in shard.take_discovered()] == expected
    shard = make(clock, sitemap_xml=True)
    shard.push([UrlEntry("http://b.test/", 0)])
    (robots,) = shard.lease(10)
    robots_ok(shard, robots, b"Sitemap: http://b.test/sitemap.xml\n", status=200, at=clock.now)
    assert [link[0] for link in shard.take_discovered()] == ["http://b.test/sitemap.xml"]


def test_a_queued_sitemap_survives_a_snapshot_as_a_sitemap() -> None:
    import json

    clock = FakeClock()
    shard = make(clock)
    entry = UrlEntry("http://a.test/s.xml", 1, "http://a.test/i.xml", 0, (), None, "sitemap")
    shard.push([entry])
    restored = make(clock)
    restored.restore(json.loads(json.dumps(shard.snapshot())))
    clock.now += 10  # (a restored host waits its delay first)
    (robots,) = restored.lease(10)
    robots_ok(restored, robots, at=clock.now)
    clock.now += 10
    (lease,) = restored.lease(10)
    assert (lease.kind, lease.entry) == ("sitemap", entry)


def test_a_checkpoint_from_before_queue_lines_restores() -> None:
    """Checkpoints once saved each host's queue as a list of rows (UrlEntry.to_row); now as lines."""
    clock = FakeClock()
    shard = make(clock)
    entries = [UrlEntry("http://a.test/1", 1), UrlEntry("http://a.test/2", 2, redirects=("http://a.test/r",))]
    shard.push(entries)
    saved = shard.snapshot()
    for host in saved["hosts"]:
        host["queue"] = [e.to_row() for e in entries]
        del host["lines"]
    again = make(clock)
    again.restore(saved)
    assert [h["lines"] for h in again.snapshot()["hosts"]] == [h["lines"] for h in shard.snapshot()["hosts"]]


def test_a_stored_block_that_robots_txt_forbids_entirely_does_not_strand_the_urls_behind_it() -> None:
    # (CI: a resumed crawl never ended -- a host whose refill was all denied left its workbench empty with URLs
    # still stored, and an empty workbench is never scheduled)
    from raycrawl.core.queue_store import MemoryQueueStore

    clock = FakeClock()
    settings = FrontierSettings(policy=DelayPolicy(delay=0.0, delay_factor=0.0), workbench=4)
    shard = FrontierShard(0, settings, clock=clock, store=MemoryQueueStore())
    ok = [f"http://a.test/ok/{i}" for i in range(4)]
    private = [f"http://a.test/private/{i}" for i in range(9)]
    late = [f"http://a.test/late/{i}" for i in range(3)]
    for urls, depth in ((ok, 1), (private, 2), (late, 3)):  # (one push each: blocks of one score)
        shard.push([UrlEntry(url, depth) for url in urls])
    (robots,) = shard.lease(10)
    robots_ok(shard, robots, b"User-agent: *\nDisallow: /private/\n", status=200)
    fetched: list[str] = []
    for _ in range(50):
        leases = shard.lease(10)
        if not leases:
            break
        fetched += [lease.url for lease in leases]
        shard.ack([Ack(lease.lease_id, 200, clock.now, 0.001, False) for lease in leases])
    denied = [t.entry.url for t in shard.take_terminals() if t.outcome == "robots_denied"]
    assert sorted(fetched) == sorted(ok + late) and sorted(denied) == sorted(private)
    assert shard.queued == 0


class _FillingStore:
    """A store in memory that refuses every write once ``full`` is set (a disk that filled up)."""

    def __init__(self) -> None:
        from raycrawl.core.queue_store import MemoryQueueStore

        self.inner = MemoryQueueStore()
        self.full = False

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def push(self, items: object) -> None:
        self._refuse()
        self.inner.push(items)  # type: ignore[arg-type]

    def put_back(self, items: object) -> None:
        self._refuse()
        self.inner.put_back(items)  # type: ignore[arg-type]

    def _refuse(self) -> None:
        from raycrawl.core.queue_store import QueueStoreFull

        if self.full:
            raise QueueStoreFull("the disk is full")


def test_a_checkpoint_taken_as_the_store_fills_up_keeps_every_url_and_the_resume_ends() -> None:
    # (CI: a crawl stopped by a full disk resumed and never ended; the lines the store refused at the last
    # checkpoint's flush were counted as stored and saved nowhere)
    from raycrawl.core.queue_store import MemoryQueueStore

    for stored_rows in (True, False):
        clock = FakeClock()
        settings = FrontierSettings(policy=DelayPolicy(delay=0.0, delay_factor=0.0), workbench=8)
        store = _FillingStore()
        shard = FrontierShard(0, settings, clock=clock, store=store)  # type: ignore[arg-type]
        urls = [f"http://h{h}.test/{n}" for h in range(3) for n in range(30)]
        for url in urls:  # (one a call: lines wait to make whole blocks)
            shard.push([UrlEntry(url, 1)])
        store.full = True
        snapshot = shard.snapshot(stored_rows=stored_rows)
        again_store = MemoryQueueStore()
        if not stored_rows:  # (what the log replays: the rows the store took)
            again_store.push(list(store.inner.items()))
        again = FrontierShard(0, settings, clock=clock, store=again_store)
        again.restore(snapshot)
        assert again.queued == len(urls)
        fetched: list[str] = []
        for _ in range(200):
            leases = again.lease(50)
            if not leases:
                break
            fetched += [lease.url for lease in leases if lease.kind == "page"]
            again.ack(
                [
                    Ack(lease.lease_id, 404 if lease.kind == "robots" else 200, clock.now, 0.001, False)
                    for lease in leases
                ]
            )
        assert sorted(fetched) == sorted(urls) and again.queued == 0, stored_rows


def test_urls_a_checkpoint_counts_as_stored_that_the_store_lacks_are_counted_missing_not_waited_for() -> None:
    clock = FakeClock()
    settings = FrontierSettings(policy=DelayPolicy(delay=0.0, delay_factor=0.0), workbench=4)
    from raycrawl.core.queue_store import MemoryQueueStore

    shard = FrontierShard(0, settings, clock=clock, store=MemoryQueueStore())
    shard.push([UrlEntry(f"http://a.test/{n}", 1) for n in range(20)])
    snapshot = shard.snapshot(stored_rows=False)  # (and no log replayed into the new store)
    again = FrontierShard(0, settings, clock=clock, store=MemoryQueueStore())
    again.restore(snapshot)
    for _ in range(20):
        leases = again.lease(50)
        if not leases:
            break
        again.ack(
            [Ack(lease.lease_id, 404 if lease.kind == "robots" else 200, clock.now, 0.001, False) for lease in leases]
        )
    assert again.queued == 0 and again.counters["stored_missing"] == 20 - 4  # (the workbench's 4 were saved)


def test_a_host_gives_at_most_its_accepted_budget_and_a_resume_with_a_larger_one_goes_on() -> None:
    """Issue 47: --max-accepted-per-host. No more pages of a host are out than could still be accepted (a run
    too), the rest are held once the budget is met, and a shard restored with a larger budget admits them."""
    clock = FakeClock()
    shard = make(clock, delay=0.0, run_length=8, max_accepted_per_host=3)
    shard.push([UrlEntry(f"http://a.test/{i}", 0) for i in range(10)])
    robots_ok(shard, *shard.lease(10), at=clock.now)
    leased = shard.lease(10, horizon=1.0)
    assert len(leased) == 3  # (a run of 8 would fit: cut to the budget)
    shard.ack([Ack(leased[0].lease_id, 200, clock.now, 0.01, False, accepted=False)])  # (rejected: does not count)
    shard.ack([Ack(lease.lease_id, 200, clock.now, 0.01, False, accepted=True) for lease in leased[1:]])
    (one_more,) = shard.lease(10, horizon=1.0)  # one acceptance left in the budget: one page out
    shard.ack([Ack(one_more.lease_id, 200, clock.now, 0.01, False, accepted=True)])
    assert shard.lease(10, horizon=1.0) == [] and shard.queued == 0 and shard.held == 6
    shard.push([UrlEntry("http://a.test/late", 1)])  # a link found later waits with them
    assert shard.held == 7 and shard.take_terminals() == []
    saved = shard.snapshot()
    larger = make(clock, delay=0.0, run_length=1, max_accepted_per_host=5)
    larger.restore(saved)
    assert larger.held == 0 and larger.queued == 7
    leased = larger.lease(10, horizon=1.0) + larger.lease(10, horizon=1.0)
    assert len(leased) == 1  # (one at a time without runs; and never more than 2 can still be accepted)
    ending = make(clock, delay=0.0, max_accepted_per_host=1, hold_over_budget=False)  # --leftovers record
    ending.push([UrlEntry(f"http://b.test/{i}", 0) for i in range(3)])
    robots_ok(ending, *ending.lease(10), at=clock.now)
    (page,) = ending.lease(10)
    ending.ack([Ack(page.lease_id, 200, clock.now, 0.01, False, accepted=True)])
    assert [(t.outcome, t.detail) for t in ending.take_terminals()] == [("out_of_budget", "max_accepted_per_host")] * 2
