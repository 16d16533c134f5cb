"""Fetch a batch of leased URLs concurrently with aiohttp.

One ``Fetcher`` per worker process (``fetcher_for``): a private event loop in a daemon thread owns one
``aiohttp.ClientSession``, so connections are kept alive across the many fetch tasks a process runs. The
fetcher decides nothing about politeness: it waits for each lease's ``not_before`` (set by the host's shard) --
and, in a host's run, for the exchange before it and the host's delay after it (core/runs.py) -- sends, and
reports when the server answered. Network I/O runs on the loop; parsing, hashing and WARC writing
run on the calling thread afterwards, so a slow parse never delays another URL's request. What a fetch means for its
record: adapters/fetch_errors.py; what is stored of it (WARC, items, pages held for the payload registry):
adapters/page_output.py; a page handed to the render pool: adapters/render_handoff.py.

Why aiohttp rather than httpx: the answer-paced politeness clock (the next slot counts from when the answer
was seen) makes every millisecond the fetch loop spends on a request a millisecond of each host's cycle.
Measured on loopback, httpx costs ~1.5 ms of CPU per request and aiohttp ~0.45 ms (its parser is C), and in
the 40-host polite benchmark that is 95.4% against 98.0% of the ideal rate (benchmarks/README.md).

Addresses are resolved and checked by ``GuardedResolver`` (adapters/address_guard.py: ``--resolve`` overrides
first): the connection goes to the address that was checked, so no later lookup can swap it (no DNS rebinding), and
every redirect hop is a request of its own, checked again. An IP-literal URL is checked before sending (aiohttp
connects to literals without asking a resolver). Proxies: adapters/egress.py.
"""

from __future__ import annotations

import asyncio
import atexit
import hashlib
import importlib
import os
import queue
import ssl
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol, cast
from urllib.parse import urljoin

import aiohttp
from yarl import URL

from raycrawl.adapters.address_guard import AddressGuard, BlockedAddress, GuardedResolver
from raycrawl.adapters.egress import Egress, ProxyAuthRefused, ProxyUnreachable
from raycrawl.adapters.exchange import Exchange
from raycrawl.adapters.extraction import Extraction, page_of
from raycrawl.adapters.fetch_errors import RedirectFailed, fault_result, fetch_error
from raycrawl.adapters.handoff import Handoff
from raycrawl.adapters.http_session import crawl_session, read_timeout
from raycrawl.adapters.page_output import PageOutput
from raycrawl.adapters.render_handoff import add_rendered_links, maybe_render, render_budget
from raycrawl.core.addresses import is_ip_literal
from raycrawl.core.captures import Capture, Claim
from raycrawl.core.clean import clean_text, describe_exception
from raycrawl.core.decoding import ACCEPT_ENCODING, BoundedDecoder
from raycrawl.core.fetch_settings import FetchSettings
from raycrawl.core.headers import parse_retry_after
from raycrawl.core.links import decode_html, extract_links
from raycrawl.core.media_types import is_html
from raycrawl.core.proxy_routes import CONNECT_ERRORS
from raycrawl.core.records import FetchResult, Lease, SitemapRead, ack_of
from raycrawl.core.render_jobs import RenderJob, RenderOutcome
from raycrawl.core.render_rules import RenderMode, RenderRules
from raycrawl.core.revisits import conditional_headers
from raycrawl.core.robots import MAX_ROBOTS_BYTES
from raycrawl.core.runs import ends_run, gap_after
from raycrawl.core.settle_timing import SETTLE_SOONEST
from raycrawl.core.sitemaps import MAX_BYTES as MAX_SITEMAP_BYTES
from raycrawl.core.sitemaps import parse_sitemap, sitemap_outlinks
from raycrawl.core.urls import canonicalize, host_key, hostname, request_form

