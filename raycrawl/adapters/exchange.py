"""One request and its response as the fetcher saw them on the wire, kept until the calling thread has turned it
into the URL's result and its stored records (adapters/fetcher.py, adapters/page_output.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from raycrawl.core.contract import Judgement
from raycrawl.core.records import FetchResult
from raycrawl.core.render_jobs import RenderOutcome


@dataclass(slots=True)
class Exchange:
    """One request/response as seen on the wire, kept until the calling thread has used it."""

    result: FetchResult
    request_headers: list[tuple[str, str]] = field(default_factory=list)
    reason: str = ""  # as aiohttp decoded it (bytes that are not UTF-8 as surrogate escapes)
    raw_headers: list[tuple[bytes, bytes]] = field(default_factory=list)  # as received
    ip: str | None = None  # the address the response came from (WARC-IP-Address; not known through a proxy)
    proxy: str | None = None  # the proxy that carried it, redacted (WARC-Proxy)
    location: str | None = None
    body: bytes = b""
    render: RenderOutcome | None = None  # the page handed to a browser: what it gave
    html: str | None = None  # the body decoded, when rendering's rule already needed it (decoded once)
    judgement: Judgement | None = None  # what the crawl's extractor and contract made of the page
