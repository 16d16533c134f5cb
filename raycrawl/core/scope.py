"""Which discovered URLs belong to the crawl: the seeds' hosts, their registered domains, or anything,
narrowed by allow/deny regular expressions (deny wins)."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Literal

from publicsuffixlist import PublicSuffixList

from raycrawl.core.urls import host_key, hostname

ScopeKind = Literal["host", "domain", "any"]


@lru_cache(maxsize=1)
def _psl() -> PublicSuffixList:
    # Built from the list shipped inside the package: no network access at run time.
    return PublicSuffixList()


def registered_domain(host: str) -> str:
    """example.co.uk for www.example.co.uk; an IP address or a bare public suffix is its own domain."""
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    return str(_psl().privatesuffix(host) or host)


class ScopePolicy:
    def __init__(
        self,
        kind: ScopeKind,
        seed_urls: Iterable[str],
        allow: Iterable[str] = (),
        deny: Iterable[str] = (),
    ) -> None:
        self.kind = kind
        seeds = list(seed_urls)
        self._hosts: set[str] = set()
        self._domains: set[str] = set()
        self.add_seeds(seeds)
        self._allow = [re.compile(p) for p in allow]
        self._deny = [re.compile(p) for p in deny]

    def add_seeds(self, seed_urls: Iterable[str]) -> None:
        """Seeds added later widen a host or domain scope to their hosts too."""
        for url in seed_urls:
            self._hosts.add(host_key(url))
            self._domains.add(registered_domain(hostname(host_key(url))))

    def seed_hosts(self) -> list[str]:
        """The hosts the seeds named (what a checkpoint keeps of the scope: a resume needs no seeds)."""
        return sorted(self._hosts)

    def add_hosts(self, hosts: Iterable[str]) -> None:
        """Hosts (netlocs, as ``seed_hosts`` gives them) join the scope as if seeds had named them."""
        for host in hosts:
            self._hosts.add(host)
            self._domains.add(registered_domain(hostname(host)))

    def allows(self, canonical_url: str) -> bool:
        if self.kind == "host":
            if host_key(canonical_url) not in self._hosts:
                return False
        elif self.kind == "domain" and registered_domain(hostname(host_key(canonical_url))) not in self._domains:
            return False
        if self._deny and any(p.search(canonical_url) for p in self._deny):
            return False
        return not self._allow or any(p.search(canonical_url) for p in self._allow)
