"""Rendering a fetched page in headless Chromium, through Playwright's async API (issue 35).

The browser never touches the network itself:

- the page's document is the response the fetch worker already has (``route.fulfill``: no second request);
- every request its scripts make is intercepted (``context.route``), decided by ``core/render_jobs.py`` (the page's
  own host, scripts and data only, within a count), and sent by this process with aiohttp through the fetcher's
  address guard (an address this crawl may not reach is refused where the name resolves), one at a time, each
  after the host's delay from the end of the one before -- the frontier's rule, so the server sees one polite
  client; the answer is handed to the browser;
- what is not intercepted (a WebSocket, the browser's own background traffic) meets a proxy that is not there
  (``--proxy-server`` at a closed loopback port, loopback included): it goes nowhere.

- its downloads are refused, and the DOM it gives is held to ``max_body_bytes`` as a fetched body is.

A browser is replaced after ``render_restart_pages`` pages or past ``render_max_memory_mb`` (looked at while each
page renders: a page under which it goes over is dropped); one that dies under a page (crash, killed) is replaced and
the page tried once more, then ends with the reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import os
import shutil
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import psutil
from playwright.async_api import Browser, Page, Playwright, Route, async_playwright
from playwright.async_api import Error as PlaywrightError

from raycrawl.adapters.address_guard import AddressGuard, BlockedAddress, GuardedResolver
from raycrawl.adapters.egress import Egress
from raycrawl.adapters.fetcher import read_body, sleep_until
from raycrawl.adapters.http_session import crawl_session, read_timeout
from raycrawl.core.addresses import is_ip_literal
from raycrawl.core.decoding import ACCEPT_ENCODING, TRANSFER_HEADERS
from raycrawl.core.fetch_settings import FetchSettings
from raycrawl.core.render_jobs import (
    ATTEMPT_SLACK,
    RenderJob,
    RenderOutcome,
    RenderSettings,
    subresource_verdict,
)
from raycrawl.core.runs import gap_after

# Where Debian's chromium package puts the browser itself (/usr/bin/chromium is a shell script around it).
CHROMIUM_CANDIDATES = ("/usr/lib/chromium/chromium", "chromium", "chromium-browser", "google-chrome")
DEAD_PROXY = "http://127.0.0.1:9"  # (the discard port: nothing that escapes interception gets anywhere)
SETTLE_POLL_S = 0.05
CONTENT_TIMEOUT_MS = 5000.0  # reading the DOM of a page that did not settle
MEMORY_POLL_S = 0.25  # how often the browsers' memory is looked at while a page renders (~1-3 ms of psutil each)
# The DOM's size as the page holds it (UTF-16 code units: no more than its UTF-8 bytes, save for the astral plane)
DOM_SIZE_JS = "() => (document.documentElement ? document.documentElement.outerHTML.length : 0)"
# What keeps the browser off the network, beside the interception: what is not intercepted meets a proxy that is not
# there; WebRTC, which ignores the proxy for UDP (STUN/TURN), may use only proxied transports (none); and no name
# resolves (DNS is the system's, outside the guard: a prefetch or a STUN server's name would be a lookup leaving here).
BROWSER_ARGS = [
    f"--proxy-server={DEAD_PROXY}",
    "--proxy-bypass-list=<-loopback>",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",  # (the switch this Chromium reads: measured, 4 -> 0 packets)
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--dns-prefetch-disable",
    "--disable-gpu",
]
MEMORY_CHECK_EVERY = 10  # pages between two looks at the browsers' memory
FORWARDED_HEADERS = frozenset({"accept", "accept-language", "referer", "x-requested-with"})
# (the body handed on is the decoded one, and the connection is this process's, not the browser's)
DROPPED_HEADERS = TRANSFER_HEADERS | {"connection"}


class BrowserUnavailable(RuntimeError):
    """No Chromium to start (its path, and how to install one, in the message)."""


def chromium_path(configured: str = "") -> str:
    """The Chromium executable: the configured one, or the system's, or one ``playwright install chromium`` put in
    its cache (cluster.yaml's browser nodes: Ubuntu's chromium is a snap)."""
    installed = sorted(glob.glob(os.path.expanduser("~/.cache/ms-playwright/chromium-*/chrome-linux*/chrome")))
    for candidate in (configured,) if configured else (*CHROMIUM_CANDIDATES, *installed[-1:]):
        found = candidate if os.path.isabs(candidate) and os.access(candidate, os.X_OK) else shutil.which(candidate)
        if found:
            return found
    raise BrowserUnavailable(
        f"no Chromium at {configured!r}"
        if configured
        else "no Chromium found: apt-get install chromium (or give its path with --render-browser)"
    )


def _netloc(url: str) -> str:
    return urlsplit(url).netloc.lower()


class _BrowserGone(Exception):
    """The browser died (or was closed) under a page."""


@dataclass(slots=True)
class _Browser:
    browser: Browser
    pages: int = 0  # rendered on it
    active: int = 0  # rendering now
    retired: bool = False  # no new page: closed when the last one ends


@dataclass(slots=True)
class _PageState:
    """One render's bookkeeping: the host's clock, the requests in flight and what was blocked."""

    job: RenderJob
    page_host: str
    free_at: float  # the host's next request not before this (wall clock)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)  # one request at a time to the host
    document_served: bool = False
    sent: int = 0
    inflight: int = 0
    quiet_since: float = field(default_factory=time.monotonic)
    blocked: Counter[str] = field(default_factory=Counter)
    over: bool = False  # the render has ended: a request still waiting for its turn is never sent


class Renderer:
    """Headless Chromium for one process (a render actor): ``render(job)`` at most ``render_pages`` at a time."""

    def __init__(self, settings: RenderSettings, fetch: FetchSettings) -> None:
        self.settings = settings
        self.fetch = fetch
        self._guard = AddressGuard(fetch)
        self._resolver = GuardedResolver(self._guard, dict(fetch.resolve))
        # (a page that came through a proxy: its scripts' requests go the same way)
        self._egress = Egress(fetch.proxies, self._resolver, dict(fetch.resolve))
        self._executable = chromium_path(settings.render_browser)
        self._playwright: Playwright | None = None
        self._current: _Browser | None = None
        self._session: aiohttp.ClientSession | None = None
        self._slots: asyncio.Semaphore | None = None
        self._launching: asyncio.Lock | None = None
        self.rendered = 0
        self._closing: set[asyncio.Future[None]] = set()
        self.launched = 0  # browsers started
        self.restarts = 0  # browsers replaced after dying
        self.replaced = 0  # browsers replaced by the page or memory bound

    async def start(self) -> None:
        """Start Playwright and a first browser (a render actor is ready when this returns)."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.settings.render_pages)
            self._launching = asyncio.Lock()
        await self._browser()

    async def close(self) -> None:
        if self._current is not None:
            await self._close(self._current)
            self._current = None
        await self._egress.close()
        if self._session is not None:
            await self._session.close()
        if self._playwright is not None:
            await self._playwright.stop()
            self._playwright = None

    async def render(self, job: RenderJob) -> RenderOutcome:
        """Render one page, tried again once on a new browser if its browser dies; never raises."""
        await self.start()
        assert self._slots is not None
        async with self._slots:
            started = time.monotonic()
            free_at, reason = job.not_before, ""
            for attempt in range(2):
                try:
                    handle = await self._browser()
                except (PlaywrightError, OSError) as exc:
                    return RenderOutcome(reason=f"browser could not start: {_short(exc)}", restarts=attempt)
                state = _PageState(job, _netloc(job.url), free_at)
                handle.active += 1
                try:
                    # (every call to a browser that died unnoticed could wait for ever: the attempt is bounded whole)
                    async with asyncio.timeout(self.settings.render_timeout + ATTEMPT_SLACK):
                        outcome = await self._render_on(handle, state, time.monotonic())
                    outcome.total_ms = (time.monotonic() - started) * 1000
                except PlaywrightError as exc:  # (none is expected here: the page ends as fetched, with the reason)
                    return RenderOutcome(reason=f"render failed: {_short(exc)}", restarts=attempt,
                                         total_ms=(time.monotonic() - started) * 1000)  # fmt: skip
                except (_BrowserGone, TimeoutError) as exc:
                    if isinstance(exc, TimeoutError):
                        exc = _BrowserGone(
                            f"the browser did not answer within {self.settings.render_timeout + ATTEMPT_SLACK:g} s"
                        )
                    # (a request of the dead page's may still be on its way: the next attempt's first one waits
                    # for it to end, then for the host's delay)
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(self.fetch.fetch_deadline):
                            await state.lock.acquire()
                            state.lock.release()
                    reason, free_at = str(exc), max(free_at, state.free_at)
                    self.restarts += 1
                    handle.retired = True
                    continue
                finally:
                    handle.active -= 1
                    handle.pages += 1
                    self._after_page(handle)
                outcome.restarts = attempt
                self.rendered += 1
                return outcome
            return RenderOutcome(
                reason=f"browser died twice under the page: {reason}",
                total_ms=(time.monotonic() - started) * 1000,
                host_free_at=free_at if free_at > job.not_before else 0.0,
                restarts=2,
            )

    # --- one page ---------------------------------------------------------------------------------------

    async def _render_on(self, handle: _Browser, state: _PageState, started: float) -> RenderOutcome:
        s = self.settings
        crashed: list[str] = []
        if not handle.browser.is_connected():
            raise _BrowserGone("the browser was gone before the page")
        try:
            context = await handle.browser.new_context(
                user_agent=self.fetch.user_agent,
                service_workers="block",
                java_script_enabled=True,
                accept_downloads=False,  # (a script's download -- a blob, a data: URL -- is cancelled, never written)
            )
        except PlaywrightError as exc:
            raise _BrowserGone(_short(exc)) from None
        outcome = RenderOutcome()
        watch = asyncio.ensure_future(self._memory_watch())
        try:
            try:  # (a browser killed after the context was made fails the next call: TargetClosedError)
                await context.route("**/*", lambda route: self._route(route, state))
                page = await context.new_page()
            except PlaywrightError as exc:
                raise _BrowserGone(_short(exc)) from None
            page.on("crash", lambda _: crashed.append("the page crashed"))
            loading = asyncio.ensure_future(self._load_and_settle(page, handle, state, started, outcome, crashed))
            await asyncio.wait({loading, watch}, return_when=asyncio.FIRST_COMPLETED)
            if not loading.done():  # (the browser went over its memory bound under this page: it is dropped)
                loading.cancel()
                await asyncio.gather(loading, return_exceptions=True)
                handle.retired = True
                self.replaced += 1
                outcome.reason = watch.result()
                return self._ended(outcome, state, started)
            loading.result()  # (_BrowserGone: the caller tries the page again on a new browser)
            try:  # (the DOM as it is, settled or not: a page that never settles still has what it built)
                outcome.html = await self._dom(page, outcome)
                if s.render_screenshots:
                    outcome.screenshot = await page.screenshot(type="png", timeout=CONTENT_TIMEOUT_MS)
            except (TimeoutError, PlaywrightError) as exc:
                if crashed or not handle.browser.is_connected():
                    raise _BrowserGone(crashed[0] if crashed else f"the browser died: {_short(exc)}") from None
                outcome.html = None
                if outcome.settled:
                    outcome.settled, outcome.reason = False, f"the DOM could not be read: {_short(exc)}"
        finally:
            watch.cancel()
            state.over = True
            await _quietly(context.close())
            async with state.lock:  # (a request on its way ends before the host's clock is read)
                pass
        return self._ended(outcome, state, started)

    async def _load_and_settle(
        self, page: Page, handle: _Browser, state: _PageState, started: float, outcome: RenderOutcome,
        crashed: list[str],
    ) -> None:  # fmt: skip
        """Load the page and wait until it settles (no request in flight for ``render_settle``) or the bound; the
        outcome says which."""
        s = self.settings
        deadline = started + s.render_timeout
        try:
            await page.goto(state.job.url, wait_until="load", timeout=max(1.0, deadline - time.monotonic()) * 1000)
            outcome.load_ms = (time.monotonic() - started) * 1000
            state.quiet_since = time.monotonic()
            confirmed: float | None = None  # the quiet a round trip to the page has confirmed
            while True:
                now = time.monotonic()
                # (quiet for render_settle within the bound: a poll that wakes late, past the deadline, does not
                # count quiet that began too late to end before it)
                if state.inflight == 0 and min(now, deadline) - state.quiet_since >= s.render_settle:
                    if confirmed == state.quiet_since:
                        break
                    # Quiet here may be a request the page made that has not reached _route yet (a loaded machine
                    # delivers them late: a page that never settles once did): ask the page something, and count
                    # the quiet at the next poll if nothing came in before the answer.
                    confirmed = state.quiet_since
                    await asyncio.wait_for(page.evaluate("0"), CONTENT_TIMEOUT_MS / 1000)
                elif now >= deadline:
                    raise TimeoutError
                if crashed or not handle.browser.is_connected():
                    raise _BrowserGone(crashed[0] if crashed else "the browser died")
                await asyncio.sleep(SETTLE_POLL_S)
            outcome.settled, outcome.reason = True, "settled"
        except (TimeoutError, PlaywrightError) as exc:
            if crashed or not handle.browser.is_connected():
                raise _BrowserGone(crashed[0] if crashed else f"the browser died: {_short(exc)}") from None
            if isinstance(exc, TimeoutError) or "Timeout" in type(exc).__name__:
                outcome.reason = f"did not settle within {s.render_timeout:g} s"
            else:
                outcome.reason = f"render failed: {_short(exc)}"

    async def _dom(self, page: Page, outcome: RenderOutcome) -> str | None:
        """The rendered DOM, within the crawl's ``max_body_bytes`` as a fetched body is (it goes to the WARC and to
        link extraction the same way): measured in the page first, so an oversized DOM never crosses to here."""
        bound = self.fetch.max_body_bytes
        size = await asyncio.wait_for(page.evaluate(DOM_SIZE_JS), CONTENT_TIMEOUT_MS / 1000)
        html: str | None = None
        if isinstance(size, int | float) and size <= bound:
            html = await asyncio.wait_for(page.content(), CONTENT_TIMEOUT_MS / 1000)
        if html is None or len(html.encode("utf-8", "surrogatepass")) > bound:
            outcome.settled, outcome.reason = False, f"the rendered DOM is over max_body_bytes ({bound:,} bytes)"
            return None
        return html

    async def _memory_watch(self) -> str:
        """Returns (with the reason) once this process's browsers hold more than ``render_max_memory_mb``; looked at
        every MEMORY_POLL_S while a page renders (a page can take gigabytes between two pages' checks)."""
        bound = self.settings.render_max_memory_mb
        while True:
            await asyncio.sleep(MEMORY_POLL_S)
            used = await asyncio.to_thread(_browser_memory_mb)
            if used > bound:
                return f"the browser went over render_max_memory_mb ({used:,.0f} > {bound} MB) under the page"

    @staticmethod
    def _ended(outcome: RenderOutcome, state: _PageState, started: float) -> RenderOutcome:
        outcome.total_ms = (time.monotonic() - started) * 1000
        outcome.requests, outcome.blocked = state.sent, dict(state.blocked)
        outcome.host_free_at = state.free_at if state.sent else 0.0
        return outcome

    async def _route(self, route: Route, state: _PageState) -> None:
        """Every request the page makes: its document from the job, its scripts' requests sent here, or refused."""
        request = route.request
        try:
            if not state.document_served and request.is_navigation_request() and request.frame.parent_frame is None:
                state.document_served = True
                job = state.job
                await route.fulfill(status=job.status, headers=dict(job.headers), body=job.body)
                return
            url = request.url
            host = urlsplit(url).hostname or ""
            refused = "address" if is_ip_literal(host) and not self._guard.allowed(host) else None
            refused = refused or subresource_verdict(
                request.method, request.resource_type, _netloc(url), state.page_host, state.sent,
                self.settings.render_max_requests,
            )  # fmt: skip
            if refused is None and request.is_navigation_request():
                refused = "navigation"
            if refused is not None:
                state.blocked[refused] += 1
                await route.abort("blockedbyclient")
                return
            state.inflight += 1
            try:
                answer = await self._send(url, request.headers, state)
            finally:
                state.inflight -= 1
                state.quiet_since = time.monotonic()
            if answer is None:
                await route.abort("failed")
            else:
                status, headers, body = answer
                await route.fulfill(status=status, headers=headers, body=body)
        except PlaywrightError:
            return  # (the page or browser went away meanwhile: the render sees it)

    async def _send(
        self, url: str, asked: dict[str, str], state: _PageState
    ) -> tuple[int, dict[str, str], bytes] | None:
        """A subresource request of the page's host, in its turn; None if it failed (the browser is told so)."""
        job, f = state.job, self.fetch
        headers = {k: v for k, v in asked.items() if k.lower() in FORWARDED_HEADERS}
        session, via = await self._http(), dict[str, Any]()
        async with state.lock:
            await sleep_until(state.free_at)
            if state.over:
                return None
            state.sent += 1
            sent_at = time.time()
            try:
                async with asyncio.timeout(f.fetch_deadline):
                    if job.proxy >= 0:
                        session, via = await self._egress.route(job.proxy, urlsplit(url).hostname or "", session)
                    async with session.get(url, headers=headers, allow_redirects=False, **via) as response:
                        body, _ = await read_body(response, f.max_body_bytes)
                        kept = {k: v for k, v in response.headers.items() if k.lower() not in DROPPED_HEADERS}
                        status = response.status
            except BlockedAddress:
                state.sent -= 1
                state.blocked["address"] += 1
                return None
            except (aiohttp.ClientError, TimeoutError, OSError, ValueError):
                state.blocked["failed"] += 1
                return None
            finally:
                ended = time.time()
                state.free_at = ended + gap_after(job.gap, job.delay_factor, job.max_delay, ended - sent_at)
        return status, kept, body

    # --- browsers -----------------------------------------------------------------------------------------

    async def _http(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(resolver=self._resolver, limit=64, limit_per_host=0)
            headers = {"User-Agent": self.fetch.user_agent, "Accept-Encoding": ACCEPT_ENCODING}
            self._session = crawl_session(connector, read_timeout(self.fetch.timeout), headers)
        return self._session

    async def _browser(self) -> _Browser:
        assert self._launching is not None
        async with self._launching:
            current = self._current
            if current is not None and not current.retired and current.browser.is_connected():
                return current
            if current is not None:
                current.retired = True
                if current.active == 0:
                    await self._close(current)
            if self._playwright is None:
                self._playwright = await async_playwright().start()
            browser = await self._playwright.chromium.launch(
                executable_path=self._executable,
                headless=True,
                args=BROWSER_ARGS,
            )
            self._current = _Browser(browser)
            self.launched += 1
            return self._current

    def _after_page(self, handle: _Browser) -> None:
        s = self.settings
        if not handle.retired and (
            handle.pages >= s.render_restart_pages
            or (handle.pages % MEMORY_CHECK_EVERY == 0 and _browser_memory_mb() > s.render_max_memory_mb)
        ):
            handle.retired = True
            self.replaced += 1
        if handle.retired and handle.active == 0:
            closing = asyncio.ensure_future(self._close(handle))  # (off the page's time: a dead one may be slow)
            self._closing.add(closing)
            closing.add_done_callback(self._closing.discard)

    async def _close(self, handle: _Browser) -> None:
        await _quietly(handle.browser.close())


def _browser_memory_mb() -> float:
    """Private resident memory of this process's browsers (every Chromium process under it: RSS less what is shared
    with others), in MB. Summed RSS counts the shared libraries and shared memory once per process: ~460 MB for an
    idle browser here, ~1,060 MB under a 3 MB page, against ~100 and ~190 private (PSS says ~230 and ~270, but
    reading smaps costs ~20-35 ms a look against ~3)."""
    total = 0
    for child in psutil.Process().children(recursive=True):
        try:
            if "chrom" in child.name().lower():
                info = child.memory_info()
                total += info.rss - info.shared
        except psutil.Error:
            continue
    return total / 1e6


async def _quietly(closing: Any) -> None:
    with contextlib.suppress(PlaywrightError, TimeoutError, OSError):
        await asyncio.wait_for(closing, 10)


def _short(exc: BaseException) -> str:
    """An exception in one line (Playwright's messages carry a call log after the first)."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__
