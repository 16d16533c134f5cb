"""Which extractor a crawl runs (issue 47): named in the config, made once in each process that extracts.

A spec is ``builtin:NAME`` (core/extractors.py), or ``module:function`` -- an importable module (the job's working
directory under ``ray job submit``, or an installed package) and a function ``extract(page) -> dict | None`` in it --
or, from Python, the function itself. ``[extract.fields]`` (NAME = "css:...") adds declared fields to what the
spec gives, or are the whole item where there is no spec. Importing a module runs its code: a spec is checked where
the crawl starts (``extraction_problem``), so a name that does not import is a config error there, not every fetch
worker's.
"""

from __future__ import annotations

import importlib
import signal
import threading
from collections.abc import Callable, Mapping
from types import FrameType
from typing import Any, TypeVar

from raycrawl.adapters.say_once import say_once
from raycrawl.core.article import article
from raycrawl.core.contract import Accept, ContentContract, Extractor, Judgement, judge
from raycrawl.core.extract_settings import ExtractSettings, field_table
from raycrawl.core.extractors import CssFields, meta
from raycrawl.core.link_scores import LinkScorer, LinkScores, checked
from raycrawl.core.page import Page
from raycrawl.core.records import FetchResult
from raycrawl.core.render_jobs import RenderOutcome

BUILTINS: dict[str, Extractor] = {"article": article, "meta": meta}
BUILTIN_NEEDS = {"builtin:article": "trafilatura"}  # the library a built-in imports when it first runs


def load_function(spec: str) -> Callable[..., Any]:
    """The function ``module:function`` names (ValueError saying why it cannot be had)."""
    module_name, sep, name = spec.partition(":")
    if not sep or not module_name.strip() or not name.strip():
        raise ValueError(f"{spec!r}: expected builtin:NAME or module:function")
    try:
        module = importlib.import_module(module_name.strip())
    except Exception as exc:  # (a module that raises on import is as unusable as a missing one)
        raise ValueError(f"{spec!r}: cannot import {module_name.strip()} ({type(exc).__name__}: {exc})") from None
    function = getattr(module, name.strip(), None)
    if not callable(function):
        raise ValueError(f"{spec!r}: {module_name.strip()} has no function {name.strip()}")
    return function  # type: ignore[no-any-return]


def extractor_from(spec: str | Callable[..., Any] | None, fields: Mapping[str, str] | None = None) -> Extractor | None:
    """The crawl's extractor: the spec's, with the declared fields added; None when neither is given."""
    declared = CssFields.parse(dict(fields)) if fields else None
    base: Extractor | None
    if spec is None or spec == "":
        base = None
    elif callable(spec):
        base = spec
    elif spec.startswith("builtin:"):
        name = spec.removeprefix("builtin:")
        if name not in BUILTINS:
            raise ValueError(f"{spec!r}: the built-in extractors are {', '.join('builtin:' + n for n in BUILTINS)}")
        base = BUILTINS[name]
    else:
        base = load_function(spec)
    if declared is None:
        return base
    if base is None:
        return declared
    return _WithFields(base, declared)


def extraction_problem(spec: str | Callable[..., Any] | None, fields: Mapping[str, str] | None = None) -> str | None:
    """Why the crawl could not make its extractor (None: it can)."""
    try:
        extractor_from(spec, fields)
    except ValueError as exc:
        return str(exc)
    needs = BUILTIN_NEEDS.get(spec) if isinstance(spec, str) else None
    if needs is not None:  # (imported where it runs: checked here, or every page would be quarantined)
        try:
            importlib.import_module(needs)
        except Exception as exc:
            first = (str(exc).splitlines() or [""])[0]
            return f"{spec!r} needs {needs}, which does not import here ({type(exc).__name__}: {first})"
    return None


class _WithFields:
    """An extractor's item with the declared fields added (None from the extractor stays None: not a data page)."""

    def __init__(self, base: Extractor, fields: CssFields) -> None:
        self.base, self.fields = base, fields

    def __call__(self, page: Page) -> Mapping[str, Any] | None:
        item = self.base(page)
        if item is None:
            return None
        return {**item, **(self.fields(page) or {})}


