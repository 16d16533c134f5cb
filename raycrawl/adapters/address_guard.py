"""Where the crawl may connect: every target's address checked (docs/architecture.md, "The address guard").

A target is any URL the crawl fetches or a rendered page's scripts ask for. Its name is resolved here by
``GuardedResolver`` (``--resolve`` overrides first, else the system's lookup) and only the addresses the guard allows
are kept: the connection goes to an address that was checked, so no later lookup can swap it (DNS rebinding). An IP
literal is checked before sending (aiohttp connects to literals without asking a resolver). No name is trusted as a
target, not even a proxy's: a proxy's name is resolved only on the connection *to that proxy*, by a resolver of its
own that answers for that one name (``ProxyNameResolver``).
"""

from __future__ import annotations

import asyncio
import functools
import socket

from aiohttp.abc import AbstractResolver, ResolveResult

from raycrawl.core.addresses import address_allowed, parse_networks
from raycrawl.core.fetch_settings import FetchSettings

ADDRESS_VERDICTS = 65_536  # addresses (and host literals) whose verdict a fetch worker keeps
_NUMERIC = socket.AI_NUMERICHOST | socket.AI_NUMERICSERV


class BlockedAddress(Exception):
    """The host resolved to an address the crawl may not connect to (loopback, private, metadata ...)."""


class AddressGuard:
    """Which addresses the crawl may connect to (core/addresses.py), with the settings applied."""

    def __init__(self, settings: FetchSettings) -> None:
        self._allow_private = settings.allow_private_networks
        self._networks = parse_networks(settings.allow_network)
        # A verdict depends on the address and the settings only: each host's is worked out once (parsing an
        # address per request was ~5% of a fetch worker's CPU).
        self.allowed = functools.lru_cache(maxsize=ADDRESS_VERDICTS)(self._allowed)

    def _allowed(self, address: str) -> bool:
        return address_allowed(address, self._allow_private, self._networks)


async def lookup(
    host: str, port: int, family: socket.AddressFamily, overrides: dict[str, str]
) -> list[tuple[socket.AddressFamily, str]]:
    """``host``'s addresses: its ``--resolve`` override, else the system's answer (OSError when it has none)."""
    override = overrides.get(host)
    if override is not None:
        return [(socket.AF_INET6 if ":" in override else socket.AF_INET, override)]
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, family=family, type=socket.SOCK_STREAM)
    addresses = [(info[0], str(info[4][0])) for info in infos]
    if not addresses:
        raise OSError(f"no address for {host}")  # (a lookup failure, worth retrying: not a refusal)
    return list(dict.fromkeys(addresses))


def _results(host: str, port: int, addresses: list[tuple[socket.AddressFamily, str]]) -> list[ResolveResult]:
    return [
        {"hostname": host, "host": address, "port": port, "family": fam, "proto": 0, "flags": _NUMERIC}
        for fam, address in addresses
    ]


class GuardedResolver(AbstractResolver):
    """aiohttp's resolver for targets' names: only allowed addresses.

    Addresses the guard refuses are dropped (a name resolving to a public and a private address can only
    reach the public one); when none is left the fetch fails with ``BlockedAddress``.
    """

    def __init__(self, guard: AddressGuard, overrides: dict[str, str]) -> None:
        self._guard = guard
        self._overrides = overrides

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        addresses = await lookup(host, port, family, self._overrides)
        allowed = [(fam, a) for fam, a in addresses if self._guard.allowed(a)]
        if not allowed:
            raise BlockedAddress(f"{host} resolves to {addresses[0][1]}")
        return _results(host, port, allowed)

    async def close(self) -> None:
        return None


class ProxyNameResolver(AbstractResolver):
    """The resolver of a session that only ever connects to one proxy: the proxy's own name, which the operator
    gave, resolves to whatever it resolves to (a proxy on loopback or a private network is the usual case); any
    other name is refused. Through an HTTP proxy no target's name is resolved here (the proxy connects to it), so a
    target named like the proxy never reaches this resolver -- and would be refused if it did."""

    def __init__(self, proxy_host: str, overrides: dict[str, str]) -> None:
        self._host = proxy_host
        self._overrides = overrides

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        if host != self._host:
            raise BlockedAddress(f"{host} is not the proxy this connection goes to")
        return _results(host, port, await lookup(host, port, family, self._overrides))

    async def close(self) -> None:
        return None


async def check_target(resolver: GuardedResolver, host: str) -> None:
    """A target (a name) behind a proxy that resolves names itself, held to the address guard where its name resolves
    here (BlockedAddress); a name this machine cannot resolve is the proxy's to resolve."""
    try:
        await resolver.resolve(host)
    except OSError:
        return
