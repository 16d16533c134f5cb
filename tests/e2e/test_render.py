"""Issue 35 end to end: pages whose links exist only after their script runs, crawled with and without a browser.

The scripted test web (testing/scripted.py): every page is a shell; its script asks /app.js, then /data/{i}.json,
and writes the links (page i -> 2i+1, 2i+2); it also asks for an image, a loopback canary on another host and a
private address, which a render must refuse. What is asserted is what the server saw and what was written.
"""

from __future__ import annotations

import asyncio
import io
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import FakeClock, assert_each_url_once, committed_warc, fetched_page, local_config, run, wait_until
from warcio.archiveiterator import ArchiveIterator

from raycrawl.actors.render import HOLD, RenderCaller, RenderPool
from raycrawl.core.fetch_settings import FetchSettings
from raycrawl.core.render_jobs import RenderJob, RenderSettings
from raycrawl.testing import TestWeb, WebSpec
from raycrawl.testing.canary import Canary
from raycrawl.testing.process import gaps_by_host, kill_descendants
from raycrawl.testing.scripted import links_of

pytestmark = pytest.mark.usefixtures("ray_local")
PAGES = 7
DELAY = 0.2
CANARY_IP = "127.0.0.96"


def scripted_web(canary: Canary, spin: bool = False) -> TestWeb:
    profiles = ("scripted", "scripted", "scripted-spin" if spin else "scripted")
    return TestWeb(WebSpec(hosts=3, pages_per_host=PAGES, profiles=profiles, canary=canary.address))


def pages_of(web: TestWeb, host: int) -> set[str]:
    base = web.graph.url(host, 0).rstrip("/")
    return {base + "/"} | {f"{base}/p/{i}" for i in range(1, PAGES)}


def test_without_rendering_only_the_shells_are_seen(tmp_path: Path) -> None:
    with Canary(CANARY_IP) as canary, scripted_web(canary) as web:
        cfg = local_config(seeds=tuple(web.graph.seeds()), out=str(tmp_path / "out"), delay=DELAY, render="never")
        summary, records = run(cfg)
        requests = web.requests()
    assert sorted(r["url"] for r in records) == sorted(web.graph.url(h, 0) for h in range(3))
    assert all(r["outlinks"] == [] and "render" not in r for r in records)
    assert {r["path"] for r in requests} == {"/robots.txt", "/"}  # (no script ran: nothing else was asked)
    assert "render" not in summary


RENDER_BOUND = 10.0


def kill_browsers_when(web: TestWeb, scripts: int, done: threading.Event) -> None:
    """Once the server has served ``scripts`` app.js, SIGKILL every Chromium under this process (the render actor's
    browser, mid-crawl); nothing if the crawl ends first."""
    wait_until(lambda: done.is_set() or sum(r["path"] == "/app.js" for r in web.requests()) >= scripts, 300, "app.js")
    if not done.is_set():
        kill_descendants("chrom")


def _why_missing(missing: set[str], by_url: dict[str, dict[str, Any]]) -> str:
    """The pages never found, and the records of the pages whose scripts write their links (what their renders
    said): a failure says which render gave no links, and why."""
    parents = set()
    for url in missing:
        base, _, page = url.rpartition("/p/")
        if page.isdigit():  # (the script's links: testing/scripted.py)
            parent = next(i for i in range(PAGES) if f"/p/{page}" in links_of(i, PAGES, spin=False))
            parents.add(f"{base}/" if parent == 0 else f"{base}/p/{parent}")
    return f"never found: {sorted(missing)}; their parents' records: {[by_url.get(p) for p in sorted(parents)]}"


