"""Rendering without Ray (adapters/browser.py): Debian's Chromium through Playwright, on the scripted test web.

What is asserted is what the server saw (each request the page's script made, spaced by the host's delay; no
second request for the page) and what the render gave (the links its script wrote, what it refused and why).
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import fetched_page
from playwright.async_api import Browser, BrowserContext

from raycrawl.adapters.browser import Renderer
from raycrawl.core.fetch_settings import FetchSettings
from raycrawl.core.render_jobs import RenderJob, RenderOutcome, RenderSettings
from raycrawl.testing import TestWeb, WebSpec
from raycrawl.testing.canary import Canary, UdpCanary
from raycrawl.testing.process import gaps_by_host, kill_descendants
from raycrawl.testing.tinyproxy import TinyProxy

GAP = 0.3
CANARY_IP = "127.0.0.97"


@pytest.fixture(scope="module")
def canary() -> Iterator[Canary]:
    with Canary(CANARY_IP) as canary:
        yield canary


@pytest.fixture(scope="module")
def web(canary: Canary) -> Iterator[TestWeb]:
    spec = WebSpec(hosts=2, pages_per_host=7, profiles=("scripted", "scripted-spin"), canary=canary.address)
    with TestWeb(spec) as web:
        yield web


def fetch_settings(web: TestWeb) -> FetchSettings:
    return FetchSettings(user_agent="raycrawl-test/1", allow_network=tuple(f"{web.graph.ip(h)}/32" for h in (0, 1)))


def job_for(url: str) -> RenderJob:
    return fetched_page(url, GAP)


def render(settings: RenderSettings, web: TestWeb, urls: list[str], during: float | None = None) -> list[RenderOutcome]:
    """Render each URL in turn with one Renderer; with ``during``, every Chromium under this process is killed
    that many seconds after the first render starts."""

    async def main() -> list[RenderOutcome]:
        renderer = Renderer(settings, fetch_settings(web))
        try:
            await renderer.start()
            killer = threading.Timer(during, kill_descendants, args=("chrom",)) if during is not None else None
            if killer is not None:
                killer.start()
            try:
                return [await renderer.render(job_for(url)) for url in urls]
            finally:
                if killer is not None:
                    killer.cancel()
        finally:
            await renderer.close()

    return asyncio.run(main())


def requests_to(web: TestWeb, host: int, since: float) -> list[dict[str, object]]:
    return [r for r in web.requests() if r["ip"] == web.graph.ip(host) and float(r["t"]) >= since]  # type: ignore[arg-type]


def test_a_shell_is_rendered_from_the_response_it_was_given(web: TestWeb, canary: Canary) -> None:
    started = time.time()
    [outcome] = render(RenderSettings(), web, [web.graph.url(0, 0)])
    assert outcome.settled and outcome.reason == "settled", outcome
    assert outcome.html is not None and 'href="/p/1"' in outcome.html and 'href="/p/2"' in outcome.html
    seen = requests_to(web, 0, started)
    # The page once (our own fetch, standing for the fetch worker's), then what its script asked for, in turn.
    assert [r["path"] for r in seen] == ["/", "/app.js", "/data/0.json"]
    assert all(r["ua"] == "raycrawl-test/1" for r in seen[1:])  # (the first is this test's own)
    assert min(gaps_by_host(seen)[web.graph.ip(0)]) >= GAP  # (the page's own request counts: the job's not_before)
    assert outcome.requests == 2
    # The image is not a type a crawl loads; the canary and the private address are refused by the guard.
    assert outcome.blocked == {"type": 1, "address": 2}
    assert canary.connections == 0
    assert outcome.host_free_at >= float(seen[-1]["t"]) + GAP  # type: ignore[arg-type]


def test_a_page_that_never_settles_ends_at_the_bound_with_its_reason(web: TestWeb) -> None:
    started = time.time()
    [outcome] = render(RenderSettings(render_timeout=3.0), web, [web.graph.url(1, 0).rstrip("/") + "/spin"])
    assert not outcome.settled and outcome.reason == "did not settle within 3 s", outcome
    assert outcome.html is not None and "spinning" in outcome.html  # (the DOM as it was at the bound)
    assert 3000 <= outcome.total_ms < 10_000
    ticks = [r for r in requests_to(web, 1, started) if str(r["path"]).startswith("/tick")]
    assert 3 <= len(ticks) == outcome.requests - 1  # (asked again at each answer, its host's delay apart)
    assert min(gaps_by_host(requests_to(web, 1, started))[web.graph.ip(1)]) >= GAP


def test_a_browser_killed_under_a_page_is_replaced_and_the_page_tried_once_more(web: TestWeb) -> None:
    spin = web.graph.url(1, 0).rstrip("/") + "/spin"
    outcomes = render(RenderSettings(render_timeout=3.0), web, [spin, web.graph.url(0, 1)], during=1.5)
    assert outcomes[0].restarts == 1 and outcomes[0].reason == "did not settle within 3 s", outcomes[0]
    assert outcomes[1].settled and outcomes[1].html is not None and 'href="/p/3"' in outcomes[1].html


def test_a_browser_killed_between_its_pages_context_and_the_page_is_replaced_too(
    web: TestWeb, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (CI, once: the browsers were killed just after a page's context was made; the next call to the browser raised
    # Playwright's TargetClosedError, which left the render whole, and the page kept no rendered link)
    made = Browser.new_context

    async def context_then_kill(self: Browser, **kwargs: Any) -> BrowserContext:
        context = await made(self, **kwargs)
        if not killed:
            killed.append(kill_descendants("chrom"))
            deadline = time.monotonic() + 30
            while self.is_connected() and time.monotonic() < deadline:  # (Playwright notices the pipe closed)
                await asyncio.sleep(0.05)
        return context

    killed: list[int] = []
    monkeypatch.setattr(Browser, "new_context", context_then_kill)
    [outcome] = render(RenderSettings(), web, [web.graph.url(0, 2)])
    assert killed and killed[0] >= 1
    assert outcome.restarts == 1 and outcome.settled, outcome
    assert outcome.html is not None and 'href="/p/5"' in outcome.html


def test_a_browser_is_replaced_after_its_pages_and_screenshots_are_taken(web: TestWeb) -> None:
    settings = RenderSettings(render_restart_pages=1, render_screenshots=True)

    async def main() -> tuple[list[RenderOutcome], int, int]:
        renderer = Renderer(settings, fetch_settings(web))
        try:
            outcomes = [await renderer.render(job_for(web.graph.url(0, page))) for page in (2, 3)]
        finally:
            await renderer.close()
        return outcomes, renderer.launched, renderer.replaced

    outcomes, launched, replaced = asyncio.run(main())
    assert all(o.settled and o.restarts == 0 for o in outcomes), outcomes
    assert (launched, replaced) == (2, 2)  # (a new browser for the second page; the second retired after it too)
    assert all(o.screenshot is not None and o.screenshot.startswith(b"\x89PNG\r\n") for o in outcomes)


def test_a_page_that_came_through_a_proxy_sends_its_scripts_requests_through_it(web: TestWeb) -> None:
    started = time.time()
    with TinyProxy("render-proxy") as proxy:
        fetch = FetchSettings(
            user_agent="raycrawl-test/1", allow_network=(f"{web.graph.ip(0)}/32",), proxies=(proxy.url,)
        )
        job = job_for(web.graph.url(0, 1))
        job.proxy = 0  # (the page's lease went through the crawl's first proxy)

        async def main() -> RenderOutcome:
            renderer = Renderer(RenderSettings(), fetch)
            try:
                return await renderer.render(job)
            finally:
                await renderer.close()

        outcome = asyncio.run(main())
        through_proxy = proxy.requests()
    assert outcome.settled and outcome.html is not None and 'href="/p/3"' in outcome.html, outcome
    # Both logs agree: the script's two requests reached the server through the proxy, and only through it.
    scripts = [r for r in requests_to(web, 0, started) if r["path"] != "/p/1"]
    assert [r["path"] for r in scripts] == ["/app.js", "/data/1.json"]
    assert all("render-proxy" in str(r.get("via", "")) for r in scripts), scripts
    base = web.graph.url(0, 0).rstrip("/")
    assert [u for u in through_proxy if u.startswith(base)] == [base + "/app.js", base + "/data/1.json"]


def render_bodies(settings: RenderSettings, fetch: FetchSettings, url: str, bodies: list[str]) -> list[RenderOutcome]:
    """Render pages whose fetched bodies are ``bodies`` (each served from its job at ``url``), with one Renderer."""

    async def main() -> list[RenderOutcome]:
        renderer = Renderer(settings, fetch)
        try:
            jobs = [
                RenderJob(url, 200, "OK", [("Content-Type", "text/html")], body.encode(), time.time(), gap=GAP)
                for body in bodies
            ]
            return [await renderer.render(job) for job in jobs]
        finally:
            await renderer.close()

    return asyncio.run(main())


def test_webrtc_reaches_nothing_from_a_rendered_page(web: TestWeb) -> None:
    """Issue 46.5: WebRTC's STUN goes over UDP, past the HTTP proxy setting: a page's script gathering ICE
    candidates toward a loopback canary sent it 4 datagrams; now none (the script ran: its gathering completed)."""
    with UdpCanary("127.0.0.96") as udp:
        body = f"""<html><body><p id=s>start</p><script>
        const pc = new RTCPeerConnection({{iceServers: [{{urls: 'stun:127.0.0.96:{udp.port}'}},
                                                         {{urls: 'turn:127.0.0.96:{udp.port}', username: 'u',
                                                           credential: 'c'}}]}});
        pc.createDataChannel('x');
        pc.onicegatheringstatechange = () => {{
          document.getElementById('s').textContent = 'ice ' + pc.iceGatheringState; }};
        pc.createOffer().then(o => pc.setLocalDescription(o));
        </script></body></html>"""
        # (the window: the render waits 3 s without a request after its load; the datagrams came in it before the fix)
        [outcome] = render_bodies(RenderSettings(render_settle=3.0), fetch_settings(web), web.graph.url(0, 0), [body])
    assert udp.datagrams == 0
    assert outcome.html is not None and "ice complete" in outcome.html, outcome


def test_a_rendered_dom_over_max_body_bytes_is_not_kept(web: TestWeb) -> None:
    """Issue 46.10: the rendered DOM bypassed max_body_bytes into the WARC and link extraction."""
    fetch = FetchSettings(
        user_agent="raycrawl-test/1", allow_network=(f"{web.graph.ip(0)}/32",), max_body_bytes=1 << 20
    )
    big = "<html><body><script>document.body.textContent = 'x'.repeat(3000000);</script></body></html>"
    small = "<html><body><script>document.body.textContent = 'y'.repeat(3000);</script></body></html>"
    over, under = render_bodies(RenderSettings(), fetch, web.graph.url(0, 0), [big, small])
    assert over.html is None and not over.settled and "max_body_bytes" in over.reason, over.reason
    assert under.settled and under.html is not None and "y" * 3000 in under.html


def test_a_page_that_takes_the_browsers_memory_is_stopped_while_it_renders(web: TestWeb) -> None:
    """Issue 46.10: memory was looked at every 10th page, after it; a page now ends when the browsers go over
    render_max_memory_mb under it, and that browser is replaced."""
    from raycrawl.adapters.browser import _browser_memory_mb

    async def baseline() -> float:
        renderer = Renderer(RenderSettings(), fetch_settings(web))
        try:
            await renderer.render(job_for(web.graph.url(0, 1)))
            return _browser_memory_mb()
        finally:
            await renderer.close()

    bound = int(asyncio.run(baseline())) + 300
    hog = """<html><body><script>
    const keep = []; let n = 0;
    const grow = setInterval(() => { const a = new Uint8Array(50 << 20); a.fill(1); keep.push(a);
                                     if (++n >= 60) clearInterval(grow); }, 50);
    </script></body></html>"""
    settings = RenderSettings(render_max_memory_mb=bound, render_settle=8.0, render_timeout=20.0)
    [outcome] = render_bodies(settings, fetch_settings(web), web.graph.url(0, 0), [hog])
    assert outcome.html is None and "render_max_memory_mb" in outcome.reason, outcome.reason
    assert outcome.total_ms < 15_000 and outcome.restarts == 0


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A temp dir with a short path: Chromium's profile socket under it must fit a Unix socket path (108 bytes),
    which pytest's own tmp_path under an xdist worker (.../popen-gw0/<test name>0/...) can outgrow."""
    path = Path(tempfile.mkdtemp(prefix="dl-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_rendered_pages_download_is_never_written(
    web: TestWeb, short_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 46.10: a script's download (a blob saved through <a download>) was written to the browser's disk."""
    tmp_path = short_tmp
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # (where Playwright's driver keeps what a browser downloads)
    seen: set[str] = set()
    stop = threading.Event()

    def look() -> None:
        while not stop.wait(0.02):  # (a file appears for the render's length only: the browser's close deletes it)
            seen.update(str(p) for p in tmp_path.glob("playwright-artifacts-*/*") if p.is_file())

    body = """<html><body><script>
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob(['z'.repeat(1 << 20)]));
    a.download = 'payload.bin'; document.body.appendChild(a); a.click();
    </script></body></html>"""
    watcher = threading.Thread(target=look, daemon=True)
    watcher.start()
    try:
        [outcome] = render_bodies(RenderSettings(render_settle=2.0), fetch_settings(web), web.graph.url(0, 0), [body])
    finally:
        stop.set()
        watcher.join()
    assert outcome.settled, outcome
    assert seen == set()
