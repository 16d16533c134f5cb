"""Sitemap hints without Ray: what ``<priority>`` and ``<lastmod>`` add to a URL's score, a host's sitemaps before its
pages, hints applied to URLs already queued (scored again, or a recrawl's unchanged URL ended without a request),
and the ended URL's record carrying its capture on."""

from __future__ import annotations

from raycrawl.core.frontier import SITEMAP_WAIT, FrontierShard
from raycrawl.core.frontier_settings import FrontierSettings
from raycrawl.core.pages import terminal_record
from raycrawl.core.politeness import DelayPolicy
from raycrawl.core.priority import Priority, by_depth
from raycrawl.core.records import Ack, Known, Lease, UrlEntry
from raycrawl.core.recrawl import recrawl_links
from raycrawl.core.sitemap_hints import FRESH_BONUS, captured_at, score_bonus, unchanged_since_capture
from raycrawl.core.sitemaps import parse_sitemap, sitemap_outlinks

NOW = 1_780_000_000.0
CAPTURE = Known('"e"', None, "ab", "<urn:uuid:c>", "2026-05-28T20:26:40.000000Z")  # = NOW


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


def frontier(clock: Clock) -> FrontierShard:
    settings = FrontierSettings(policy=DelayPolicy(delay=1.0, delay_factor=0.0))
    return FrontierShard(0, settings, Priority().frontier_key(), clock)


def answer(shard: FrontierShard, leases: list[Lease], at: float) -> None:
    shard.ack([Ack(lease.lease_id, 200 if lease.kind == "page" else 404, at, 0.0, False) for lease in leases])


def lease_all(shard: FrontierShard, clock: Clock) -> list[str]:
    """The URLs in the order the host's delay lets them out, one at a time."""
    order = []
    while shard.queued:
        clock.now += 1.0
        leases = shard.lease(10)
        order += [lease.url for lease in leases]
        answer(shard, leases, clock.now)
    return order


def test_a_urlset_says_what_it_knows_of_its_pages_and_an_index_nothing() -> None:
    urlset = (
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<url><loc>http://a.test/new</loc><lastmod>2026-11-30</lastmod><priority>0.9</priority></url>"
        b"<url><loc>http://a.test/plain</loc></url>"
        b"<url><loc>http://a.test/low?utm_source=x</loc><priority>0.1</priority></url>"
        b"<url><loc>http://a.test/daily</loc><changefreq> Daily </changefreq></url>"
        b"<url><loc>http://a.test/odd</loc><changefreq>fortnightly</changefreq></url></urlset>"
    )
    urls, _, hints = sitemap_outlinks(parse_sitemap(urlset), ("utm_*",))
    assert urls == ["http://a.test/new", "http://a.test/plain", "http://a.test/low", "http://a.test/daily",
                    "http://a.test/odd"]  # fmt: skip
    assert hints == {"http://a.test/new": (1795996800.0, 0.9, None), "http://a.test/low": (None, 0.1, None),
                     "http://a.test/daily": (None, None, "daily")}  # fmt: skip
    index = (
        b"<sitemapindex><sitemap><loc>http://a.test/s.xml</loc><lastmod>2026-11-30</lastmod></sitemap></sitemapindex>"
    )
    assert sitemap_outlinks(parse_sitemap(index))[2] == {}


def test_priority_and_freshness_reorder_a_depth_level_never_more() -> None:
    assert score_bonus((None, None), NOW) == score_bonus((None, 0.5), NOW) == 0.0
    assert score_bonus((None, 1.0), NOW) > score_bonus((None, 0.6), NOW) > 0 > score_bonus((None, 0.0), NOW)
    assert score_bonus((NOW, None), NOW) == FRESH_BONUS
    assert score_bonus((NOW - 7 * 86400, None), NOW) == FRESH_BONUS / 2  # (a week's half-life)
    best, worst = score_bonus((NOW, 1.0), NOW), score_bonus((None, 0.0), NOW)
    assert best - worst < 1.0  # under one depth level: breadth-first still holds
    hinted = UrlEntry("http://a.test/x", 2, hint=best)
    assert by_depth(hinted) == 2 - best > by_depth(UrlEntry("http://a.test/y", 1))
    assert Priority.of(["x=1"]).frontier_key()(hinted) == -(-2 + best + 1)


