"""Sitemaps (sitemaps.org protocol 0.9): a ``urlset`` of pages or a ``sitemapindex`` of further sitemaps, as
XML (optionally gzip-compressed) or as a plain text file of one URL per line.

What a hostile file can cost is bounded: at most ``max_bytes`` are read after decompression (the protocol's
50 MB), at most ``max_entries`` entries are kept (its 50,000), the XML is read as a stream of events that keeps
no tree (only the entry being read, each field bounded), and a document type declaration (the only way to declare
entities, so the only door to entity expansion) is refused by the parser itself, where expat meets it -- in any
encoding it reads, where a byte search would miss UTF-16's. A file that breaks off or goes wrong keeps what it
gave before the fault, and says why (``Sitemap.error``): bounded work, counted, never an exception.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal
from xml.etree.ElementTree import XMLParser

from raycrawl.core.records import Link
from raycrawl.core.sitemap_hints import SitemapHint
from raycrawl.core.urls import canonicalize, request_form

MAX_ENTRIES = 50_000  # sitemaps.org: "no more than 50,000 URLs"
MAX_BYTES = 50 * 1024 * 1024  # ... "and must be no larger than 50MB (52,428,800 bytes)" uncompressed
MAX_LOC_CHARS = 4096  # a loc longer than this is not a URL we would fetch (urls.MAX_URL_LENGTH is 2,083)
_CHUNK = 64 * 1024
_GZIP_MAGIC = b"\x1f\x8b"
MAX_GZIP_MEMBERS = 1024  # a file of more gzip members than this is not a sitemap anyone wrote (most have one)
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
    start = data.lstrip(b"\xef\xbb\xbf\xfe\xff\x00 \t\r\n")[:1]  # (BOMs and UTF-16's NULs: expat reads those too)
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
    """(the file's bytes, at most ``max_bytes``; whether there were more; an error) -- gunzipped if gzip.

    Linear in the body whatever its members: the input is fed in chunks, so what zlib copies at a member's end
    (``unused_data``) is at most a chunk, never the rest of the body (as slicing the rest per member did: 512 KiB of
    empty members took ~0.4 s, 50 MiB an hour); and at most ``MAX_GZIP_MEMBERS`` members are read."""
    if not body.startswith(_GZIP_MAGIC):
        return body[:max_bytes], len(body) > max_bytes, None
    out = bytearray()
    view = memoryview(body)
    pos = members = 0
    try:
        while view[pos : pos + 2] == _GZIP_MAGIC and len(out) <= max_bytes:  # (a file may hold several members)
            members += 1
            if members > MAX_GZIP_MEMBERS:  # (past the bound, as past max_bytes: what was read is kept)
                return bytes(out[:max_bytes]), True, None
            member = zlib.decompressobj(16 + zlib.MAX_WBITS)
            while not member.eof and len(out) <= max_bytes:
                data: bytes | memoryview = member.unconsumed_tail  # (a suffix of what was fed: pos is past it)
                if not data:
                    data = view[pos : pos + _CHUNK]
                    pos += len(data)
                    if not data:
                        break
                out += member.decompress(data, max_bytes + 1 - len(out))
            if not member.eof:
                break  # over the bound, or the compressed data ended early: what was read is kept
            pos -= len(member.unused_data)
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


class _Refused(Exception):
    """A document type declaration: refused where expat meets it, whatever the file's encoding."""


class _Full(Exception):
    """More entries than the bound: reading stops."""


_FIELDS = frozenset({"loc", "lastmod", "priority", "changefreq"})
_MAX_FIELD_CHARS = {"loc": MAX_LOC_CHARS + 1, "lastmod": 64, "priority": 32, "changefreq": 32}


class _SitemapTarget:
    """expat's target (xml.etree's ``XMLParser(target=...)``): entries taken as their elements end, no tree kept.

    Only the field being read is held -- a few characters, bounded per field -- so memory stays at one entry
    however many elements of any kind the file holds (a tree, even cleared per entry, kept every other element
    until the next entry ended: ~21x the file's size).
    """

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self.kind: SitemapKind = "invalid"
        self.root: str | None = None
        self.entries: list[SitemapEntry] = []
        self._item = ""
        self._depth = 0
        self._in_item = False  # an item element (url, or sitemap in an index) is open at depth 2
        self._fields: dict[str, str] = {}
        self._field: str | None = None  # the field element open at depth 3, in an item
        self._text: list[str] = []
        self._chars = 0

    def doctype(self, name: str, pubid: str | None, system: str | None) -> None:
        raise _Refused("a document type declaration (refused)")

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        self._depth += 1
        name = _local(tag)
        if self._depth == 1:
            self.root = name
            if name == "urlset":
                self.kind, self._item = "urlset", "url"
            elif name == "sitemapindex":
                self.kind, self._item = "index", "sitemap"
        elif self._depth == 2:
            self._in_item = name == self._item
        elif self._depth == 3 and name in _FIELDS and self._in_item:
            self._field, self._text, self._chars = name, [], 0

    def data(self, text: str) -> None:
        if self._field is None or self._depth != 3:
            return  # (text outside a field, or inside an element nested in one: not read)
        room = _MAX_FIELD_CHARS[self._field] - self._chars
        if room > 0:
            self._text.append(text[:room])
            self._chars += min(len(text), room)

    def end(self, tag: str) -> None:
        self._depth -= 1
        if self._depth == 2 and self._field is not None:
            self._fields[self._field] = "".join(self._text)  # (the last of a field written twice wins)
            self._field = None
        elif self._depth == 1:
            if self._in_item:
                self._add(_entry(self._fields))
            self._in_item, self._fields = False, {}

    def close(self) -> None:
        return None

    def _add(self, entry: SitemapEntry | None) -> None:
        if entry is None:
            return
        if len(self.entries) >= self.max_entries:
            raise _Full
        self.entries.append(entry)


def _parse_xml(data: bytes, max_entries: int, over_limit: bool) -> Sitemap:
    target = _SitemapTarget(max_entries)
    parser = XMLParser(target=target)
    error: str | None = None
    try:
        for offset in range(0, len(data), _CHUNK):
            parser.feed(data[offset : offset + _CHUNK])
            if target.root is not None and target.kind == "invalid":
                break  # (not a sitemap: the rest is not read)
        else:
            parser.close()
    except _Refused as exc:
        return Sitemap("invalid", over_limit=over_limit, error=str(exc))
    except _Full:
        return Sitemap(target.kind, tuple(target.entries), True)
    except Exception as exc:  # expat's errors, and anything else a file provokes: counted, never raised
        error = f"malformed XML: {str(exc)[:200]}"
    if target.root is None:
        return Sitemap("invalid", over_limit=over_limit, error=error or "no root element")
    if target.kind == "invalid":
        return Sitemap("invalid", over_limit=over_limit, error=f"root element <{target.root[:40]}>")
    return Sitemap(target.kind, tuple(target.entries), over_limit, error)


def _entry(fields: dict[str, str]) -> SitemapEntry | None:
    loc = fields.get("loc", "").strip()
    if not loc or len(loc) > MAX_LOC_CHARS:
        return None
    changefreq = fields.get("changefreq", "").strip().lower()
    return SitemapEntry(
        loc,
        parse_w3c_datetime(fields["lastmod"]) if "lastmod" in fields else None,
        _priority(fields["priority"]) if "priority" in fields else None,
        changefreq if changefreq in CHANGEFREQS else None,
    )


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
            links[url] = (url, 0, parent, (), requested if requested != url else None, "sitemap", 0.0)
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
