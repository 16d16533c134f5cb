"""Issue 17, acceptance 2: a host whose pages are linked only from its sitemaps (robots.txt Sitemap: -> index ->
gzip and text sitemaps) is crawled completely; a malformed sitemap and one past the protocol's limits cost bounded
work and are counted; out-of-scope entries are never asked for (a loopback canary sees no connection)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import assert_each_url_once, local_config, run
from test_hostile import CANARY_IP, Canary

from raycrawl.core.urls import canonicalize
from raycrawl.testing import TestWeb, WebSpec
from raycrawl.testing.process import gaps_by_host
from raycrawl.testing.sitemapweb import FILES, page_path, priority

pytestmark = pytest.mark.usefixtures("ray_local")
PAGES = 40
DELAY = 0.05


def test_pages_linked_only_from_sitemaps_are_crawled_completely(tmp_path: Path) -> None:
    canary = Canary()
    spec = WebSpec(hosts=1, pages_per_host=PAGES, page_bytes=200, profiles=("sitemap",),
                   canary=f"{CANARY_IP}:{canary.port}")  # fmt: skip
    try:
        with TestWeb(spec) as web:
            cfg = local_config(seeds=tuple(web.graph.seeds()), out=str(tmp_path / "out"), delay=DELAY)
            summary, records = run(cfg)
            requests = web.requests()
    finally:
        canary.close()

    netloc = web.graph.netloc(0)
    assert_each_url_once(records)
    pages = {canonicalize(f"http://{netloc}{page_path(p)}") for p in range(PAGES)}
    fetched_pages = {r["url"] for r in records if r["outcome"] == "fetched" and r.get("kind") != "sitemap"}
    assert fetched_pages == pages  # every page, though "/" links to none of them

    sitemaps = {r["url"].rsplit("/", 1)[1]: r for r in records if r.get("kind") == "sitemap"}
    assert set(sitemaps) == {"index.xml", *FILES}
    assert sitemaps["index.xml"]["sitemap"]["format"] == "index"
    assert sitemaps["index.xml"]["sitemap"]["urls"] == len(FILES)
    assert sitemaps["pages.xml.gz"]["sitemap"]["format"] == "urlset"
    assert sitemaps["pages.xml.gz"]["sitemap"]["urls"] == PAGES // 2 + 1  # the odd pages and the outside one
    assert sitemaps["pages.txt"]["sitemap"]["format"] == "text"
    broken = sitemaps["broken.xml"]["sitemap"]
    assert broken["error"] and broken["error"].startswith("malformed")
    bomb = sitemaps["bomb.xml.gz"]["sitemap"]
    assert bomb["over_limit"] and bomb["urls"] == 0
    events = summary["events"]
    assert events["sitemaps_read"] == 1 + len(FILES)
    assert events["sitemaps_over_limit"] == 1 and events["sitemaps_malformed"] >= 1
    # Out of scope: the sitemap robots.txt names on another address, and the page listed there. Never asked.
    assert summary["dropped_links"]["out_of_scope"] >= 2
    assert canary.connections == 0
    assert {r["ip"] for r in requests} == {web.graph.ip(0)}
    # What the server saw: each sitemap once, each page once, robots.txt once, never closer than the delay.
    paths = [r["path"] for r in requests]
    assert sorted(p for p in paths if p.startswith("/sitemaps/")) == sorted(
        f"/sitemaps/{n}" for n in ("index.xml", *FILES)
    )
    assert len(paths) == len(set(paths)) == PAGES + len(FILES) + 2
    assert min(min(g) for g in gaps_by_host(requests).values()) >= DELAY
    # The sitemaps went before the pages they list, and their <priority> ordered those pages: every page the gzip
    # sitemap gives 0.9 was asked for before every one it gives 0.1 (the text sitemap's, 0.5 by default, between).
    order = {path: i for i, path in enumerate(paths)}
    assert max(order[f"/sitemaps/{n}"] for n in ("index.xml", "pages.xml.gz", "pages.txt")) < min(
        order[page_path(p)] for p in range(1, PAGES)
    )
    high, low = ([order[page_path(p)] for p in range(PAGES) if priority(p) == w] for w in (0.9, 0.1))
    even = [order[page_path(p)] for p in range(2, PAGES, 2)]
    assert max(high) < min(low)
    assert sum(high) / len(high) < sum(even) / len(even) < sum(low) / len(low)


def test_no_sitemaps_reads_none(tmp_path: Path) -> None:
    spec = WebSpec(hosts=1, pages_per_host=10, page_bytes=200, profiles=("sitemap",))
    with TestWeb(spec) as web:
        cfg = local_config(seeds=tuple(web.graph.seeds()), out=str(tmp_path / "out"), delay=DELAY, sitemaps=False)
        _, records = run(cfg)
        requests = web.requests()
    assert [r["url"] for r in records] == [canonicalize(web.graph.url(0, 0))]
    assert sorted(r["path"] for r in requests) == ["/", "/robots.txt"]
