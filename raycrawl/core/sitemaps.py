"""Sitemaps (sitemaps.org protocol 0.9): a ``urlset`` of pages or a ``sitemapindex`` of further sitemaps, as
XML (optionally gzip-compressed) or as a plain text file of one URL per line.

What a hostile file can cost is bounded: at most ``max_bytes`` are read after decompression (the protocol's
50 MB), at most ``max_entries`` entries are kept (its 50,000), the XML is read as a stream and each entry is
dropped once read, and a document type declaration (the only way to declare entities, so the only door to
entity expansion) is refused before parsing. A file that breaks off or goes wrong keeps what it gave before the
fault, and says why (``Sitemap.error``): bounded work, counted, never an exception.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal
from xml.etree.ElementTree import Element, XMLPullParser

from raycrawl.core.records import Link
from raycrawl.core.sitemap_hints import SitemapHint
from raycrawl.core.urls import canonicalize, request_form

MAX_ENTRIES = 50_000  # sitemaps.org: "no more than 50,000 URLs"
MAX_BYTES = 50 * 1024 * 1024  # ... "and must be no larger than 50MB (52,428,800 bytes)" uncompressed
MAX_LOC_CHARS = 4096  # a loc longer than this is not a URL we would fetch (urls.MAX_URL_LENGTH is 2,083)
_CHUNK = 64 * 1024
_GZIP_MAGIC = b"\x1f\x8b"
_DOCTYPE = re.compile(rb"<!DOCTYPE", re.IGNORECASE)
_YEAR_MONTH = re.compile(r"(\d{4})(?:-(\d{2}))?")

SitemapKind = Literal["urlset", "index", "text", "invalid"]
CHANGEFREQS = frozenset({"always", "hourly", "daily", "weekly", "monthly", "yearly", "never"})


@dataclass(frozen=True, slots=True)
class SitemapEntry:
    loc: str  # as written in the file (stripped); made absolute and canonical by whoever follows it
    lastmod: float | None = None  # seconds since the epoch, UTC
    priority: float | None = None  # 0.0 to 1.0 as the file says (the protocol's default is 0.5)
    changefreq: str | None = None  # always, hourly, daily, weekly, monthly, yearly or never


@dataclass(frozen=True, slots=True)
class Sitemap:
    kind: SitemapKind
    entries: tuple[SitemapEntry, ...] = ()  # pages for a urlset or text file, sitemaps for an index
    over_limit: bool = False  # more entries or bytes than the bounds: the rest was not read
    error: str | None = None  # why the file is invalid, or where reading it stopped

    @property
    def is_index(self) -> bool:
        return self.kind == "index"


def parse_sitemap(body: bytes, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES) -> Sitemap:
    """The entries of a sitemap file; never raises, whatever ``body`` holds."""
    data, over_limit, error = _uncompressed(body, max_bytes)
    if error is not None:
        return Sitemap("invalid", error=error)
    start = data.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if start == b"<":
        return _parse_xml(data, max_entries, over_limit)
    if not start:
        return Sitemap("invalid", over_limit=over_limit, error="empty file")
    return _parse_text(data, max_entries, over_limit)


def parse_w3c_datetime(text: str) -> float | None:
    """A W3C Datetime (the profile of ISO 8601 sitemaps use: ``2005``, ``2005-01``, ``2005-01-01``,
    ``2005-01-01T10:00+01:00``, with seconds and fractions) as seconds since the epoch; None if it is not one.
    A time without a zone is read as UTC."""
    text = text.strip()
    if len(text) > 40:
        return None
    whole = _YEAR_MONTH.fullmatch(text)
    try:
        if whole is not None:
            moment = datetime(int(whole.group(1)), int(whole.group(2) or 1), 1, tzinfo=UTC)
        else:
            moment = datetime.fromisoformat(text.replace("z", "Z"))
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
        return moment.timestamp()
    except (ValueError, OverflowError):
        return None


def _uncompressed(body: bytes, max_bytes: int) -> tuple[bytes, bool, str | None]:
    """(the file's bytes, at most ``max_bytes``; whether there were more; an error) -- gunzipped if gzip."""
    if not body.startswith(_GZIP_MAGIC):
        return body[:max_bytes], len(body) > max_bytes, None
    out = bytearray()
    rest = body
    try:
        while rest.startswith(_GZIP_MAGIC) and len(out) <= max_bytes:  # (a file may hold several gzip members)
            member = zlib.decompressobj(16 + zlib.MAX_WBITS)
            tail = rest
            while tail and not member.eof and len(out) <= max_bytes:
                out += member.decompress(tail, max_bytes + 1 - len(out))
                tail = member.unconsumed_tail
            if not member.eof:
                break  # over the bound, or the compressed data ended early: what was read is kept
            rest = member.unused_data
    except zlib.error as exc:
        if not out:
            return b"", False, f"bad gzip data: {exc}"
        # (what came before the fault is kept: the XML parser says where it ends)
    return bytes(out[:max_bytes]), len(out) > max_bytes, None


def _parse_text(data: bytes, max_entries: int, over_limit: bool) -> Sitemap:
    """A text sitemap: one URL per line, UTF-8; lines that are not http(s) URLs are skipped."""
    entries: list[SitemapEntry] = []
    for raw in data.removeprefix(b"\xef\xbb\xbf").splitlines():
        line = raw.decode("utf-8", "replace").strip()
        if not line.lower().startswith(("http://", "https://")) or len(line) > MAX_LOC_CHARS:
            continue
        if len(entries) >= max_entries:
            return Sitemap("text", tuple(entries), True)
        entries.append(SitemapEntry(line))
    if not entries:
        return Sitemap("invalid", over_limit=over_limit, error="neither XML nor a list of URLs")
    return Sitemap("text", tuple(entries), over_limit)


def _local(tag: str) -> str:
    """An element's name without its namespace ('{http://www.sitemaps.org/...}url' -> 'url')."""
    return tag.rpartition("}")[2]


def _parse_xml(data: bytes, max_entries: int, over_limit: bool) -> Sitemap:
    if _DOCTYPE.search(data):
        return Sitemap("invalid", over_limit=over_limit, error="a document type declaration (refused)")
    parser: Any = XMLPullParser(events=("start", "end"))  # (typeshed's events are a union of every kind's)
    root: Element | None = None
    kind: SitemapKind = "invalid"
    entries: list[SitemapEntry] = []
    item_tag = ""
    error: str | None = None
    try:
        for offset in range(0, len(data), _CHUNK):
            parser.feed(data[offset : offset + _CHUNK])
            events: Iterator[tuple[str, Element]] = parser.read_events()  # (start and end: each an element)
            for event, element in events:
                name = _local(element.tag)
                if root is None:  # the root element says what the file is
                    root = element
                    if name == "urlset":
                        kind, item_tag = "urlset", "url"
                    elif name == "sitemapindex":
                        kind, item_tag = "index", "sitemap"
                    else:
                        return Sitemap("invalid", over_limit=over_limit, error=f"root element <{name[:40]}>")
                    continue
                if event != "end" or name != item_tag:
                    continue
                entry = _entry(element)
                root.clear()  # (entries read are dropped: memory stays at one entry, however long the file)
                if entry is None:
                    continue
                if len(entries) >= max_entries:
                    return Sitemap(kind, tuple(entries), True)
                entries.append(entry)
        parser.close()
    except Exception as exc:  # expat's errors, and anything else a file provokes: counted, never raised
        error = f"malformed XML: {str(exc)[:200]}"
    if root is None:
        return Sitemap("invalid", over_limit=over_limit, error=error or "no root element")
    return Sitemap(kind, tuple(entries), over_limit, error)


def _entry(element: Element) -> SitemapEntry | None:
    loc: str | None = None
    lastmod = priority = None
    changefreq: str | None = None
    for child in element:
        name = _local(child.tag)
        if name == "loc":
            loc = (child.text or "").strip()
        elif name == "lastmod":
            lastmod = parse_w3c_datetime(child.text or "")
        elif name == "priority":
            priority = _priority(child.text or "")
        elif name == "changefreq":
            text = (child.text or "").strip().lower()
            changefreq = text if text in CHANGEFREQS else None
    if not loc or len(loc) > MAX_LOC_CHARS:
        return None
    return SitemapEntry(loc, lastmod, priority, changefreq)


def _priority(text: str) -> float | None:
    try:
        value = float(text.strip()[:20])
    except ValueError:
        return None
    return value if 0.0 <= value <= 1.0 else None


def sitemap_links(urls: Iterable[str], parent: str) -> list[Link]:
    """Sitemap files named by ``parent`` (a robots.txt), as links to be fetched as sitemaps (nesting level 0)."""
    links: dict[str, Link] = {}
    for written in urls:
        url, requested = canonicalize(written), request_form(written)
        if url is not None and url not in links:
            links[url] = (url, 0, parent, (), requested if requested != url else None, "sitemap")
    return list(links.values())


def sitemap_outlinks(
    sitemap: Sitemap, tracking_params: tuple[str, ...] = ()
) -> tuple[list[str], dict[str, str], dict[str, SitemapHint]]:
    """A fetched sitemap's entries as (canonical URLs in file order without repeats, their request forms where
    they differ, and what a urlset says of its pages: ``lastmod`` and ``priority``, core/sitemap_hints.py): pages
    for a urlset or text file, sitemaps for an index. Entries are absolute by the protocol; one that is not, or is
    not http(s), is dropped."""
    urls: dict[str, None] = {}
    spellings: dict[str, str] = {}
    hints: dict[str, SitemapHint] = {}
    for entry in sitemap.entries:
        url = canonicalize(entry.loc, tracking_params)
        if url is None or url in urls:
            continue
        urls[url] = None
        requested = request_form(entry.loc)
        if requested is not None and requested != url:
            spellings[url] = requested
        said = entry.lastmod is not None or entry.priority is not None or entry.changefreq is not None
        if said and not sitemap.is_index:
            hints[url] = (entry.lastmod, entry.priority, entry.changefreq)
    return list(urls), spellings, hints