def page_of(
    result: FetchResult, body: bytes, raw_headers: list[tuple[bytes, bytes]], render: RenderOutcome | None
) -> Page:
    """The page an extractor sees of a fetch: the rendered DOM when the page was rendered, else the body."""
    lease = result.lease
    rendered = render is not None and render.html is not None
    return Page(
        url=lease.url,
        status=result.status or 0,
        body=render.html.encode("utf-8") if rendered else body,  # type: ignore[union-attr]
        headers=tuple((k.decode("latin-1"), v.decode("latin-1")) for k, v in raw_headers),
        requested_url=lease.request_url,
        final_url=result.final_url or lease.url,
        depth=lease.depth,
        parent=lease.parent,
        content_type="text/html; charset=utf-8" if rendered else result.content_type,
        rendered=rendered,
        links=tuple(result.outlinks),
    )


class ExtractTimeout(BaseException):
    """An extraction ran past --extract-timeout (raised inside it, where it was; a BaseException, so that neither
    ``judge`` nor an extractor's own ``except Exception`` takes it for the page's failure)."""


class Extraction:
    """A worker's extractor, accept function and contract, made once from the crawl's settings; ``judge`` runs
    them on one page within the timeout, and never raises."""

    def __init__(self, settings: ExtractSettings) -> None:
        self.settings = settings
        self.name = settings.extractor_name
        extractor = extractor_from(settings.extract, field_table(settings.extract_fields))
        assert extractor is not None, "ExtractSettings without an extractor"
        self.extractor: Extractor = extractor
        accept = settings.accept
        self.accept: Accept | None = load_function(accept) if isinstance(accept, str) else accept
        self.contract: ContentContract = settings.contract
        scorer = settings.score_links
        self.scorer: LinkScorer | None = load_function(scorer) if isinstance(scorer, str) else scorer

    def judge(self, page: Page) -> Judgement:
        seconds = self.settings.extract_timeout
        try:
            return call_within(seconds, lambda: judge(page, self.extractor, self.contract, self.accept))
        except ExtractTimeout:
            return Judgement(None, "quarantined", f"extraction ran past {seconds:g} s (--extract-timeout)", "timeout")
        except Exception as exc:  # (the alarm landing between judge's return and its cancelling)
            return Judgement(
                None, "quarantined", f"extraction failed: {type(exc).__name__}", "raised:" + type(exc).__name__
            )

    def score_links(self, page: Page, item: Mapping[str, Any] | None) -> LinkScores | None:
        """What ``score_links`` says the page's links are worth (core/link_scores.py), within the timeout; None
        when there is no scorer or no link. A function that fails, runs past the timeout or answers what is not a
        score scores nothing (the links go by their other scores) and is said once per process."""
        if self.scorer is None or not page.links:
            return None
        scorer, seconds = self.scorer, self.settings.extract_timeout
        try:
            return checked(call_within(seconds, lambda: scorer(page, item)), page.links)
        except ExtractTimeout:
            _warn_once(f"score_links ran past {seconds:g} s (--extract-timeout) on {page.url[:200]}")
        except Exception as exc:  # (the operator's code: its failure is one page's links unscored, said once)
            _warn_once(f"score_links failed on {page.url[:200]} ({type(exc).__name__}: {str(exc)[:200]})")
        return None


def _warn_once(message: str) -> None:
    say_once("score_links", f"{message}; such pages' links go unscored")


T = TypeVar("T")


def call_within(seconds: float, work: Callable[[], T]) -> T:
    """``work()``, interrupted by ExtractTimeout after ``seconds``.

    On the main thread (a Ray task's, or a test's) a timer signal raises inside whatever Python code runs, a
    ``time.sleep`` or a busy loop alike, and the worker goes on. Elsewhere no signal can reach the work: it runs on a
    thread of its own, and one that does not finish is left to itself (a daemon) while the page is quarantined.
    """
    if threading.current_thread() is threading.main_thread():
        return _with_alarm(seconds, work)
    box: list[T] = []
    runner = threading.Thread(target=lambda: box.append(work()), name="raycrawl-extract", daemon=True)
    runner.start()
    runner.join(seconds)
    if not box:
        raise ExtractTimeout()
    return box[0]


def _with_alarm(seconds: float, work: Callable[[], T]) -> T:
    # A signal's Python handler runs when the main thread next checks for one, which on a loaded machine can be
    # after the work ended -- even after this function restored the handler before it, when that was a ring left
    # by an earlier call (a ring raising inside the finally below skips the restore). A ring therefore raises only
    # while its own call is armed, once: anywhere else an ExtractTimeout would land in the fetch task's own code
    # (e.g. between taking exchanges and counting them) and lose what it held.
    armed = [True]

    def ring(signum: int, frame: FrameType | None) -> None:
        if armed[0]:
            armed[0] = False
            raise ExtractTimeout()

    before = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return work()
    finally:
        armed[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before if before is not None else signal.SIG_DFL)
