"""The test web answered in process, without sockets: for measuring raycrawl's own machinery.

``benchmarks/machinery.py`` sets ``ENV_VAR`` (a JSON ``WebSpec`` and port) in the environment of a Ray it starts;
every fetch worker's ``Fetcher`` then answers each request from ``WebGraph`` -- the same pages, links and
robots.txt as the served test web -- instead of the network. Everything after the response (decoding, link
extraction, hashing, WARC writing) and everything around the fetch (shards, dedup, coordinator, output) runs as in
a real crawl, so the pages/s measured is the ceiling the machinery itself sets. Never set in a real crawl.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from typing import Any

from raycrawl.adapters.fetcher import RESPONDER_ENV  # (the fetcher imports this module's from_env by that name)
from raycrawl.testing.graph import WebGraph, WebSpec

# Not RAYCRAWL_*: those are configuration, and an unknown one is refused.
ENV_VAR = "_RAYCRAWL_SYNTHETIC_WEB"


@dataclasses.dataclass(frozen=True)
class Answer:
    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key.decode().lower() == name.lower():
                return value.decode()
        return None


class SyntheticWeb:
    def __init__(self, spec: WebSpec, port: int = 8000) -> None:
        self.graph = WebGraph(spec, port)
        self._hosts = {self.graph.netloc(h): h for h in range(spec.hosts)}

    def env(self) -> dict[str, str]:
        """The environment variable that makes fetchers answer from this web."""
        spec = json.dumps({"spec": dataclasses.asdict(self.graph.spec), "port": self.graph.port})
        return {ENV_VAR: spec, RESPONDER_ENV: f"{__name__}:from_env"}

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> SyntheticWeb | None:
        raw = environ.get(ENV_VAR)
        if not raw:
            return None
        data = json.loads(raw)
        fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in data["spec"].items()}
        return cls(WebSpec(**fields), int(data["port"]))

    def answer(self, url: str) -> Answer:
        """What the served test web answers for ``url`` (a normal host's pages, robots.txt, and 404s)."""
        rest = url.split("://", 1)[-1]
        netloc, _, path = rest.partition("/")
        path = "/" + path.split("?", 1)[0].split("#", 1)[0]
        host = self._hosts.get(netloc)
        if host is None:
            return _text(404, b"no such host")
        if path == "/robots.txt":
            return _text(200, self.graph.robots_txt(host), b"text/plain")
        page = 0 if path == "/" else _page_number(path)
        if page is None or not 0 <= page < self.graph.spec.pages_per_host:
            return _text(404, b"not found")
        return _text(200, self.graph.html(host, page), b"text/html; charset=utf-8")


def from_env() -> SyntheticWeb | None:
    """The fetcher's responder factory (named in RESPONDER_ENV)."""
    return SyntheticWeb.from_env()


def _page_number(path: str) -> int | None:
    if not path.startswith("/p/"):
        return None
    digits = path[3:]
    return int(digits) if digits.isdigit() else None


def _text(status: int, body: bytes, content_type: bytes = b"text/plain") -> Answer:
    headers = [(b"Content-Type", content_type), (b"Content-Length", str(len(body)).encode())]
    return Answer(status, headers, body)
