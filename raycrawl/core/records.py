"""The values that travel between the frontier, the fetch tasks and the output.

Plain slotted dataclasses: cheap to pickle across Ray, typed, and free of behaviour. ``UrlEntry``, ``Lease``
and ``Ack`` are made once per URL and per fetch, millions of times in a crawl, so they are not ``frozen``: a
frozen dataclass sets each field through ``object.__setattr__`` and costs about five times as much to create.
Treat them as values all the same: nothing changes one after it is made (``dataclasses.replace`` makes anew).

Each pickles as its class and its field values in order (``compact_pickle``). The default pickle of a slotted
dataclass is a dict of field names to values per object: leases and results cross Ray by the thousand, and
the compact form is 11-28% smaller and 2.3-3.5x faster to pickle and unpickle (benchmarks/README.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any, Literal, TypeVar

T = TypeVar("T")


def compact_pickle(cls: type[T]) -> type[T]:
    """Pickle instances of the dataclass ``cls`` as ``cls(*field values)``."""
    every = fields(cls)  # type: ignore[arg-type]
    if len(every) < 2 or not all(f.init for f in every):
        raise TypeError(f"compact_pickle needs two or more fields, all set by __init__: {cls.__name__}")
    values = attrgetter(*(f.name for f in every))  # (with two or more names, attrgetter returns a tuple)

    def __reduce__(self: T) -> tuple[type[T], tuple[Any, ...]]:
        return cls, values(self)

    cls.__reduce__ = __reduce__  # type: ignore[method-assign,assignment]
    return cls


LeaseKind = Literal["page", "robots", "sitemap"]
EntryKind = Literal["page", "sitemap"]  # what a queued URL is fetched as
# Terminal outcomes of a URL (each URL ends in exactly one record):
#   fetched        a response was received (any status: 200, 404, 301 ...)
#   error          no usable response after max_attempts (the error field says why)
#   robots_denied  robots.txt forbids it; no request was made
#   out_of_budget  the crawl stopped (max-pages, time limit) or a queue bound shed it before it was fetched
#   too_large      a response whose (decoded) body exceeded max_body_bytes; reading stopped at the limit
#   not_modified   (a recrawl) the server answered 304 to the conditional request: the earlier capture stands
#   unchanged      (a recrawl) a 200 whose body is the earlier capture's, byte for byte (same sha256)
#   gone           (a recrawl) a URL captured before now answers 404 or 410
#   skipped_unchanged  (a recrawl) not fetched: its sitemap's lastmod is older than its capture
Outcome = Literal[
    "fetched",
    "error",
    "robots_denied",
    "out_of_budget",
    "too_large",
    "not_modified",
    "unchanged",
    "gone",
    "skipped_unchanged",
]

# The outcomes of URLs a request was made for (what max_pages and pages/s count).
FETCH_OUTCOMES = ("fetched", "error", "too_large", "not_modified", "unchanged", "gone")


@compact_pickle
@dataclass(slots=True, frozen=True)
class Known:
    """What an earlier crawl learned about a URL (``--recrawl``): its validators for a conditional request, and
    its capture, which a revisit record refers to."""

    etag: str | None
    last_modified: str | None
    sha256: str | None
    warc_id: str | None  # WARC-Record-ID of the earlier capture's response record
    warc_date: str | None  # ... and its WARC-Date
    warc_uri: str | None = None  # ... and its URL, when that was another one (the page was a duplicate of it)
    # A continuous crawl's (core/revisit_schedule.py): the interval that made this visit due, and when it was due
    interval: float | None = None
    due: float | None = None

    def to_row(self) -> list[str | float | None]:
        row: list[str | float | None] = [self.etag, self.last_modified, self.sha256, self.warc_id, self.warc_date]
        tail: list[str | float | None] = [self.warc_uri, self.interval, self.due]
        while tail and tail[-1] is None:
            tail.pop()
        return row + tail

    @classmethod
    def from_row(cls, row: list[Any]) -> Known:
        return cls(*row)


# url (canonical), depth, parent, the redirect chain that led to it, the URL as written (None: as canonical), what
# it is to be fetched as, and the score its page gave it (score_links: core/link_scores.py; 0.0 without)
Link = tuple[str, int, "str | None", tuple[str, ...], "str | None", EntryKind, float]


@compact_pickle
@dataclass(slots=True)
class UrlEntry:
    """A canonical URL waiting in the frontier, with the spelling it will be requested in."""

    url: str  # canonical: the dedup key and the record's url
    depth: int
    parent: str | None = None
    attempts: int = 0
    redirects: tuple[str, ...] = ()  # the URLs that redirected to this one, first first
    requested: str | None = None  # the link as written (urls.request_form), when it differs from ``url``
    # A sitemap's ``depth`` is how deep in sitemap indexes it was found (0: named by robots.txt); the pages it
    # lists are at depth 1.
    kind: EntryKind = "page"
    known: Known | None = None  # a recrawl's URL: what the earlier crawl learned about it
    hint: float = 0.0  # added to its score by what a sitemap says of it (core/sitemap_hints.py)
    link_score: float = 0.0  # ... and by what the page that linked to it said (score_links: core/link_scores.py)

    @property
    def request_url(self) -> str:
        """What goes on the request line, and what robots.txt is matched against."""
        return self.requested or self.url

    def to_row(self) -> list[Any]:
        row: list[Any] = [self.url, self.depth, self.parent, self.attempts]
        if self.link_score:
            known = self.known.to_row() if self.known is not None else None
            return [*row, list(self.redirects), self.requested, self.kind, known, self.hint, self.link_score]
        if self.hint:
            known = self.known.to_row() if self.known is not None else None
            return [*row, list(self.redirects), self.requested, self.kind, known, self.hint]
        if self.known is not None:
            return [*row, list(self.redirects), self.requested, self.kind, self.known.to_row()]
        if self.kind != "page":
            return [*row, list(self.redirects), self.requested, self.kind]
        if self.requested:
            return [*row, list(self.redirects), self.requested]
        return [*row, list(self.redirects)] if self.redirects else row

    @classmethod
    def from_row(cls, row: list[Any]) -> UrlEntry:
        url, depth, parent, attempts, *rest = row
        redirects = tuple(rest[0]) if rest else ()
        requested = rest[1] if len(rest) > 1 else None
        kind: EntryKind = rest[2] if len(rest) > 2 else "page"
        known = Known.from_row(rest[3]) if len(rest) > 3 and rest[3] is not None else None
        hint = float(rest[4]) if len(rest) > 4 else 0.0
        link_score = float(rest[5]) if len(rest) > 5 else 0.0
        return cls(url, depth, parent, attempts, redirects, requested, kind, known, hint, link_score)


@compact_pickle
@dataclass(slots=True)
class Lease:
    """A URL handed to a fetch task. It stays owned by its shard until acked (docs/architecture.md, invariant 4).

    It carries its ``UrlEntry`` rather than copies of its fields: a shard makes one lease per URL, and every
    field is paid for on each of them. A robots.txt lease carries an entry of its own (depth 0).
    """

    lease_id: int
    shard: int
    kind: LeaseKind
    not_before: float  # wall-clock time before which the request must not be sent
    expires_at: float  # after this the shard may hand the URL out again: a fetcher must not send it then
    entry: UrlEntry
    # A host's run (core/runs.py): the lease of the same host sent before this one (0: none). Its request waits
    # for that exchange to end, then ``gap`` (the host's delay, but for its latency term), and is not sent at
    # all if that answer ends the run. A run's first lease carries the host's current delay as its ``gap``: what
    # a rendered page's scripts' requests wait between them (core/render_jobs.py).
    after: int = 0
    gap: float = 0.0
    proxy: int = -1  # the crawl's proxy that carries it (core/proxy_routes.py; -1: direct)

    @property
    def url(self) -> str:
        return self.entry.url

    @property
    def depth(self) -> int:
        return self.entry.depth

    @property
    def parent(self) -> str | None:
        return self.entry.parent

    @property
    def attempts(self) -> int:
        return self.entry.attempts

    @property
    def redirects(self) -> tuple[str, ...]:
        return self.entry.redirects

    @property
    def request_url(self) -> str:
        return self.entry.request_url


@compact_pickle
@dataclass(slots=True)
class FetchResult:
    """What a fetch task learned about one leased URL."""

    lease: Lease
    status: int | None = None
    final_url: str | None = None
    sent_at: float = 0.0  # wall clock just before the request was sent
    responded_at: float = 0.0  # wall clock when response headers arrived (or the error happened)
    ended_at: float = 0.0  # wall clock when the exchange ended: last byte read, or the connection cut
    elapsed_ms: float = 0.0
    content_type: str | None = None
    size: int = 0
    sha256: str | None = None
    outlinks: list[str] = field(default_factory=list)  # canonical, in document order
    spellings: dict[str, str] = field(default_factory=dict)  # outlink -> its request form, where that differs
    links_capped: bool = False  # the page had more links than max_outlinks (only that many were looked at)
    error: str | None = None  # error class, e.g. "ClientConnectorError"; None when a response was received
    transient: bool = False  # worth retrying through the frontier
    body: bytes | None = None  # only for robots.txt leases
    retry_at: float | None = None  # Retry-After, as an absolute wall-clock time
    truncated: bool = False  # the body was larger than max_body_bytes: reading stopped there
    node: str = ""  # the Ray node that fetched it (a short id), for stats
    fault: str | None = None  # the exception class the per-URL fault boundary caught (an error record, counted)
    warc: WarcSpan | None = None  # where its WARC records are, in its worker's local buffer
    sitemap: SitemapRead | None = None  # a sitemap lease's file, as read (its entries are the outlinks)
    duplicate_of: str | None = None  # the URL whose capture has this page's payload (stored as a revisit of it)
    # a sitemap's: (lastmod, priority) of the pages it lists that have either (core/sitemap_hints.py)
    hints: dict[str, tuple[float | None, float | None, str | None]] = field(default_factory=dict)
    etag: str | None = None  # the response's validators, for a later recrawl's conditional request
    last_modified: str | None = None
    warc_id: str | None = None  # its WARC response (or revisit) record's WARC-Record-ID ...
    warc_date: str | None = None  # ... and WARC-Date
    unsent: bool = False  # a run's lease given back unsent (the run ended before it): no request, no attempt
    render: dict[str, Any] | None = None  # a page handed to a browser: what the render gave (RenderOutcome.summary)
    # the host's clock counts from here when later than ended_at: a render's end (its scripts' requests went to the
    # host after the exchange; they are not the exchange's latency)
    held_until: float = 0.0
    # With an extractor (issue 47): the page's verdict (core/contract.py; None: nothing extracted), why, the rule
    # counted, and where its item's line is in its worker's item buffer (kept with the record, like its WARC)
    verdict: str | None = None
    verdict_reason: str | None = None
    verdict_rule: str | None = None
    item: WarcSpan | None = None
    # With score_links (issue 48): what the page said its links are worth -- one score for all of them, or one per
    # canonical link URL (the others 0) -- added to their frontier scores (core/link_scores.py)
    link_scores: float | dict[str, float] | None = None


@compact_pickle
@dataclass(slots=True)
class SitemapRead:
    """What a fetched sitemap held: an index lists sitemaps, any other kind pages (``core/sitemaps.py``)."""

    kind: str  # urlset, index, text or invalid
    entries: int  # entries read from the file
    over_limit: bool = False  # the file had more than the bounds let us read
    error: str | None = None


@compact_pickle
@dataclass(slots=True)
class WarcSpan:
    """One fetch's WARC records (response and request) in a worker's buffer file: bytes [start, end) of ``file``
    on node ``node``, a file whose first ``head`` bytes are its warcinfo record. The same for a page's item line in
    a worker's item buffer (head 0): both are kept, and stored at the cut, exactly when the page's record is."""

    node: str
    file: str
    head: int
    start: int
    end: int


@compact_pickle
@dataclass(slots=True)
class Ack:
    """The part of a FetchResult its shard needs: whether the host answered, when, and how."""

    lease_id: int
    status: int | None
    responded_at: float
    elapsed_s: float
    transient: bool
    error: str | None = None
    body: bytes | None = None
    retry_at: float | None = None  # from Retry-After: no request to the host before this wall-clock time
    ended_at: float = 0.0  # when the exchange ended (last byte or cut): politeness and backoff count from here
    truncated: bool = False  # reading stopped at the size limit (a robots.txt is then parsed to its last line)
    accepted: bool = False  # the page's item was accepted (with an extractor: the per-host accepted budget)


@compact_pickle
@dataclass(slots=True, frozen=True)
class Terminal:
    """A URL that ended inside the frontier, without a fetch of its own."""

    entry: UrlEntry
    outcome: Outcome
    detail: str


def ack_of(result: FetchResult) -> Ack:
    """The shard's view of a result: what moves the host's clock and decides a retry (robots.txt: its body)."""
    return Ack(
        result.lease.lease_id,
        result.status,
        result.responded_at,
        # the latency term of the delay counts the whole exchange, body included (core/politeness.py)
        max(0.0, result.ended_at - result.sent_at) if result.sent_at else result.elapsed_ms / 1000,
        result.transient,
        result.error,
        result.body if result.lease.kind == "robots" else None,
        result.retry_at,
        ended_at=max(result.ended_at, result.held_until) or result.responded_at,
        truncated=result.truncated,
        accepted=result.verdict == "accepted",
    )
