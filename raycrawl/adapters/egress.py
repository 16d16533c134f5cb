"""How a fetch worker sends a request through the proxy its lease names (core/proxy_routes.py chose it).

Each proxy has a session of its own, made on first use, like the worker's (headers, timeouts, no cookies, bodies as
they came). Its name is trusted for the connection *to the proxy* only (docs/architecture.md, "The address guard"):

- HTTP and HTTPS proxies are aiohttp's own (``proxy=``: absolute-form requests, CONNECT for https targets). Their
  session's resolver answers for the proxy's name and nothing else (``ProxyNameResolver``); the target's name is
  the proxy's to resolve, and is held to the guard here first where it resolves here (``route``: ``check_target``).
- SOCKS proxies: ``socks5://`` and ``socks4://`` (names resolved here) take the target's address from the guarded
  resolver, and the proxy is handed that checked address -- never a name for python-socks to look up again (a second
  lookup is a DNS-rebinding door). TLS to an https target still names the host (SNI, certificate). ``socks5h://``
  hands the proxy the name, as its scheme asks (checked here first, where it resolves).

Credentials travel as a ``BasicAuth`` (or python-socks' arguments) apart from the proxy's address, so no error
message or log line about a proxy holds them.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.client_proto import ResponseHandler
from yarl import URL

from raycrawl.adapters.address_guard import GuardedResolver, ProxyNameResolver, check_target
from raycrawl.adapters.http_session import crawl_session
from raycrawl.core.addresses import is_ip_literal
from raycrawl.core.proxy_routes import redact_text

SOCKS_SCHEMES = ("socks5", "socks5h", "socks4")


class ProxyUnreachable(OSError):
    """A SOCKS proxy that could not be reached or refused the connection (the HTTP kinds raise aiohttp's own)."""


class ProxyAuthRefused(OSError):
    """The proxy answered 407: the answer is the proxy's, not the page's (retried, never recorded or archived)."""


@dataclass(slots=True)
class _Proxy:
    name: str  # redacted: for WARC records and reports
    scheme: str
    host: str
    port: int
    address: URL  # without credentials
    auth: aiohttp.BasicAuth | None
    session: aiohttp.ClientSession | None = None  # its own, made on first use

    @property
    def socks(self) -> bool:
        return self.scheme in SOCKS_SCHEMES

    @property
    def gets_names(self) -> bool:
        """The proxy is handed the target's name to resolve (HTTP proxies, socks5h), not its checked address."""
        return not self.socks or self.scheme == "socks5h"


class Egress:
    """The crawl's proxies, for one worker: ``targets`` is the worker's guarded resolver (every target's name goes
    through it); ``overrides`` the ``--resolve`` entries, which apply to proxies' names too."""

    def __init__(self, urls: tuple[str, ...], targets: GuardedResolver, overrides: dict[str, str]) -> None:
        self.proxies = [_parsed(url) for url in urls]
        self._targets = targets
        self._overrides = overrides

    def name(self, proxy: int) -> str | None:
        return self.proxies[proxy].name if proxy >= 0 else None

    async def route(
        self, proxy: int, host: str, like: aiohttp.ClientSession
    ) -> tuple[aiohttp.ClientSession, dict[str, Any]]:
        """The session and the request's keyword arguments for a lease's proxy (``like``: the worker's own), the
        target ``host`` checked first where the proxy is handed its name (BlockedAddress)."""
        p = self.proxies[proxy]
        if p.gets_names and not is_ip_literal(host):
            await check_target(self._targets, host)  # (where it resolves here: the proxy connects)
        if p.session is None:
            p.session = self._session(p, like)
        if p.socks:
            return p.session, {}
        return p.session, {"proxy": p.address, "proxy_auth": p.auth}

    def _session(self, p: _Proxy, like: aiohttp.ClientSession) -> aiohttp.ClientSession:
        connector: aiohttp.TCPConnector
        limit = like.connector.limit if like.connector is not None else 100
        if p.socks:
            names = _PassNames() if p.gets_names else self._targets
            connector = _SocksConnector(p, names, self._overrides, limit)
        else:
            connector = aiohttp.TCPConnector(
                resolver=ProxyNameResolver(p.host, self._overrides),
                limit=limit,
                limit_per_host=0,
                ssl=ssl.create_default_context(),
            )
        return crawl_session(connector, like.timeout, like.headers)

    async def close(self) -> None:
        for p in self.proxies:
            if p.session is not None:
                await p.session.close()


def _parsed(url: str) -> _Proxy:
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    port = parts.port or 0
    auth = None
    if parts.username is not None:
        auth = aiohttp.BasicAuth(unquote(parts.username), unquote(parts.password or ""))
    address = URL(f"{parts.scheme}://{netloc}:{port}")
    # (the host as aiohttp asks its resolver for it: IDNA-encoded, as looked up)
    return _Proxy(redact_text(url), parts.scheme, address.raw_host or host, port, address, auth)


class _PassNames(AbstractResolver):
    """socks5h: the target's name goes to the proxy as it is (the proxy resolves it)."""

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        return [{"hostname": host, "host": host, "port": port, "family": family, "proto": 0, "flags": 0}]

    async def close(self) -> None:
        return None


class _Handler(ResponseHandler):
    """aiohttp's protocol on a stream python-socks opened, keeping the stream's writer alive (a StreamWriter that is
    collected closes its transport)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, writer: asyncio.StreamWriter) -> None:
        super().__init__(loop)
        self._writer = writer


class _SocksConnector(aiohttp.TCPConnector):
    """Connections through one SOCKS proxy. aiohttp resolves the target with ``names`` (the guarded resolver, or
    the name as it is for socks5h) and hands the result here, where python-socks is given exactly that -- an
    address it does not look up again -- and TLS to the target is started with the target's host name."""

    def __init__(self, proxy: _Proxy, names: AbstractResolver, overrides: dict[str, str], limit: int) -> None:
        super().__init__(resolver=names, limit=limit, limit_per_host=0, ssl=ssl.create_default_context())
        self._proxy = proxy
        self._to_proxy = ProxyNameResolver(proxy.host, overrides)  # (the proxy's own name: --resolve applies)

    async def _wrap_create_connection(
        self, *args: Any, addr_infos: list[Any], req: Any, timeout: aiohttp.ClientTimeout, **kwargs: Any
    ) -> tuple[asyncio.Transport, ResponseHandler]:
        import python_socks
        from aiohttp_socks import ProxyConnectionError, ProxyError, ProxyTimeoutError
        from python_socks.async_.asyncio.v2 import Proxy

        p = self._proxy
        kind = {"socks4": python_socks.ProxyType.SOCKS4}.get(p.scheme, python_socks.ProxyType.SOCKS5)
        user, password = (p.auth.login, p.auth.password) if p.auth is not None else (None, None)
        target, port = str(addr_infos[0][4][0]), int(addr_infos[0][4][1])
        context: ssl.SSLContext | None = kwargs.get("ssl")
        try:
            at = (await self._to_proxy.resolve(p.host, p.port, socket.AF_UNSPEC))[0]["host"]
            proxy = Proxy(proxy_type=kind, host=at, port=p.port, username=user, password=password, rdns=True)
            stream = await proxy.connect(dest_host=target, dest_port=port, timeout=timeout.sock_connect)
            if context is not None:  # (the host's name for SNI and the certificate, not the address it went to)
                stream = await stream.start_tls(hostname=kwargs.get("server_hostname") or req.host, ssl_context=context)
        except (python_socks.ProxyConnectionError, OSError) as exc:  # (OSError: the proxy's name did not resolve)
            raise ProxyConnectionError(str(exc)) from exc
        except python_socks.ProxyTimeoutError as exc:
            raise ProxyTimeoutError(str(exc)) from exc
        except python_socks.ProxyError as exc:
            raise ProxyError(str(exc), error_code=exc.error_code) from exc
        transport: asyncio.Transport = stream.writer.transport  # type: ignore[assignment]
        protocol = _Handler(self._loop, stream.writer)
        transport.set_protocol(protocol)
        protocol.connection_made(transport)
        return transport, protocol
