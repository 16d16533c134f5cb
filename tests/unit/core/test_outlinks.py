"""From a fetched page to the links that may join the frontier (pure: no Ray, no network)."""

from __future__ import annotations

from collections import Counter

from raycrawl.core.outlinks import children, screen, unfollowed_redirect
from raycrawl.core.records import FetchResult, Lease, SitemapRead, UrlEntry
from raycrawl.core.scope import ScopePolicy
from raycrawl.core.traps import TrapRules


def _result(
    url: str, status: int | None, outlinks: list[str], depth: int = 1, redirects: tuple[str, ...] = ()
) -> FetchResult:
    lease = Lease(1, 0, "page", 0.0, 100.0, UrlEntry(url, depth, None, 0, redirects))
    return FetchResult(lease, status, outlinks=outlinks)


def test_a_page_adds_its_links_one_hop_deeper_and_a_redirect_at_its_own_depth_with_the_chain() -> None:
    dropped: Counter[str] = Counter()
    page = _result("http://a.test/p", 200, ["http://a.test/x", "http://b.test/y"], depth=1)
    assert children(page, None, dropped) == [
        ("http://a.test/x", 2, "http://a.test/p", (), None, "page", 0.0),
        ("http://b.test/y", 2, "http://a.test/p", (), None, "page", 0.0),
    ]
    hop = _result("http://a.test/r2", 301, ["http://a.test/r3"], depth=1, redirects=("http://a.test/r1",))
    assert children(hop, None, dropped) == [
        ("http://a.test/r3", 1, "http://a.test/r2", ("http://a.test/r1", "http://a.test/r2"), None, "page", 0.0)
    ]
    assert children(_result("http://a.test/gone", 404, ["http://a.test/z"]), None, dropped) == []
    assert children(_result("http://a.test/down", None, ["http://a.test/z"]), None, dropped) == []
    assert dropped == Counter()


def test_links_past_max_depth_are_counted_not_followed() -> None:
    dropped: Counter[str] = Counter()
    assert children(_result("http://a.test/p", 200, ["http://a.test/1", "http://a.test/2"], depth=2), 2, dropped) == []
    assert dropped == Counter({"max_depth": 2})
    assert len(children(_result("http://a.test/r", 302, ["http://a.test/3"], depth=2), 2, dropped)) == 1  # same depth


def test_redirect_loops_and_long_chains_are_not_followed() -> None:
    chain = tuple(f"http://a.test/{i}" for i in range(3))
    looped = unfollowed_redirect(_result("http://a.test/3", 302, ["http://a.test/1"], redirects=chain), 10)
    assert looped is not None and looped[0] == "redirect_loop"
    onward = _result("http://a.test/3", 302, ["http://a.test/4"], redirects=chain)
    assert unfollowed_redirect(onward, 10) is None
    too_long = unfollowed_redirect(onward, 3)
    assert too_long is not None and too_long[0] == "too_many_redirects"
    assert unfollowed_redirect(_result("http://a.test/3", 200, ["http://a.test/1"], redirects=chain), 10) is None


def test_screen_keeps_the_first_link_to_each_url_and_counts_every_rule() -> None:
    dropped: Counter[str] = Counter()
    scope = ScopePolicy("host", ["http://a.test/"])
    traps = TrapRules(max_path_depth=3, max_repeated_segments=2)
    links = [
        ("http://a.test/x", 1, "http://a.test/", (), "http://a.test/x?", "page", 0.0),
        (
            "http://a.test/x",
            5,
            "http://a.test/other",
            (),
            None,
            "page",
            0.0,
        ),  # the same URL again: the first one stands
        ("http://b.test/x", 1, "http://a.test/", (), None, "page", 0.0),  # another host
        ("http://a.test/1/2/3/4", 1, "http://a.test/", (), None, "page", 0.0),  # too deep
        ("http://a.test/s/s/s", 1, "http://a.test/", (), None, "page", 0.0),  # a repeating segment
    ]
    assert screen(links, traps, scope, dropped) == {
        "http://a.test/x": (1, "http://a.test/", (), "http://a.test/x?", "page", 0.0)
    }
    assert dropped == Counter({"out_of_scope": 1, "path_too_deep": 1, "repeated_segment": 1})


def test_a_link_keeps_the_spelling_it_was_written_in() -> None:
    page = _result("http://a.test/p", 200, ["http://a.test/s?lang=en&q=x", "http://a.test/y"])
    page.spellings = {"http://a.test/s?lang=en&q=x": "http://a.test/s?q=x&lang=en"}
    assert children(page, None, Counter()) == [
        ("http://a.test/s?lang=en&q=x", 2, "http://a.test/p", (), "http://a.test/s?q=x&lang=en", "page", 0.0),
        ("http://a.test/y", 2, "http://a.test/p", (), None, "page", 0.0),
    ]


def test_seeds_are_links_under_their_canonical_url_spelt_as_given() -> None:
    from raycrawl.core.outlinks import seed_links

    assert seed_links(["http://a.test/s?q=x&lang=en&utm_source=m", "http://a.test/"], ("utm_*",)) == [
        ("http://a.test/s?lang=en&q=x", 0, None, (), "http://a.test/s?q=x&lang=en&utm_source=m", "page", 0.0),
        ("http://a.test/", 0, None, (), None, "page", 0.0),
    ]


def _sitemap(url: str, fmt: str, outlinks: list[str], level: int, status: int = 200) -> FetchResult:
    lease = Lease(1, 0, "sitemap", 0.0, 100.0, UrlEntry(url, level, None, 0, (), None, "sitemap", 0.0))
    return FetchResult(lease, status, outlinks=outlinks, sitemap=SitemapRead(fmt, len(outlinks)))


def test_a_sitemap_lists_pages_at_depth_one_and_an_index_lists_sitemaps_one_level_down() -> None:
    dropped: Counter[str] = Counter()
    urlset = _sitemap("http://a.test/s.xml", "urlset", ["http://a.test/deep/page"], level=1)
    assert children(urlset, 3, dropped) == [
        ("http://a.test/deep/page", 1, "http://a.test/s.xml", (), None, "page", 0.0)
    ]
    index = _sitemap("http://a.test/i.xml", "index", ["http://a.test/s.xml"], level=0)
    assert children(index, 0, dropped) == [("http://a.test/s.xml", 1, "http://a.test/i.xml", (), None, "sitemap", 0.0)]
    assert dropped == Counter()  # (max_depth 0 bounds pages, not sitemap levels)
    assert children(_sitemap("http://a.test/i3.xml", "index", ["http://a.test/x.xml"], level=2), None, dropped) == []
    assert dropped == Counter({"sitemap_nesting": 1})
    assert children(urlset, 0, dropped) == [] and dropped["max_depth"] == 1
    moved = _sitemap("http://a.test/old.xml", "urlset", ["http://a.test/new.xml"], level=1, status=301)
    assert children(moved, None, dropped)[0][1:] == (
        1,
        "http://a.test/old.xml",
        ("http://a.test/old.xml",),
        None,
        "sitemap",
        0.0,
    )
