"""The test web's link graph: deterministic, generated from a seed, with a known reachable set.

Host ``h`` is served at ``127.0.0.{first_ip + h}``. Its page 0 is ``/``, page ``i`` is ``/p/{i}``. Every page
links to its two children (so a host is a tree from ``/``, all pages reachable), to a few random pages of its
own host, sometimes to another host, to ``/private/{n}`` (which robots.txt disallows), and to spellings that
canonicalisation must merge (tracking parameters, fragments) or drop (mailto:, javascript:).
"""

from __future__ import annotations

import random
import string
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from raycrawl.core.urls import canonicalize


@dataclass(frozen=True, slots=True)
class WebSpec:
    hosts: int = 20
    pages_per_host: int = 200
    links_per_page: int = 4
    cross_host_links: float = 0.3  # chance a page links to another host
    page_bytes: int = 1500  # padding per page, to make pages heavier
    random_padding: bool = False  # padding of random letters (it hardly compresses) instead of "lorem ipsum"
    seed: int = 1
    first_ip: int = 2
    names: bool = False  # serve hosts as h{n}.site{n // 4}.test names (crawl them with --resolve)
    private_links: bool = True
    crawl_delay: float | None = None  # robots.txt Crawl-delay for every host
    profiles: tuple[str, ...] = ()  # fault profile of host h is profiles[h] ("normal" past the end); see server
    slow_seconds: float = 3.0  # how long the "slow" and "robots-timeout" profiles take to answer
    canary: str = ""  # ip:port of a listener the "hostile" host links to in every spelling (must see nothing)
    revision_file: str = ""  # the "versioned" profile's revision is read from here (testing/versioned.py)
    change_period: float = 20.0  # the "changing" profile's fast pages change this often (testing/changing.py)
    remove_after: float = 30.0  # ... and its removed pages answer 410 this long after its first page request

    def profile(self, host: int) -> str:
        return self.profiles[host] if host < len(self.profiles) else "normal"


class WebGraph:
    def __init__(self, spec: WebSpec, port: int) -> None:
        self.spec = spec
        self.port = port

    # --- names ---------------------------------------------------------------------------------------

    def ip(self, host: int) -> str:
        return f"127.0.0.{self.spec.first_ip + host}"

    def hostname(self, host: int) -> str:
        return f"h{host}.site{host // 4}.test" if self.spec.names else self.ip(host)

    def netloc(self, host: int) -> str:
        return f"{self.hostname(host)}:{self.port}"

    def url(self, host: int, page: int) -> str:
        return f"http://{self.netloc(host)}" + ("/" if page == 0 else f"/p/{page}")

    def resolve_entries(self) -> list[str]:
        """--resolve values mapping each host name to its address (names mode only)."""
        return [f"{self.hostname(h)}={self.ip(h)}" for h in range(self.spec.hosts)] if self.spec.names else []

    def seeds(self, hosts: Iterable[int] | None = None) -> list[str]:
        return [self.url(h, 0) for h in (range(self.spec.hosts) if hosts is None else hosts)]

    # --- links ---------------------------------------------------------------------------------------

    def links(self, host: int, page: int) -> list[tuple[int, int]]:
        """(host, page) targets of a page's real links, in document order."""
        s = self.spec
        if s.profile(host) == "sitemap":
            return []  # (its pages are found through its sitemaps only: testing/sitemapweb.py)
        rng = random.Random(s.seed * 1_000_003 + host * 10_007 + page)
        out = [(host, c) for c in (2 * page + 1, 2 * page + 2) if c < s.pages_per_host]
        out += [(host, rng.randrange(s.pages_per_host)) for _ in range(s.links_per_page)]
        if s.hosts > 1 and rng.random() < s.cross_host_links:
            other = rng.randrange(s.hosts - 1)
            other += other >= host
            out.append((other, rng.choice([0, rng.randrange(s.pages_per_host)])))
        return out

    def private_link(self, page: int) -> str | None:
        return f"/private/{page % 5}" if self.spec.private_links else None

    def html(self, host: int, page: int) -> bytes:
        s = self.spec
        parts = ["<!DOCTYPE html><html><head><title>", f"host {host} page {page}", "</title></head><body>"]
        for i, (h, p) in enumerate(self.links(host, page)):
            path = "/" if p == 0 else f"/p/{p}"
            if h != host:
                href = f"http://{self.netloc(h)}{path}"
            elif i % 3 == 1:
                href = f"{path}?utm_source=testweb#section"  # must canonicalise to the plain page
            else:
                href = path
            parts.append(f'<a href="{href}">link {i}</a> ')
        private = self.private_link(page) if s.profile(host) != "sitemap" else None
        if private:
            parts.append(f'<a href="{private}">private</a>')
        parts.append('<a href="mailto:web@example.test">mail</a><a href="javascript:void(0)">js</a>')
        if s.random_padding:
            padding = "".join(random.Random(host * 7919 + page).choices(string.ascii_letters, k=s.page_bytes))
        else:
            padding = "lorem ipsum " * (s.page_bytes // 12)
        parts.append("<p>" + padding + "</p></body></html>")
        return "".join(parts).encode()

    def robots_txt(self, host: int) -> bytes:
        lines = ["User-agent: *", "Disallow: /private/"]
        if self.spec.crawl_delay is not None:
            lines.append(f"Crawl-delay: {self.spec.crawl_delay}")
        return ("\n".join(lines) + "\n").encode()

    # --- expectations --------------------------------------------------------------------------------

    def reachable(self, seeds: Iterable[tuple[int, int]], hosts_in_scope: set[int] | None = None) -> dict[str, int]:
        """Canonical URL -> shortest depth of every page (not private link) reachable from the seeds."""
        depth: dict[tuple[int, int], int] = {}
        todo: deque[tuple[int, int]] = deque()
        for seed in seeds:
            depth[seed] = 0
            todo.append(seed)
        while todo:
            node = todo.popleft()
            for target in self.links(*node):
                if hosts_in_scope is not None and target[0] not in hosts_in_scope:
                    continue
                if target not in depth:
                    depth[target] = depth[node] + 1
                    todo.append(target)
        out: dict[str, int] = {}
        for (h, p), d in depth.items():
            canonical = canonicalize(self.url(h, p))
            assert canonical is not None
            out[canonical] = d
        return out

    def private_urls(self, reachable_pages: dict[str, int]) -> set[str]:
        """Canonical robots-disallowed URLs linked from the given pages."""
        out: set[str] = set()
        for h in range(self.spec.hosts):
            for p in range(self.spec.pages_per_host):
                if self.url(h, p) in reachable_pages or canonicalize(self.url(h, p)) in reachable_pages:
                    private = self.private_link(p)
                    if private:
                        out.add(f"http://{self.netloc(h)}{private}")
        return out
