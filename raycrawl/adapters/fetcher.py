"""Fetch a batch of leased URLs concurrently with httpx.

One ``Fetcher`` per worker process (``fetcher_for``): a private event loop in a daemon thread owns one
``httpx.AsyncClient``, so connections are reused across the many fetch tasks a process runs. The fetcher
decides nothing about politeness: it waits for each lease's ``not_before`` (set by the host's shard), sends,
and reports when the server answered. Network I/O runs on the loop; parsing, hashing and WARC writing run on
the calling thread afterwards, so a slow parse never delays another URL's request.

Addresses are resolved here (``--resolve`` overrides first), and the request goes to the resolved address with
the original Host header: what was resolved is what is connected to.
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import queue
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from urllib.parse import urljoin

import anyio
import httpx

from raycrawl.adapters.warc import WarcSink
from raycrawl.core.addresses import address_allowed, parse_networks
from raycrawl.core.decoding import ACCEPT_ENCODING, BoundedDecoder, DecodingError
from raycrawl.core.headers import parse_retry_after
from raycrawl.core.links import decode_html, extract_links, is_html
from raycrawl.core.records import FetchResult, Lease
from raycrawl.core.robots import MAX_ROBOTS_BYTES
from raycrawl.core.urls import DEFAULT_PORTS, canonicalize, path_of, split_netloc

MAX_POOLS = 1024  # connection pools (one per origin) kept open per worker process
TRANSIENT_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
ROBOTS_MAX_REDIRECTS = 5  # RFC 9309 section 2.3.1.2


@dataclass(frozen=True, slots=True)
class FetchSettings:
    user_agent: str = "raycrawl/0.1"
    timeout: float = 30.0
    deadline: float = 60.0
    max_body_bytes: int = 10 * 1024 * 1024
    keep_truncated: bool = False
    max_outlinks: int = 5000
    tracking_params: tuple[str, ...] = ()
    resolve: tuple[tuple[str, str], ...] = ()
    warc_dir: str | None = None
    allow_private_networks: bool = False
    allow_networks: tuple[str, ...] = ()


class BlockedAddress(Exception):
    """The host resolved to an address the crawl may not connect to (loopback, private, metadata ...)."""


@dataclass(slots=True)
class _Exchange:
    """One request/response as seen on the wire, kept until the calling thread has used it."""

    result: FetchResult
    request_headers: list[tuple[str, str]] = field(default_factory=list)
    status_line: str = ""
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""


class Fetcher:
    def __init__(self, settings: FetchSettings) -> None:
        self.settings = settings
        self._resolve = dict(settings.resolve)
        self._allowed_networks = parse_networks(settings.allow_networks)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="raycrawl-fetch-loop", daemon=True)
        self._thread.start()
        # One small connection pool per origin: httpcore scans every pooled connection on each request, so a
        # single pool shared by hundreds of hosts costs O(hosts) per request. Least recently used pools close.
        self._clients: OrderedDict[tuple[str, str, int], httpx.AsyncClient] = OrderedDict()
        self._ssl = httpx.create_ssl_context()  # building one costs ~30 ms: share it across the pools
        self._warc: WarcSink | None = None
        self._prime()

    def _prime(self) -> None:
        """Do now what the first request would: import httpcore, h11 and anyio's asyncio backend (~0.2 s).

        The fetcher is made when a worker process warms up; left to the first request, this would happen
        in the middle of the crawl's first seconds, in every worker process at once, delaying every host.
        """

        async def first_use() -> None:
            client = httpx.AsyncClient(trust_env=False, verify=self._ssl)
            await anyio.sleep(0)  # (anyio loads its backend for the running loop on first use)
            await client.aclose()

        asyncio.run_coroutine_threadsafe(first_use(), self._loop).result(timeout=60)

    def _client_for(self, scheme: str, address: str, port: int) -> httpx.AsyncClient:
        key = (scheme, address, port)
        client = self._clients.get(key)
        if client is not None:
            self._clients.move_to_end(key)
            return client
        client = httpx.AsyncClient(
            timeout=httpx.Timeout(self.settings.timeout),
            follow_redirects=False,
            trust_env=False,  # never route through a proxy from the environment
            verify=self._ssl,
            limits=httpx.Limits(max_connections=32, max_keepalive_connections=8),
            headers={
                "User-Agent": self.settings.user_agent,
                "Accept": "text/html,*/*;q=0.8",
                "Accept-Encoding": ACCEPT_ENCODING,  # decoded by us, within max_body_bytes (core/decoding.py)
            },
        )
        self._clients[key] = client
        while len(self._clients) > MAX_POOLS:
            _, old = self._clients.popitem(last=False)
            self._loop.create_task(old.aclose())
        return client

    def _use_epoch(self, epoch: int) -> None:
        """WARC records go to a file of the current checkpoint epoch (see adapters/warc.py)."""
        if self.settings.warc_dir is None:
            return
        if self._warc is not None and self._warc.epoch == epoch and self._warc.path.exists():
            return  # (a rollback deletes the files of the epoch it undoes: then a new file is needed)
        if self._warc is not None:
            self._warc.close()
        self._warc = WarcSink(self.settings.warc_dir, epoch)

    def fetch_stream(self, leases: Sequence[Lease], epoch: int = 0) -> Iterator[list[FetchResult]]:
        """Results in small groups, as their requests complete.

        Leases in one batch are due at different times; streaming lets each host's answer reach its shard at
        once instead of when the batch's last URL is done, so no host waits on another host's schedule.
        """
        self._use_epoch(epoch)
        done: queue.SimpleQueue[_Exchange | BaseException] = queue.SimpleQueue()
        for lease in leases:
            future = asyncio.run_coroutine_threadsafe(self._fetch_one(lease), self._loop)
            future.add_done_callback(lambda f: done.put(f.exception() or f.result()))
        remaining = len(leases)
        while remaining:
            group = [done.get()]
            while True:  # take whatever else has completed meanwhile
                try:
                    group.append(done.get_nowait())
                except queue.Empty:
                    break
            remaining -= len(group)
            results = []
            for item in group:
                if isinstance(item, BaseException):
                    raise item
                self._finish(item)
                results.append(item.result)
            if self._warc is not None:
                self._warc.flush()
            yield results

    # --- on the loop ---------------------------------------------------------------------------------

    async def _fetch_one(self, lease: Lease) -> _Exchange:
        ex = _Exchange(FetchResult(lease=lease))
        r = ex.result
        s = self.settings
        wait = max(0.0, lease.not_before - time.time())
        # A lease that could expire before this fetch ends may be handed out again: sending could break politeness.
        if time.time() + wait + s.deadline + 5.0 > lease.expires_at:
            r.error, r.transient, r.responded_at = "LeaseExpired", True, time.time()
            return ex
        if wait > 0:
            await asyncio.sleep(wait)
        url = lease.url
        hops = ROBOTS_MAX_REDIRECTS if lease.kind == "robots" else 0
        limit = MAX_ROBOTS_BYTES if lease.kind == "robots" else s.max_body_bytes
        try:
            # The whole fetch, however the server dribbles its bytes, ends by the deadline.
            async with asyncio.timeout(s.deadline):
                for _ in range(hops + 1):
                    await self._request(url, ex, limit)
                    location = dict(ex.response_headers).get("location")
                    if not (r.status in (301, 302, 303, 307, 308) and location and hops):
                        break
                    target = canonicalize(urljoin(url, location))
                    if target is None:
                        break
                    url = target
        except TimeoutError:
            r.error, r.transient = f"Deadline: not done in {s.deadline:g} s", True
            r.responded_at = r.responded_at or time.time()
        except (httpx.HTTPError, OSError, ValueError, BlockedAddress) as exc:
            r.error = type(exc).__name__ if not isinstance(exc, DecodingError) else f"DecodingError: {exc}"
            r.transient = not isinstance(exc, ValueError | BlockedAddress)
            r.responded_at = r.responded_at or time.time()
        r.final_url = url
        r.elapsed_ms = round((r.responded_at - r.sent_at) * 1000, 3) if r.sent_at else 0.0
        return ex

    async def _request(self, url: str, ex: _Exchange, limit: int) -> None:
        r = ex.result
        scheme, _, rest = url.partition("://")
        netloc = rest.split("/", 1)[0]
        host, explicit_port = split_netloc(netloc)
        port = explicit_port or DEFAULT_PORTS[scheme]
        address = await self._address_of(host, port)  # checked again on every hop
        ip_netloc = f"[{address}]" if ":" in address else address
        target = f"{scheme}://{ip_netloc}:{port}{path_of(url)}"
        headers = {"Host": netloc}
        extensions = {"sni_hostname": host} if scheme == "https" else {}
        client = self._client_for(scheme, address, port)
        request = client.build_request("GET", target, headers=headers, extensions=extensions)
        ex.request_headers = [(k.decode(), v.decode()) for k, v in request.headers.raw]
        r.sent_at = time.time()
        response = await client.send(request, stream=True)
        try:
            r.responded_at = time.time()
            r.status = response.status_code
            r.transient = response.status_code in TRANSIENT_STATUSES
            if r.transient:
                r.error = f"HTTP {response.status_code}"  # a response, but not a usable one
            r.content_type = response.headers.get("content-type")
            if response.status_code in (429, 503):
                r.retry_at = parse_retry_after(response.headers.get("retry-after"), r.responded_at)
            ex.status_line = f"{response.status_code} {response.reason_phrase}"
            ex.response_headers = list(response.headers.multi_items())
            ex.body, r.truncated = await _read_body(response, limit)
        finally:
            await response.aclose()

    async def _address_of(self, host: str, port: int) -> str:
        """The address to connect to: resolved here and checked, so no later lookup can swap it."""
        address = self._resolve.get(host)
        if address is None and _is_ip_literal(host):
            address = host  # no lookup (and no trip through the executor) for an address
        if address is None:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
            if not infos:
                raise OSError(f"no address for {host}")
            address = str(infos[0][4][0])
        s = self.settings
        if not address_allowed(address, s.allow_private_networks, self._allowed_networks):
            raise BlockedAddress(f"{host} resolves to {address}")
        return address

    # --- on the calling thread -----------------------------------------------------------------------

    def _finish(self, ex: _Exchange) -> None:
        r = ex.result
        if r.status is None:
            return
        r.size = len(ex.body)
        r.sha256 = hashlib.sha256(ex.body).hexdigest()
        too_large = r.truncated and r.lease.kind == "page"
        if r.lease.kind == "robots":
            r.body = ex.body  # (a robots.txt over the limit is parsed as far as it was read: RFC 9309 2.5)
        elif 300 <= r.status < 400:
            location = dict(ex.response_headers).get("location")
            target = canonicalize(urljoin(r.lease.url, location), self.settings.tracking_params) if location else None
            if target:
                # Redirect targets go back through the frontier like any link: scope, robots, the address guard
                # and dedup all apply to every hop there, and the hop count travels with the URL.
                r.final_url = target
                r.outlinks = [target]
        elif 200 <= r.status < 300 and not too_large and is_html(r.content_type, ex.body[:512]):
            html = decode_html(ex.body, r.content_type)
            r.outlinks = extract_links(html, r.lease.url, self.settings.tracking_params, self.settings.max_outlinks)
        if self._warc is not None and (not too_large or self.settings.keep_truncated):
            self._warc.write(
                r.lease.url, ex.request_headers, ex.status_line, ex.response_headers, ex.body, truncated=too_large
            )


async def _read_body(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    """The decoded body, at most ``limit`` bytes, and whether there was more (then reading stopped early)."""
    decoder = BoundedDecoder(response.headers.get("content-encoding"), limit)
    body = bytearray()
    raw = 0
    async for chunk in response.aiter_raw():
        raw += len(chunk)
        body += decoder.feed(chunk)
        if decoder.truncated or raw > limit:  # (raw too: a stream can decode to nothing forever)
            return bytes(body), True
    return bytes(body), False


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


_FETCHERS: dict[FetchSettings, Fetcher] = {}
_FETCHERS_LOCK = threading.Lock()


def fetcher_for(settings: FetchSettings) -> Fetcher:
    """The process's Fetcher for these settings, created on first use and reused by later tasks."""
    with _FETCHERS_LOCK:
        fetcher = _FETCHERS.get(settings)
        if fetcher is None:
            fetcher = _FETCHERS[settings] = Fetcher(settings)
        return fetcher