def test_auto_renders_every_shell_politely_and_a_killed_browser_loses_nothing(tmp_path: Path) -> None:
    done = threading.Event()
    with Canary(CANARY_IP) as canary, scripted_web(canary, spin=True) as web:
        # (a render's bound with room for a loaded machine: every page but the spinning one must settle within it,
        # the page in hand when the browsers are killed on its second browser too -- 4 s lost one under CI's load)
        # (and a request budget the spinning page cannot spend within the bound: its two chains send one request
        # each DELAY, so the default 50 ran out at ~9.8 s, and the page settled before the 10 s bound once in CI)
        cfg = local_config(seeds=tuple(web.graph.seeds()), out=str(tmp_path / "out"), delay=DELAY, render="auto",
                           render_timeout=RENDER_BOUND, render_screenshots=True,
                           render_max_requests=4 * int(RENDER_BOUND / DELAY))  # fmt: skip
        killer = threading.Thread(target=kill_browsers_when, args=(web, 6, done), daemon=True)
        killer.start()
        try:
            summary, records = run(cfg)
        finally:
            done.set()
            killer.join()
        requests = web.requests()

    # Every page found, though no page's HTML has a link: each was rendered, and its record says so and why.
    assert_each_url_once(records)
    spin = web.graph.url(2, 0).rstrip("/") + "/spin"
    expected = pages_of(web, 0) | pages_of(web, 1) | pages_of(web, 2) | {spin}
    by_url = {r["url"]: r for r in records}
    assert set(by_url) == expected, _why_missing(expected - set(by_url), by_url)
    assert all(r["outcome"] == "fetched" for r in records)
    for url in expected - {spin}:
        render = by_url[url]["render"]
        assert render["rendered"] and render["settled"], (url, render)
        assert render["because"].startswith("looks like a shell"), render
        assert render["requests"] == 2 and render["blocked"] == {"type": 1, "other host": 1, "address": 1}, render
    # The page that never settles ends at the bound, with the DOM it had and the reason.
    assert by_url[spin]["render"]["reason"] == f"did not settle within {RENDER_BOUND:g} s"
    # The browser killed mid-crawl was replaced (its page tried again): nothing lost, one record each (above).
    assert summary["render"]["browsers_launched"] >= 2
    events = summary["events"]
    assert events["pages_rendered"] == len(expected)
    assert events["render_requests_blocked"] >= 3 * (len(expected) - 1)

    # The server's side: each page asked for once (the browser was handed the response), the scripts' requests
    # to the page's own host only, and every host's delay held, pages and scripts' requests together.
    pages = Counter(
        (r["ip"], r["path"]) for r in requests if r["path"] in ("/", "/spin") or r["path"].startswith("/p/")
    )
    assert len(pages) == len(expected) and set(pages.values()) == {1}
    assert canary.connections == 0
    assert not [r for r in requests if r["path"] == "/logo.png"]
    assert sum(r["path"] == "/app.js" for r in requests) >= len(expected)
    for host, gaps in gaps_by_host(requests).items():
        assert min(gaps) >= DELAY, host

    # WARC: each page's response as fetched (or a revisit of the same bytes), and its rendered DOM and its
    # screenshot as conversion records referring to it.
    responses: dict[str, str] = {}
    conversions: list[tuple[str, str, bytes]] = []
    screenshots: list[tuple[str, str, bytes]] = []
    for data in committed_warc(tmp_path / "out"):
        for rec in ArchiveIterator(io.BytesIO(data)):
            headers: Any = rec.rec_headers
            if rec.rec_type in ("response", "revisit"):  # (every shell has the same bytes: revisits of the first)
                responses[headers.get_header("WARC-Record-ID")] = headers.get_header("WARC-Target-URI")
            elif rec.rec_type == "conversion":
                kind = conversions if headers.get_header("Content-Type").startswith("text/html") else screenshots
                kind.append(
                    (
                        headers.get_header("WARC-Refers-To"),
                        headers.get_header("WARC-Target-URI"),
                        rec.content_stream().read(),
                    )
                )
    assert len(conversions) == len(expected) and len(screenshots) == len(expected)
    for refers_to, uri, png in screenshots:
        assert responses[refers_to] == uri and png.startswith(b"\x89PNG\r\n\x1a\n"), uri
    for refers_to, uri, body in conversions:
        assert responses[refers_to] == uri
        if not uri.endswith("/spin"):
            assert b'<a href="/p/' in body or uri.rsplit("/", 1)[-1] in {str(i) for i in range(3, PAGES)}


def test_the_pool_grows_with_its_queue_and_lets_go_of_what_it_no_longer_needs() -> None:
    import ray

    clock = FakeClock()  # (moved a second on every look but while a browser starts: each look is a new sample)

    def looked(what: Any) -> bool:
        if not pool._starting:  # (a browser starting takes real time: the fake clock must not run out its start)
            clock.now += 1.0
        pool.follow()
        return bool(what())

    with Canary(CANARY_IP) as canary, scripted_web(canary, spin=True) as web:
        # (the bound: a page that settles must do so within it on a loaded machine, and three that never do fill it)
        settings = RenderSettings(render_workers=1, render_workers_max=2, render_pages=1, render_timeout=4.0)
        fetch = FetchSettings(
            user_agent="raycrawl-test/1", allow_network=tuple(f"{web.graph.ip(h)}/32" for h in range(3))
        )
        pool = RenderPool(settings, fetch, autoscaler=False, clock=clock)
        try:
            first = pool.actors[0]
            # Three pages that never settle (4 s each), handed to one actor that renders one at a time: its queue
            # wants a second actor, which is handed out once its browser runs.
            spin = web.graph.url(2, 0).rstrip("/") + "/spin"
            busy = [first.render.remote(fetched_page(spin, DELAY)) for _ in range(3)]
            wait_until(lambda: looked(lambda: len(pool.actors) == 2), 120, "a second render actor")
            second = pool.actors[1]
            assert pool.stats()["render_workers_added"] == 1 and pool.stats()["workers_most"] == 2
            assert all(o.reason == "did not settle within 4 s" for o in ray.get(busy))
            # Idle for longer than the hold: the pool goes back to its fewest; the actor let go answers "retired",
            # and a caller that still knows it has its page rendered by the other.
            clock.now += HOLD
            wait_until(lambda: looked(lambda: len(pool.actors) == 1), 60, "the pool back to one actor")
            leaving = next(a for a in (first, second) if a not in pool.actors)
            page = web.graph.url(0, 0)
            assert ray.get(leaving.render.remote(fetched_page(page, DELAY))).retired
            outcomes = asyncio_run_all(
                RenderCaller([first, second]), [fetched_page(page, DELAY), fetched_page(page, DELAY)]
            )
            assert all(o.settled and o.html is not None and 'href="/p/1"' in o.html for o in outcomes), outcomes
            # ... and once it has nothing in hand it ends; a caller that knew it still has its page rendered.
            wait_until(lambda: looked(lambda: not pool._retiring), 60, "the retired actor ended")
            outcomes = asyncio_run_all(
                RenderCaller([first, second]), [fetched_page(page, DELAY), fetched_page(page, DELAY)]
            )
            assert all(o.settled and not o.retired for o in outcomes), outcomes
            final = pool.close()  # (the counters asked of the actors: the retired one's count was kept)
            assert final["render_workers_retired"] == 1 and final["workers"] == 1 and final["rendered"] == 3 + 4
        finally:
            pool.close()


def asyncio_run_all(caller: RenderCaller, jobs: list[RenderJob]) -> list[Any]:
    async def main() -> list[Any]:
        return [await caller(job) for job in jobs]

    return asyncio.run(main())