MAX_CONNECTIONS = 1024  # open connections per worker process, all hosts together (politeness is the shards')
DNS_CACHE_S = 10  # resolved (and checked) addresses kept this long
TRANSIENT_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
ROBOTS_MAX_REDIRECTS = 5  # RFC 9309 section 2.3.1.2
MAX_CONTENT_TYPE = 200  # characters of a Content-Type kept in a record (a real one is far shorter)
MAX_VALIDATOR = 200  # ... and of an ETag or Last-Modified (sent back as they were in a recrawl)
PRIVATE_HEADERS = frozenset({"proxy-authorization"})  # sent, never written to a WARC request record
# Exchanges reach the caller's thread gathered this long (adapters/handoff.py): no later than their results may
# go on anyway (core/settle_timing.py counts each one's wait from its exchange's end).
HANDOFF_WINDOW = SETTLE_SOONEST

# A seam for benchmarks (benchmarks/machinery.py): "module:factory" of a responder that answers requests in process
# instead of the network (raycrawl.testing.synthetic's). Imported by name, so the fetcher depends on no test code;
# never set in a crawl. (Not RAYCRAWL_*: those are configuration, and an unknown one is refused.)
RESPONDER_ENV = "_RAYCRAWL_RESPONDER"


class Responder(Protocol):
    def answer(self, url: str) -> Any: ...


def responder_from_env(environ: Mapping[str, str] = os.environ) -> Responder | None:
    """The in-process responder the environment names, or None (every real crawl)."""
    named = environ.get(RESPONDER_ENV)
    if not named:
        return None
    module, _, factory = named.partition(":")
    made: Responder | None = getattr(importlib.import_module(module), factory)()
    return made


