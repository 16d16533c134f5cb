"""Which resolved addresses the crawler may connect to (the SSRF guard's classifier).

By default only globally routable unicast addresses: never loopback, private (RFC 1918), link-local (the
cloud metadata address 169.254.169.254 included), CGNAT, multicast, unspecified, reserved, IPv6 ULA or
link-local, nor IPv4-mapped spellings of these. The check runs on the address actually connected to.

``ipaddress``'s tables changed between patch releases (``fec0::/10``, the deprecated IPv6 site-local range, and
parts of ``192.0.0.0/24`` were "global" in some): ``ALWAYS_DENIED`` names them explicitly, so the guard's answer
does not depend on which Python runs it.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


ALWAYS_DENIED: tuple[IPNetwork, ...] = (
    ipaddress.ip_network("fec0::/10"),  # IPv6 site-local (RFC 3879 deprecated it; still routed privately)
    ipaddress.ip_network("192.0.0.0/24"),  # IETF protocol assignments (RFC 6890), all of it
)


def parse_networks(cidrs: Iterable[str]) -> tuple[IPNetwork, ...]:
    return tuple(ipaddress.ip_network(c, strict=False) for c in cidrs)


def is_public(address: IPAddress) -> bool:
    if isinstance(address, ipaddress.IPv6Address):
        mapped = address.ipv4_mapped or address.sixtofour
        if mapped is not None:
            return is_public(mapped)
    if any(address in net for net in ALWAYS_DENIED if net.version == address.version):
        return False
    return address.is_global and not address.is_multicast and not address.is_reserved


@functools.lru_cache(maxsize=65_536)  # (asked per request: a crawl has far fewer hosts than requests)
def is_ip_literal(host: str) -> bool:
    """Is ``host`` (without brackets) an IP address rather than a name?"""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def address_allowed(address: str, allow_private: bool, allowed: tuple[IPNetwork, ...] = ()) -> bool:
    """May the crawler connect to this (already resolved) address?"""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if allow_private or any(ip in net for net in allowed):
        return True
    return is_public(ip)
