"""How a fetch worker sends a request through the proxy its lease names (core/proxy_routes.py chose it).

HTTP and HTTPS proxies are aiohttp's own (``proxy=``: absolute-form requests, CONNECT for https targets); SOCKS
proxies take a session of their own through aiohttp-socks' connector, made on first use. Credentials travel as a
``BasicAuth`` apart from the proxy's URL, so no error message or log line aiohttp writes about a proxy holds them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import aiohttp
from yarl import URL

from raycrawl.core.proxy_routes import redact_text

SOCKS_SCHEMES = ("socks5", "socks5h", "socks4")


class ProxyUnreachable(OSError):
    """A SOCKS proxy that could not be reached or refused the connection (the HTTP kinds raise aiohttp's own)."""


class ProxyAuthRefused(OSError):
    """The proxy answered 407: the answer is the proxy's, not the page's (retried, never recorded or archived)."""


@dataclass(slots=True)
class _Proxy:
    name: str  # redacted: for WARC records and reports
    url: str  # with credentials (SOCKS connectors take them in the URL)
    address: URL  # without credentials
    auth: aiohttp.BasicAuth | None
    socks: bool
    session: aiohttp.ClientSession | None = None  # a SOCKS proxy's own, made on first use


class Egress:
    def __init__(self, urls: tuple[str, ...]) -> None:
        self.proxies = [_parsed(url) for url in urls]

    @property
    def hostnames(self) -> frozenset[str]:
        """The proxies' hosts: addresses the crawl connects to because the operator named them (the address guard
        that applies to targets does not)."""
        return frozenset(p.address.host for p in self.proxies if p.address.host)

    def name(self, proxy: int) -> str | None:
        return self.proxies[proxy].name if proxy >= 0 else None

    def route(self, proxy: int, session: aiohttp.ClientSession) -> tuple[aiohttp.ClientSession, dict[str, Any]]:
        """The session and the request's keyword arguments for a lease's proxy (``session``: the worker's own)."""
        p = self.proxies[proxy]
        if not p.socks:
            return session, {"proxy": p.address, "proxy_auth": p.auth}
        if p.session is None:
            p.session = _socks_session(p.url, session)
        return p.session, {}

    async def close(self) -> None:
        for p in self.proxies:
            if p.session is not None:
                await p.session.close()


def _parsed(url: str) -> _Proxy:
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if ":" in netloc:
        netloc = f"[{netloc}]"
    address = URL(f"{parts.scheme}://{netloc}:{parts.port}")
    auth = None
    if parts.username is not None:
        auth = aiohttp.BasicAuth(unquote(parts.username), unquote(parts.password or ""))
    return _Proxy(redact_text(url), url, address, auth, parts.scheme in SOCKS_SCHEMES)


def _socks_session(url: str, like: aiohttp.ClientSession) -> aiohttp.ClientSession:
    """A session like the worker's (headers, timeouts, no cookies, bodies as they came) through a SOCKS proxy."""
    from aiohttp_socks import ProxyConnector  # (only a crawl with a SOCKS proxy needs it)

    # rdns: the proxy resolves the target's name (the address guard checked it here first, where it could)
    connector = ProxyConnector.from_url(url.replace("socks5h://", "socks5://"), rdns=url.startswith("socks5h"))
    return aiohttp.ClientSession(
        connector=connector,
        timeout=like.timeout,
        auto_decompress=False,
        cookie_jar=aiohttp.DummyCookieJar(),
        trust_env=False,
        headers=like.headers,
    )
