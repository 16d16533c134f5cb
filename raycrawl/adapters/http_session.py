"""The one policy every HTTP session of the crawl keeps -- the fetcher's, each proxy's (adapters/egress.py) and the
browser's for the requests its pages make (adapters/browser.py): no cookies kept (a fetch never depends on what the
process fetched before), no proxy from the environment (only the crawl's own, by its routes), bodies left encoded
(decoded by us within max_body_bytes: core/decoding.py), and no total timeout (the fetch deadline is ours); only
the connector -- which resolver guards the addresses, how many connections -- differs."""

from __future__ import annotations

from collections.abc import Mapping

import aiohttp


def read_timeout(seconds: float) -> aiohttp.ClientTimeout:
    """Connect and read each bounded by ``seconds``; the whole exchange by the crawl's fetch deadline, not here."""
    return aiohttp.ClientTimeout(total=None, sock_connect=seconds, sock_read=seconds)


def crawl_session(
    connector: aiohttp.BaseConnector, timeout: aiohttp.ClientTimeout, headers: Mapping[str, str]
) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(
        connector=connector,
        timeout=timeout,
        auto_decompress=False,
        cookie_jar=aiohttp.DummyCookieJar(),
        trust_env=False,
        headers=dict(headers),
    )