class Fetcher:
    """A worker process's fetching: an event loop on its own thread with one HTTP session, the address guard and the
    proxies; results come back to the calling thread (``fetch_stream``), which turns each exchange into its result
    and its stored records (adapters/page_output.py)."""

    def __init__(self, settings: FetchSettings) -> None:
        self.settings = settings
        self._guard = AddressGuard(settings)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="raycrawl-fetch-loop", daemon=True)
        self._thread.start()
        self._extraction = Extraction(settings.extraction) if settings.extraction is not None else None
        self._output = PageOutput(settings, self._extraction)  # its WARC records and item lines
        self._running: set[asyncio.Task[None]] = set()
        self._synthetic = responder_from_env()
        self._send = self._request if self._synthetic is None else self._answer_synthetic
        self._render_rules = RenderRules.of(cast(RenderMode, settings.render), settings.render_rules)
        # Set by the fetch task when the crawl has a render pool: awaited on this loop with a page to render.
        self.renderer: Callable[[RenderJob], Awaitable[RenderOutcome]] | None = None
        self._resolver = GuardedResolver(self._guard, dict(settings.resolve))
        self._egress = Egress(settings.proxies, self._resolver, dict(settings.resolve))
        # Made on the loop that uses it (aiohttp binds a session to its loop), before any task needs it.
        self._session = asyncio.run_coroutine_threadsafe(self._new_session(), self._loop).result(timeout=60)

    async def _new_session(self) -> aiohttp.ClientSession:
        s = self.settings
        connector = aiohttp.TCPConnector(
            resolver=self._resolver,
            limit=MAX_CONNECTIONS,
            limit_per_host=0,  # one host's concurrency is its shard's decision, never a pool's queue
            ttl_dns_cache=DNS_CACHE_S,
            ssl=ssl.create_default_context(),
        )
        headers = {"User-Agent": s.user_agent, "Accept": "text/html,*/*;q=0.8", "Accept-Encoding": ACCEPT_ENCODING}
        return crawl_session(connector, read_timeout(s.timeout), headers)

    def close(self) -> None:
        """Close the session's connections and stop the loop (at process exit, and in tests)."""
        if not self._thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self._session.close(), self._loop).result(timeout=10)
        asyncio.run_coroutine_threadsafe(self._egress.close(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._output.close()

    def fetch_stream(
        self,
        leases: Sequence[Lease],
        epoch: int = 0,
        tick: float | None = None,
        node: str = "",
        hold_pages: bool = False,
        more: Callable[[bool], Sequence[Lease]] | None = None,
    ) -> Iterator[list[FetchResult]]:
        """Results in small groups, as their requests complete; with ``tick``, an empty group whenever that long
        passes without one (so the caller can act on time, e.g. send what it holds). WARC goes to the ``node``
        directory of the buffer. ``hold_pages``: the WARC of pages with a payload waits until the caller says
        which payloads were captured before (``held_claims``, then ``write_held``), before their results go on.
        ``more``: leases to add to the stream, asked after each group (``more(False)``: none to wait for) and
        when every lease so far is done (``more(True)``: it may wait for some; none then ends the stream).

        Leases in one batch are due at different times; streaming lets each host's answer reach its shard at
        once instead of when the batch's last URL is done, so no host waits on another host's schedule.
        """
        self._output.start(epoch, node, hold_pages)
        done: Handoff[tuple[Lease, Exchange | BaseException]] = Handoff(self._loop, HANDOFF_WINDOW)
        # One wake-up of the loop for the whole batch: a cross-thread call per URL cost ~5% of a fetch worker.
        self._loop.call_soon_threadsafe(self._start, leases, done)
        remaining = len(leases)
        while remaining or more is not None:
            if not remaining:
                assert more is not None
                added = more(True)
                if not added:
                    return
                self._loop.call_soon_threadsafe(self._start, added, done)
                remaining += len(added)
            try:
                group = done.take(timeout=tick)
            except queue.Empty:
                group = []
            remaining -= len(group)
            results = [self._finished(lease, item) for lease, item in group]
            if results:
                self._flush()
            yield results
            if more is not None and (added := more(False)):
                self._loop.call_soon_threadsafe(self._start, added, done)
                remaining += len(added)

    def _finished(self, lease: Lease, item: Exchange | BaseException) -> FetchResult:
        """The URL's result, whatever happened: the fault boundary of one URL (docs/architecture.md, invariant 7).
        An exception anywhere -- in the exchange, decoding, parsing, hashing, WARC writing -- becomes this URL's own
        ``error`` result; it never reaches the task, the other URLs of the batch, or the shard."""
        if isinstance(item, BaseException):  # (the exchange itself raised past its own handlers)
            failed = FetchResult(lease=lease, error=describe_exception(item), fault=type(item).__name__)
            failed.responded_at = failed.ended_at = time.time()
            return failed
        try:
            self._finish(item)
        except Exception as exc:
            fault_result(item.result, exc)
            item.result.body = None
        return item.result

    def _flush(self) -> None:
        self._output.flush()

    # --- pages held for the payload registry (on the calling thread): adapters/page_output.py -----------------

    def held_claims(self) -> list[Claim]:
        """The held pages' claims to be their payload's first capture, in the order ``write_held`` takes answers."""
        return self._output.held_claims()

    def write_held(self, firsts: Sequence[Capture | None]) -> None:
        """Write the held pages' WARC (a revisit record where ``firsts`` names an earlier capture)."""
        self._output.write_held(firsts)

    # --- on the loop ---------------------------------------------------------------------------------

    def _start(self, leases: Sequence[Lease], done: Handoff[tuple[Lease, Exchange | BaseException]]) -> None:
        # A host's run (core/runs.py) is one coroutine sending its leases one after another, not a task per lease
        # waiting on the one before: a task, its done callback and an asyncio.wait per page cost more than the
        # page's own scheduling (benchmarks/README.md, issue 51).
        chains: list[list[Lease]] = []
        chain_of: dict[tuple[int, int], list[Lease]] = {}  # (lease ids are a shard's own: two shards' may be equal)
        for lease in leases:  # (a run's leases come after the one each names: core/runs.py)
            chain = chain_of.get((lease.shard, lease.after)) if lease.after else None
            if chain is None:
                chain = []
                chains.append(chain)
            chain.append(lease)  # (after all its chain's leases: never sooner than after the one it names)
            chain_of[lease.shard, lease.lease_id] = chain
        for chain in chains:
            task = self._loop.create_task(self._run(chain, done))
            self._running.add(task)  # (the loop keeps only a weak reference to a task)
            task.add_done_callback(self._running.discard)

    async def _run(self, chain: list[Lease], done: Handoff[tuple[Lease, Exchange | BaseException]]) -> None:
        """A run's leases in order, each one's exchange (or what escaped it) to the caller's queue as it ends; a
        lease after one that ended the run, or failed past its handlers, is given back unsent."""
        previous: FetchResult | None = None
        for i, lease in enumerate(chain):
            try:
                ex = await (self._fetch_one(lease) if i == 0 else self._fetch_next(lease, previous))
            except asyncio.CancelledError:  # (only when the loop is closing under it)
                for left in chain[i:]:
                    done.put((left, asyncio.CancelledError("fetch cancelled")))
                done.flush()  # (the loop may stop before the window ends)
                raise
            except Exception as exc:
                done.put((lease, exc))
                previous = None
                continue
            done.put((lease, ex))
            previous = ex.result

    async def _fetch_next(self, lease: Lease, previous: FetchResult | None) -> Exchange:
        """A run's next lease: sent once the exchange before it has ended and the host's delay after it has passed
        (the shard's own rule, core/runs.py); given back unsent when that answer ends the run."""
        if previous is None or previous.unsent or ends_run(previous.status, previous.transient, previous.error):
            return _unsent(lease)
        s = self.settings
        answer = ack_of(previous)  # (what the shard's clock would move by: the same end and the same exchange time)
        gap = gap_after(lease.gap, s.delay_factor, s.max_delay, answer.elapsed_s)
        return await self._fetch_one(lease, max(lease.not_before, answer.ended_at + gap))

    async def _fetch_one(self, lease: Lease, send_at: float | None = None) -> Exchange:
        ex = Exchange(FetchResult(lease=lease))
        r = ex.result
        s = self.settings
        send_at = lease.not_before if send_at is None else send_at
        # A lease that could expire before this fetch ends may be handed out again: sending could break politeness.
        if max(send_at, time.time()) + s.fetch_deadline + self._render_budget(lease) + 5.0 > lease.expires_at:
            if lease.after:  # (a run that took too long: the rest goes back as it was)
                return _unsent(lease)
            r.error, r.transient = "LeaseExpired", True
            r.responded_at = r.ended_at = time.time()
            return ex
        await sleep_until(send_at)
        url = lease.request_url  # the link as it was written (normalised as RFC 3986 6.2.2 allows), not its dedup key
        hops = ROBOTS_MAX_REDIRECTS if lease.kind == "robots" else 0
        limit = {"robots": MAX_ROBOTS_BYTES, "sitemap": MAX_SITEMAP_BYTES}.get(lease.kind, s.max_body_bytes)
        try:
            # The whole fetch, however the server dribbles its bytes, ends by the deadline.
            async with asyncio.timeout(s.fetch_deadline):
                for hop in range(hops + 1):
                    await self._send(url, ex, limit)
                    if not (r.status in REDIRECT_STATUSES and hop < hops):
                        break  # (a redirect past the last hop: "unavailable", RFC 9309 2.3.1.2)
                    target = request_form(urljoin(url, ex.location)) if ex.location else None
                    if target is None:  # a hop that cannot be followed: robots.txt is unreachable, not absent
                        raise RedirectFailed(f"redirect from {url} has no usable Location")
                    url = target
        except Exception as exc:  # (one map: adapters/fetch_errors.py)
            r.error, r.transient, r.fault = fetch_error(exc, s.fetch_deadline)
        # The exchange is over (last byte read, or the connection cut): politeness counts from here, so a server
        # that spent its deadline dripping a body does not see the next request the moment it is cut.
        r.ended_at = time.time()
        r.responded_at = r.responded_at or r.ended_at  # (a failure: the slot counts from when it was known)
        r.final_url = url
        r.elapsed_ms = round((r.responded_at - r.sent_at) * 1000, 3) if r.sent_at else 0.0
        if self.renderer is not None and lease.kind == "page":
            await maybe_render(ex, self.settings, self._render_rules, self.renderer)
        return ex

    def _render_budget(self, lease: Lease) -> float:
        """How much longer than a fetch this lease may take: a render's bound, when its page may be rendered."""
        return render_budget(lease, self.settings, self._render_rules) if self.renderer is not None else 0.0

    async def _request(self, url: str, ex: Exchange, limit: int) -> None:
        r = ex.result
        host = hostname(host_key(url))
        if is_ip_literal(host) and not self._guard.allowed(host):
            raise BlockedAddress(f"{host} is not an address this crawl may connect to")
        session, via = self._session, dict[str, Any]()
        if r.lease.proxy >= 0:
            session, via = await self._egress.route(r.lease.proxy, host, session)
            ex.proxy = self._egress.name(r.lease.proxy)
        r.sent_at = time.time()
        # encoded=True: the canonical URL is sent as it is (yarl would otherwise re-quote it)
        conditional = conditional_headers(r.lease.entry.known)  # (a recrawl: the earlier capture's validators)
        try:
            async with session.get(
                URL(url, encoded=True), allow_redirects=False, headers=conditional or None, **via
            ) as response:
                await self._received(response, ex, limit)
        except (aiohttp.ClientError, TimeoutError):
            raise
        except Exception as exc:
            if ex.proxy is not None and type(exc).__name__ in CONNECT_ERRORS:  # (aiohttp-socks' own)
                raise ProxyUnreachable(type(exc).__name__) from None
            raise

    async def _received(self, response: aiohttp.ClientResponse, ex: Exchange, limit: int) -> None:
        r = ex.result
        r.responded_at = time.time()
        if response.status == 407 and ex.proxy is not None:
            raise ProxyAuthRefused("ProxyAuthRefused")
        r.status = response.status
        r.transient = response.status in TRANSIENT_STATUSES
        if r.transient:
            r.error = f"HTTP {response.status}"  # a response, but not a usable one
        headers = response.headers
        r.content_type = clean_text(headers.get("Content-Type"), MAX_CONTENT_TYPE)
        if response.status in (429, 503):
            r.retry_at = parse_retry_after(headers.get("Retry-After"), r.responded_at)
        ex.location = headers.get("Location")
        r.etag = clean_text(headers.get("ETag"), MAX_VALIDATOR)
        r.last_modified = clean_text(headers.get("Last-Modified"), MAX_VALIDATOR)
        # (never a proxy's credentials: aiohttp puts them among the request's headers for a plain-HTTP target)
        ex.request_headers = list(response.request_info.headers.items())
        if ex.proxy is not None:
            ex.request_headers = [(k, v) for k, v in ex.request_headers if k.lower() not in PRIVATE_HEADERS]
        ex.reason = response.reason or ""
        ex.ip = _peer_address(response) if ex.proxy is None else None  # (through a proxy: the proxy's address)
        ex.raw_headers = list(response.raw_headers)
        ex.body, r.truncated = await read_body(response, limit)

    async def _answer_synthetic(self, url: str, ex: Exchange, limit: int) -> None:
        """The synthetic web's answer instead of a request (``raycrawl.testing.synthetic``; never in a crawl)."""
        assert self._synthetic is not None
        r = ex.result
        r.sent_at = time.time()
        answer = self._synthetic.answer(url)
        r.responded_at = time.time()
        r.status = answer.status
        r.content_type = answer.header("Content-Type")
        ex.request_headers = [("User-Agent", self.settings.user_agent)]
        ex.reason = "OK" if answer.status == 200 else "Not Found"
        ex.raw_headers = answer.headers
        ex.body, r.truncated = answer.body[:limit], len(answer.body) > limit

    # --- on the calling thread -----------------------------------------------------------------------

    def _finish(self, ex: Exchange) -> None:
        r = ex.result
        if r.status is None:
            return
        r.size = len(ex.body)
        r.sha256 = hashlib.sha256(ex.body).hexdigest()
        too_large = r.truncated and r.lease.kind == "page"
        if r.lease.kind == "robots":
            r.body = ex.body  # (a robots.txt over the limit is parsed as far as it was read: RFC 9309 2.5)
        elif 300 <= r.status < 400:
            self._redirect(ex)
        elif r.lease.kind == "sitemap":
            if 200 <= r.status < 300:  # (read as far as it came: past the bound it says so)
                sitemap = parse_sitemap(ex.body)
                r.outlinks, r.spellings, r.hints = sitemap_outlinks(sitemap, self.settings.tracking_params)
                r.sitemap = SitemapRead(
                    sitemap.kind, len(sitemap.entries), sitemap.over_limit or r.truncated, sitemap.error
                )
        elif 200 <= r.status < 300 and not too_large and is_html(r.content_type, ex.body[:512]):
            html = ex.html if ex.html is not None else decode_html(ex.body, r.content_type)
            links = extract_links(html, r.lease.request_url, self.settings.tracking_params, self.settings.max_outlinks)
            r.outlinks, r.spellings, r.links_capped = links.urls, links.spellings, links.capped
            if ex.render is not None:
                add_rendered_links(ex, self.settings)
        if self._extraction is not None and r.lease.kind == "page" and 200 <= r.status < 300 and not too_large:
            self._extract(ex, self._extraction)
        self._output.keep(ex, too_large)

    def _redirect(self, ex: Exchange) -> None:
        """A redirect's target as the result's one link. Redirect targets go back through the frontier like any
        link: scope, robots, the address guard and dedup all apply to every hop there, and the hop count travels
        with the URL."""
        r = ex.result
        written = urljoin(r.lease.request_url, ex.location) if ex.location else None
        target = canonicalize(written, self.settings.tracking_params) if written else None
        if target:
            r.final_url = target
            r.outlinks = [target]
            requested = request_form(written)  # type: ignore[arg-type]
            if requested and requested != target:
                r.spellings = {target: requested}

    @staticmethod
    def _extract(ex: Exchange, extraction: Extraction) -> None:
        """The crawl's extractor and contract on the page (its verdict is put on the result with its item's line),
        and what score_links says its links are worth."""
        page = page_of(ex.result, ex.body, ex.raw_headers, ex.render)
        ex.judgement = extraction.judge(page)
        ex.result.link_scores = extraction.score_links(page, ex.judgement.item)


async def sleep_until(when: float) -> None:
    """Until the wall clock reads ``when``, however early the loop's timers fire: with uvloop installed, Ray makes
    it every new loop's kind, and libuv's millisecond timers woke a request up to ~0.5 ms before its slot (the
    server saw gaps of 0.1995 s under a 0.2 s delay)."""
    while (left := when - time.time()) > 0:
        await asyncio.sleep(left)


def _unsent(lease: Lease) -> Exchange:
    """A run's lease given back without a request (core/runs.py)."""
    ex = Exchange(FetchResult(lease=lease, unsent=True))
    ex.result.responded_at = ex.result.ended_at = time.time()
    return ex


async def read_body(response: aiohttp.ClientResponse, limit: int) -> tuple[bytes, bool]:
    """The decoded body, at most ``limit`` bytes, and whether there was more (then reading stopped early,
    and the connection is closed rather than kept: the rest of the body is still on its way)."""
    decoder = BoundedDecoder(response.headers.get("Content-Encoding"), limit)
    body = bytearray()
    raw = 0
    async for chunk in response.content.iter_any():
        raw += len(chunk)
        body += decoder.feed(chunk)
        if decoder.truncated or raw > limit:  # (raw too: a stream can decode to nothing forever)
            response.close()
            return bytes(body), True
    return bytes(body), False


def _peer_address(response: aiohttp.ClientResponse) -> str | None:
    """The IP address the response came from, while its connection is open."""
    connection = response.connection
    # (a response without a body has handed its connection back already: its protocol still knows the socket)
    protocol = connection.protocol if connection is not None else getattr(response, "_protocol", None)
    transport = getattr(protocol, "transport", None)
    peer = transport.get_extra_info("peername") if transport is not None else None
    return str(peer[0]) if isinstance(peer, tuple) and peer else None


_FETCHERS: dict[FetchSettings, Fetcher] = {}
_FETCHERS_LOCK = threading.Lock()


def fetcher_for(settings: FetchSettings) -> Fetcher:
    """The process's Fetcher for these settings, created on first use and reused by later tasks."""
    with _FETCHERS_LOCK:
        fetcher = _FETCHERS.get(settings)
        if fetcher is None:
            fetcher = _FETCHERS[settings] = Fetcher(settings)
            atexit.register(fetcher.close)  # (a session left open makes aiohttp complain as the process ends)
        return fetcher
