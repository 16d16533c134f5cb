"""The test web's HTTP server: many hosts on 127.0.0.x, one port, every request logged with a timestamp.

Run in its own process (``python -m raycrawl.testing.server --hosts 20 ...``) so the crawler's load never
slows the clock that judges it. It prints one JSON line when ready: ``{"port": ..., "seeds": [...]}``.
The request log (JSON lines: t, ip, host, method, path, ua, status, client_port) is what the tests assert on; ``t`` is
taken when the request's headers have been read, before any response byte is sent.

Fault profiles, one per host (``WebSpec.profiles``), for politeness and robustness tests:

- ``robots-<status>`` (404, 401, 403, 410, 429, 500, 503 ...): robots.txt answers that status, always.
- ``robots-redirect-<n>``: robots.txt redirects n times before the real file.
- ``robots-oversize``: a 600 KiB robots.txt whose ``Disallow: /private/`` sits after 450 KiB of comments.
- ``robots-crawl-delay-<s>``: robots.txt sets ``Crawl-delay: s``.
- ``robots-timeout``: robots.txt answers after ``slow_seconds``.
- ``429-seconds`` / ``429-date``: the third page request gets 429 with ``Retry-After: 3`` (seconds, or an
  HTTP-date at least 3 s ahead); every other request is normal.
- ``503-forever``: every page answers 503 without Retry-After. ``403``: every page answers 403.
- ``slow``: every page answers after ``slow_seconds``.
- ``hostile``: traps, bombs, drips, loops, bad encodings and canary links: see ``testing/hostile.py``.
- ``recovering``: some pages answer 503 until the web's revision is 2: see ``testing/versioned.py``.
- ``changing``: pages that change every ``change_period`` seconds, never, or go after ``remove_after``, while a
  crawl runs: see ``testing/changing.py``.
- ``versioned``: pages that change, go and appear between crawls, with validators: see ``testing/versioned.py``.
  ``versioned-sitemap``: the same, with a sitemap (named by robots.txt) that gives each page's ``lastmod``.
- ``sitemap``: pages that link nowhere, found only through robots.txt -> sitemap index -> sitemaps (gzip, text,
  broken, a bomb): see ``testing/sitemapweb.py``.
- ``scripted`` / ``scripted-spin``: shells whose links only their script writes, and a page that never settles:
  see ``testing/scripted.py``.
- ``articles``: an index of articles with known data among boilerplate, and short pages (testing/articles.py).
- ``topics``: pages on two topics linked mostly within their topic, across every ``topics`` host, the wanted topic a
  minority: a focused crawl's test web (testing/topics.py).
- ``mirror``: every page is host 0's page of the same path, byte for byte (duplicate payloads under other URLs).
- ``odd`` / ``odd-cut-robots``: raw bytes no well-behaved library would send, connections reset mid-body, a robots.txt
  with a BOM and a prefix group, links to be requested as written: see ``testing/odd.py``. When a client cuts a
  response short, the time is written to ``events.jsonl`` beside the request log (``TestWeb.events()``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import functools
import json
import math
import time
from collections.abc import Callable
from email.utils import formatdate
from typing import IO

from raycrawl.testing import articles, changing, hostile, odd, scripted, sitemapweb, versioned
from raycrawl.testing.graph import WebGraph, WebSpec
from raycrawl.testing.process import events_path
from raycrawl.testing.topics import TopicalWeb

MAX_HEADER_BYTES = 16 * 1024
Answer = tuple[int, list[tuple[str, str]], "hostile.Body"]  # (status, headers, body) of a profile's own page
FAULTS: dict[str, tuple[int, list[tuple[str, str]], bytes]] = {
    "503-forever": (503, [], b"unavailable\n"),
    "403": (403, [], b"forbidden\n"),
}  # every page of a host of that profile


class TestWebServer:
    __test__ = False  # not a pytest test class

    def __init__(self, spec: WebSpec, log: IO[str], events: IO[str] | None = None) -> None:
        self.spec = spec
        self.log = log
        self.events = events
        self.graph = WebGraph(spec, 0)
        self._ip_to_host = {self.graph.ip(h): h for h in range(spec.hosts)}
        self._page_requests: dict[int, int] = {}
        self._topics: TopicalWeb | None = None
        # The profiles with pages of their own, and what answers them (None: the graph's page, robots.txt ...)
        self._profile_routes: dict[str, Callable[[int, str, str, dict[str, str]], Answer | None]] = {
            "articles": self._articles, "topics": self._topics_route, "sitemap": self._sitemap,
            "changing": self._changing, "scripted": self._scripted, "scripted-spin": self._scripted,
            "recovering": self._recovering, "versioned": self._versioned, "versioned-sitemap": self._versioned,
        }  # fmt: skip
        # The "changing" profile's clock: from its first page request, not from the server's start, so a crawl that
        # is slow to start (a loaded machine) still finds each page as the spec says (removed pages present at first).
        self.started: float | None = None

    def route(
        self, host: int, path: str, request: dict[str, str] | None = None
    ) -> tuple[int, list[tuple[str, str]], hostile.Body, float]:
        """(status, headers, body, seconds to wait before answering) for a path on a host, after its profile
        (``request``: the request's headers, lower-cased names). A profile of its own pages answers first; what it
        leaves (None) is the graph's page, robots.txt, or a fault profile's answer."""
        profile = self.spec.profile(host)
        if profile == "hostile":
            return (*hostile.route(path, self.graph.netloc(host), self.spec.canary), 0.0)
        path = path.split("?", 1)[0]
        own = self._profile_routes.get(profile)
        answer = own(host, path, profile, request or {}) if own is not None else None
        if answer is not None:
            return (*answer, 0.0)
        return self._graph_route(host, path, profile)

    def _articles(self, host: int, path: str, profile: str, request: dict[str, str]) -> Answer | None:
        return None if path == "/robots.txt" else articles.route(path, self.graph.ip(host), self.spec.pages_per_host)

    def _topics_route(self, host: int, path: str, profile: str, request: dict[str, str]) -> Answer | None:
        return None if path == "/robots.txt" else self._topical().route(path, self.graph.ip(host))

    def _sitemap(self, host: int, path: str, profile: str, request: dict[str, str]) -> Answer | None:
        netloc, outside = self.graph.netloc(host), self.spec.canary or "127.0.0.1:9"
        if path == "/robots.txt":
            return 200, [("Content-Type", "text/plain")], sitemapweb.robots_txt(netloc, outside)
        return sitemapweb.route(path, netloc, self.spec.pages_per_host, outside)

    def _changing(self, host: int, path: str, profile: str, request: dict[str, str]) -> Answer | None:
        if path == "/robots.txt":
            return None
        if self.started is None:
            self.started = time.time()
        spec, age = self.spec, time.time() - self.started
        return changing.answer(path, age, self.started, spec.change_period, spec.remove_after, request)

    def _scripted(self, host: int, path: str, profile: str, request: dict[str, str]) -> Answer | None:
        return scripted.route(path, self.spec.pages_per_host, self.spec.canary, profile == "scripted-spin")

    def _recovering(self, host: int, path: str, profile: str, request: dict[str, str]) -> Answer | None:
        return versioned.recovering(path, versioned.revision(self.spec.revision_file))

    def _versioned(self, host: int, path: str, profile: str, request: dict[str, str]) -> Answer | None:
        rev = versioned.revision(self.spec.revision_file)
        answered = None
        if profile == "versioned-sitemap":
            answered = versioned.sitemap_answer(self.graph, host, path, rev, self.spec.revision_file)
        if answered is None and path != "/robots.txt":
            answered = versioned.answer(self.graph, host, path, rev, request)
        return answered

    def _graph_route(self, host: int, path: str, profile: str) -> tuple[int, list[tuple[str, str]], bytes, float]:
        """The graph's pages and robots.txt, and the fault profiles' answers (robots-*, 429-*, 503-forever, 403,
        slow, mirror)."""
        kind, _, arg = profile.rpartition("-") if profile[-1:].isdigit() else (profile, "", "")
        if path == "/robots.txt" or path.startswith("/r/"):
            return self._robots(host, path, profile, kind, arg)
        self._page_requests[host] = count = self._page_requests.get(host, 0) + 1
        if profile in ("429-seconds", "429-date") and count == 3:
            # An HTTP-date has whole seconds: round up so the wait is never under 3 s.
            date = formatdate(math.ceil(time.time()) + 3, usegmt=True)
            retry_after = "3" if profile == "429-seconds" else date
            return 429, [("Retry-After", retry_after)], b"slow down\n", 0.0
        if profile in FAULTS:
            return *FAULTS[profile], 0.0
        wait = self.spec.slow_seconds if profile == "slow" else 0.0
        page: int | None = None
        if path == "/":
            page = 0
        elif path.startswith("/p/") and path[3:].isdigit():
            page = int(path[3:])
        if page is not None and page < self.spec.pages_per_host:
            body = self.graph.html(0 if profile == "mirror" else host, page)
            return 200, [("Content-Type", "text/html; charset=utf-8")], body, wait
        return 404, [], b"not found\n", wait

    def _topical(self) -> TopicalWeb:
        """The "topics" hosts' web (made on first use: its links need the port the server bound)."""
        if self._topics is None or self._topics.port != self.graph.port:
            ips = [self.graph.ip(h) for h in range(self.spec.hosts) if self.spec.profile(h) == "topics"]
            self._topics = TopicalWeb(ips, self.graph.port, self.spec.pages_per_host)
        return self._topics

    def _robots(
        self, host: int, path: str, profile: str, kind: str, arg: str
    ) -> tuple[int, list[tuple[str, str]], bytes, float]:
        text = [("Content-Type", "text/plain")]
        if kind == "robots-redirect":
            hop = int(path[3:]) if path.startswith("/r/") else 0
            if hop < int(arg):
                return 301, [("Location", f"/r/{hop + 1}")], b"", 0.0
            return 200, text, self.graph.robots_txt(host), 0.0
        if kind == "robots" and arg:
            return int(arg), text, b"robots.txt says no\n", 0.0
        if kind == "robots-crawl-delay":
            return 200, text, self.graph.robots_txt(host) + f"Crawl-delay: {arg}\n".encode(), 0.0
        if profile == "robots-oversize":
            filler = b"".join(b"# %06d padding padding padding padding padding padding\n" % i for i in range(8000))
            body = b"User-agent: *\n" + filler[: 450 * 1024] + b"\nDisallow: /private/\n" + filler[:150_000]
            return 200, text, body, 0.0
        wait = self.spec.slow_seconds if profile == "robots-timeout" else 0.0
        return 200, text, self.graph.robots_txt(host), wait

    def _event(self, kind: str, ip: str, target: str) -> None:
        """Something the server saw besides a request (a client cutting a response short), in the events log."""
        if self.events is not None:
            self.events.write(json.dumps({"t": time.time(), "event": kind, "ip": ip, "path": target}) + "\n")
            self.events.flush()

    def _netloc_of(self, profile: str) -> str:
        hosts = [h for h in range(self.spec.hosts) if self.spec.profile(h) == profile]
        return self.graph.netloc(hosts[0]) if hosts else "127.0.0.1:9"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        local_ip = writer.get_extra_info("sockname")[0]
        peer = writer.get_extra_info("peername")
        client_port = peer[1] if isinstance(peer, tuple) and len(peer) > 1 else 0
        host = self._ip_to_host.get(local_ip, -1)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                received = time.time()
                method, target, headers = _parse_head(head)
                profile = self.spec.profile(host)
                if profile.startswith("odd"):
                    self._log(received, local_ip, headers, method, target, 0, client_port)
                    raw = odd.route(profile, target, self._netloc_of("odd-cut-robots"))
                    cut = functools.partial(self._event, "cut", local_ip, target)
                    if not await odd.send(raw, reader, writer, cut):
                        return
                    continue
                status, extra, body, wait = self.route(host, target, headers)
                length = body.length if isinstance(body, hostile.Streamed) else len(body)
                self._log(received, local_ip, headers, method, target, status, client_port, length)
                if wait:
                    await asyncio.sleep(wait)
                if not await _respond(writer, status, extra, body, length, method):
                    return
                if headers.get("connection", "").lower() == "close":
                    return
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    def _log(
        self,
        received: float,
        ip: str,
        headers: dict[str, str],
        method: str,
        target: str,
        status: int,
        port: int,
        length: int | None = None,
    ) -> None:
        """One line of the request log: what the tests assert on."""
        record: dict[str, object] = {
            "t": received, "ip": ip, "host": headers.get("host", ""), "method": method, "path": target,
            "ua": headers.get("user-agent", ""), "status": status,
            "client_port": port,  # a new port: a new connection (keep-alive is measurable)
        }  # fmt: skip
        for name in ("authorization", "if-none-match", "if-modified-since", "via", "proxy-authorization"):
            if name in headers:
                record[name.replace("-", "_")] = headers[name]
        if length is not None:
            record["bytes"] = length if method != "HEAD" else 0
        self.log.write(json.dumps(record) + "\n")
        self.log.flush()

    async def serve(self, port: int) -> tuple[int, list[asyncio.Server]]:
        """Bind every host's address on one port (a free one when port is 0)."""
        for _ in range(20):
            servers: list[asyncio.Server] = []
            chosen = port
            try:
                for h in range(self.spec.hosts):
                    server = await asyncio.start_server(
                        self.handle, self.graph.ip(h), chosen, limit=MAX_HEADER_BYTES, reuse_address=True
                    )
                    chosen = server.sockets[0].getsockname()[1]
                    servers.append(server)
                self.graph = WebGraph(self.spec, chosen)  # pages link across hosts on this port
                return chosen, servers
            except OSError:
                for server in servers:
                    server.close()
                if port:
                    raise
        raise OSError("no free port found for the test web")


def _parse_head(head: bytes) -> tuple[str, str, dict[str, str]]:
    """(method, target, headers with lower-case names) of a request's head."""
    lines = head.decode("latin-1").split("\r\n")
    method, _, rest = lines[0].partition(" ")
    headers = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return method, rest.rpartition(" ")[0], headers


async def _respond(
    writer: asyncio.StreamWriter,
    status: int,
    extra: list[tuple[str, str]],
    body: hostile.Body,
    length: int,
    method: str,
) -> bool:
    """Send the answer (a streamed body chunk by chunk); False when the client hung up during it."""
    lines_out = [f"HTTP/1.1 {status} Status", f"Content-Length: {length}", *(f"{k}: {v}" for k, v in extra)]
    response = ("\r\n".join(lines_out) + "\r\n\r\n").encode()
    if isinstance(body, hostile.Streamed):
        writer.write(response)
        try:
            async for chunk in body.chunks():
                writer.write(chunk)
                await writer.drain()  # raises once the client has hung up
        except ConnectionError:
            return False
        return True
    writer.write(response + (body if method != "HEAD" else b""))
    await writer.drain()
    return True


async def _main(spec: WebSpec, port: int, log_path: str) -> None:
    if "hostile" in spec.profiles:
        hostile.prepare()  # build the bombs now: building one mid-crawl would stall every host of this server
    with open(log_path, "a", encoding="utf-8") as log, open(events_path(log_path), "a", encoding="utf-8") as events:
        server = TestWebServer(spec, log, events)
        port, _servers = await server.serve(port)
        graph = WebGraph(spec, port)
        ready = {"port": port, "seeds": graph.seeds(), "resolve": graph.resolve_entries()}
        print(json.dumps(ready), flush=True)
        await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve the raycrawl test web on 127.0.0.x")
    for f in dataclasses.fields(WebSpec):
        flag = "--" + f.name.replace("_", "-")
        if f.type in ("bool", bool):
            parser.add_argument(flag, action="store_true")
        elif f.name == "crawl_delay":
            parser.add_argument(flag, type=float)
        elif f.name == "profiles":
            parser.add_argument(flag, type=lambda v: tuple(v.split(",")) if v else (), default=())
        else:
            parser.add_argument(flag, type=type(f.default), default=f.default)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log", required=True)
    args = vars(parser.parse_args(argv))
    port, log_path = args.pop("port"), args.pop("log")
    spec = WebSpec(**args)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_main(spec, port, log_path))


if __name__ == "__main__":
    main()