def test_the_recrawl_decision_compares_lastmod_with_the_capture() -> None:
    assert captured_at(CAPTURE) == NOW
    assert unchanged_since_capture((NOW - 1, None), CAPTURE)
    assert not unchanged_since_capture((NOW + 1, None), CAPTURE)  # modified since: fetched again
    assert not unchanged_since_capture((None, 0.9), CAPTURE)  # no lastmod: fetched
    assert not unchanged_since_capture((NOW - 1, None), None)  # never captured: fetched
    assert not unchanged_since_capture((NOW - 1, None), Known(None, None, "ab", None, None))  # no WARC date: fetched
    assert captured_at(Known(None, None, None, None, "not a date")) is None


def test_a_hosts_sitemaps_go_before_its_pages() -> None:
    clock = Clock()
    shard = frontier(clock)
    shard.push([UrlEntry("http://a.test/", 0), UrlEntry("http://a.test/sitemap.xml", 0, kind="sitemap")])
    answer(shard, shard.lease(5), clock.now)  # robots.txt
    assert lease_all(shard, clock) == ["http://a.test/sitemap.xml", "http://a.test/"]


def test_hints_reorder_queued_urls_and_end_a_recrawls_unchanged_ones() -> None:
    clock = Clock()
    shard = frontier(clock)
    recrawled = UrlEntry("http://a.test/same", 1, known=CAPTURE)
    changed = UrlEntry("http://a.test/changed", 1, known=CAPTURE)
    shard.push([UrlEntry(f"http://a.test/{n}", 1) for n in ("a", "b", "c")] + [recrawled, changed])
    answer(shard, shard.lease(5), clock.now)  # robots.txt
    shard.apply_hints({
        "http://a.test/c": (None, 1.0),
        "http://a.test/a": (None, 0.0),
        "http://a.test/same": (NOW - 86400, None),  # not modified since its capture
        "http://a.test/changed": (NOW + 60, None),
        "http://b.test/unknown": (None, 1.0),  # (a host with nothing queued: nothing to do)
    })  # fmt: skip
    [ended] = shard.take_terminals()
    assert (ended.entry.url, ended.outcome) == ("http://a.test/same", "skipped_unchanged")
    assert shard.queued == 4
    order = lease_all(shard, clock)
    assert order[0] == "http://a.test/c" and order[-1] == "http://a.test/a"
    assert set(order[1:3]) == {"http://a.test/b", "http://a.test/changed"}

    record = terminal_record(ended, NOW)
    assert record["outcome"] == "skipped_unchanged" and record["error"] is None
    assert (record["warc_id"], record["sha256"], record["etag"]) == ("<urn:uuid:c>", "ab", '"e"')
    links, known = recrawl_links([record])  # the next recrawl still knows the capture
    assert links[0][0] == "http://a.test/same" and known["http://a.test/same"] == CAPTURE


def test_an_entrys_hint_survives_a_checkpoint_row() -> None:
    for entry in (UrlEntry("http://a.test/", 1, hint=0.25), UrlEntry("http://a.test/", 1, known=CAPTURE, hint=-0.4)):
        assert UrlEntry.from_row(entry.to_row()) == entry
    assert UrlEntry.from_row(UrlEntry("http://a.test/", 1, known=CAPTURE).to_row()).known == CAPTURE


def test_a_hosts_pages_wait_briefly_for_the_sitemaps_its_robots_txt_names() -> None:
    clock = Clock()
    shard = frontier(clock)
    shard.push([UrlEntry("http://a.test/", 0), UrlEntry("http://a.test/p", 1)])
    [robots] = shard.lease(5)
    robots_txt = b"User-agent: *\nAllow: /\nSitemap: http://a.test/sitemap.xml\n"
    shard.ack([Ack(robots.lease_id, 200, clock.now, 0.0, False, None, robots_txt)])
    [named] = shard.take_discovered()
    assert named[0] == "http://a.test/sitemap.xml"
    clock.now += 1.5  # past the host's delay (1 s), within SITEMAP_WAIT: the pages wait for the sitemap
    assert shard.lease(5) == []
    shard.push([UrlEntry(named[0], 0, kind="sitemap")])  # (a round later, through the seen-set)
    [first] = shard.lease(5)
    assert first.kind == "sitemap"

    # A sitemap that never comes (seen before, or out of scope) holds the pages SITEMAP_WAIT at most.
    other = frontier(clock)
    other.push([UrlEntry("http://b.test/", 0)])
    [robots] = other.lease(5)
    other.ack([Ack(robots.lease_id, 200, clock.now, 0.0, False, None, robots_txt.replace(b"a.test", b"b.test"))])
    clock.now += 1.5
    assert other.lease(5) == []
    clock.now += SITEMAP_WAIT
    assert [lease.url for lease in other.lease(5)] == ["http://b.test/"]
