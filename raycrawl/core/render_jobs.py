"""A page handed to a browser, and what came back (issue 35): the data that travels between a fetch worker and a
render actor, the settings of the render pool, and the rule for each request the browser makes -- pure.

The browser is handed the response already fetched (``RenderJob``: no second request for the page). Every request
its scripts make is decided here (``subresource_verdict``) before anything is sent: only GET/HEAD requests for
scripts and data (``xhr``/``fetch``) to the page's own host go out, one at a time, each after the host's delay
from the end of the one before (the page's own exchange first), so the server sees one polite client whether a
page is rendered or not (docs/architecture.md, invariant 1); the rest are blocked and counted by reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from raycrawl.core.fetch_settings import RENDER_TIMEOUT
from raycrawl.core.records import compact_pickle

# Resource types (Playwright's request.resource_type) a page's own scripts need to build it; images, styles,
# fonts and media never change its links or text, and a crawler does not spend its politeness budget on them.
RENDER_RESOURCE_TYPES = frozenset({"script", "xhr", "fetch"})
RENDER_METHODS = frozenset({"GET", "HEAD"})
ATTEMPT_SLACK = 20.0  # seconds past render_timeout one attempt may take (reading the DOM, closing its context)


def render_bound(render_timeout: float) -> float:
    """The longest a page's render may take, its second attempt included (a browser that died under it): how
    long a fetch worker waits for it, and how much longer a page that may be rendered holds its lease."""
    return 2 * (render_timeout + ATTEMPT_SLACK) + 10.0


@dataclass(frozen=True, slots=True)
class RenderSettings:
    """The render pool's settings (the config's fields of these names)."""

    render_workers: int = 1  # render actors, each with its own browser
    render_workers_max: int = 0  # the pool grows to this many with its queue (0: stays at render_workers)
    render_pages: int = 2  # pages a render actor renders at once (a context each)
    render_timeout: float = RENDER_TIMEOUT  # seconds for a page's load and settle, its requests included
    render_settle: float = 0.5  # seconds without a request in flight that count as settled
    render_max_requests: int = 50  # requests a page's scripts may make (then: blocked, counted)
    render_restart_pages: int = 200  # a browser is replaced after this many pages ...
    render_max_memory_mb: int = 1024  # ... or when its processes hold more than this
    render_browser: str = ""  # Chromium's executable ("": the system's, found where Debian puts it)
    render_screenshots: bool = False  # a PNG of each rendered page, in the WARC beside its conversion


@compact_pickle
@dataclass(slots=True)
class RenderJob:
    """One page to render: its response as fetched, and the host's clock for the requests its scripts make."""

    url: str  # as requested
    status: int
    reason: str
    headers: list[tuple[str, str]]  # as received, less the transfer's own (the body is the decoded one)
    body: bytes
    not_before: float  # wall clock before which no request may go to the host (the page's end + its delay)
    gap: float  # the host's delay (its base: the latency term is added per exchange, as in a run)
    delay_factor: float = 1.0
    max_delay: float = 60.0
    proxy: int = -1  # the proxy (an index into the crawl's) the page came through: its scripts' requests too


@compact_pickle
@dataclass(slots=True)
class RenderOutcome:
    """What rendering a page gave: its DOM (None when nothing rendered), why it ended, what it asked for."""

    html: str | None = None
    settled: bool = False
    reason: str = ""  # "settled", or why not (a bound reached, a crash, a browser that cannot start)
    because: str = ""  # why the page was handed to a browser (the rule, or auto's verdict)
    load_ms: float = 0.0  # the page's load event, from the start
    total_ms: float = 0.0
    requests: int = 0  # requests its scripts made that were sent to the host
    blocked: dict[str, int] = field(default_factory=dict)  # requests refused, by reason
    host_free_at: float = 0.0  # wall clock from which the host's next request may go (0: no request was sent)
    restarts: int = 0  # browsers replaced during this page (a crash: the page was tried again)
    screenshot: bytes | None = None
    retired: bool = False  # the actor asked was leaving the pool: nothing was done, another is to be asked

    @property
    def rendered(self) -> bool:
        return self.html is not None

    def summary(self) -> dict[str, object]:
        """The record's ``render`` field."""
        out: dict[str, object] = {
            "rendered": self.rendered,
            "settled": self.settled,
            "reason": self.reason,
            "because": self.because,
            "load_ms": round(self.load_ms, 1),
            "total_ms": round(self.total_ms, 1),
            "requests": self.requests,
        }
        if self.blocked:
            out["blocked"] = dict(sorted(self.blocked.items()))
        if self.restarts:
            out["restarts"] = self.restarts
        return out


def subresource_verdict(
    method: str, resource_type: str, host: str, page_host: str, sent: int, max_requests: int
) -> str | None:
    """None when a request the page's scripts make may go out, else why not (the blocked counter's key). The
    address itself is checked where it is resolved, by the fetcher's guard ("address")."""
    if host != page_host:
        return "other host"
    if method.upper() not in RENDER_METHODS:
        return "method"
    if resource_type not in RENDER_RESOURCE_TYPES:
        return "type"
    if sent >= max_requests:
        return "over limit"
    return None
