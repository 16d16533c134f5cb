"""A recrawl's seeds: the URLs an earlier crawl fetched, each with what that crawl learned about it.

Every URL with a response in the earlier output comes back at its depth, spelt as it was requested; the ones
that had a 2xx (or were found not modified or unchanged, which stand for one) carry their validators and their
capture (``Known``), so the fetcher asks conditionally and a revisit record can refer to the capture. Pages that
were already gone, sitemaps (robots.txt names them again) and URLs never fetched are not taken.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from raycrawl.core.records import Known, Link

TAKEN_OUTCOMES = frozenset({"fetched", "not_modified", "unchanged", "too_large", "skipped_unchanged"})
CAPTURED_OUTCOMES = frozenset({"not_modified", "unchanged", "skipped_unchanged"})  # a 2xx by another name


def recrawl_links(records: Iterable[dict[str, Any]]) -> tuple[list[Link], dict[str, Known]]:
    """(links to offer as seeds, what is known of each by URL) from an earlier crawl's records."""
    links: list[Link] = []
    known: dict[str, Known] = {}
    taken: set[str] = set()
    for record in records:
        url, outcome = record.get("url"), record.get("outcome")
        if not isinstance(url, str) or outcome not in TAKEN_OUTCOMES or record.get("kind") == "sitemap":
            continue
        if url in taken:
            continue  # (one record per URL in an output; records gathered from several may repeat)
        taken.add(url)
        requested = record.get("requested_url")
        depth = record.get("depth")
        links.append((url, depth if isinstance(depth, int) else 0, None, (), _other(requested, url), "page", 0.0))
        status = record.get("status")
        if outcome in CAPTURED_OUTCOMES or (outcome == "fetched" and isinstance(status, int) and 200 <= status < 300):
            known[url] = known_of(record)
    return links, known


def known_of(record: dict[str, Any]) -> Known:
    """What a record of a capture tells the next visit: validators to ask with, the capture a revisit refers to."""
    return Known(
        _text(record.get("etag")),
        _text(record.get("last_modified")),
        _text(record.get("sha256")),
        _text(record.get("warc_id")),
        _text(record.get("warc_date")),
        _text(record.get("duplicate_of")),
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _other(requested: Any, url: str) -> str | None:
    return requested if isinstance(requested, str) and requested != url else None
