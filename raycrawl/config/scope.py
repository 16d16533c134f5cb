"""What a crawl reaches: seeds' scope, limits, patterns, depth.

Each field is a setting, described once (config/setting.py ``setting``).
"""

from __future__ import annotations

from dataclasses import dataclass

from raycrawl.config.setting import (
    Leftovers,
    Scope,
    default_of,
    setting,
)
from raycrawl.core.crawl_loop import LoopSettings
from raycrawl.core.fetch_settings import FetchSettings
from raycrawl.core.frontier_settings import FrontierSettings
from raycrawl.core.settle import RecordRules


@dataclass(frozen=True)
class ScopeSettings:
    """The settings of ``--help``'s group "scope and limits" (a part of ``CrawlConfig``)."""

    seeds_file: str | None = setting(
        None,
        "file with one seed URL per line (# comments allowed)",
        group="scope and limits",
        metavar="FILE",
        resume="per_run",
    )
    recrawl: str | None = setting(
        None,
        (
            "fetch again the URLs an earlier crawl fetched (its --out), asking conditionally; WARC revisit "
            "records for what did not change"
        ),
        group="scope and limits",
        metavar="PREVIOUS_OUT",
        resume="per_run",
    )  # an earlier crawl's output: its URLs are fetched again, conditionally
    max_pages: int | None = setting(
        None,
        "stop after this many pages were fetched (a limit: --resume with a larger one goes on)",
        group="scope and limits",
    )
    max_depth: int | None = setting(
        default_of(RecordRules, "max_depth"),
        "do not follow links more than this many hops from a seed",
        group="scope and limits",
    )
    time_limit: float | None = setting(
        None,
        "stop after this many seconds of crawling (worker start-up excluded)",
        group="scope and limits",
        unit="seconds",
    )
    scope: Scope = setting(
        "host",
        "which links to follow: host (the seeds' hosts), domain (their registered domains), any",
        group="scope and limits",
        resume="fixed",
    )
    allow: tuple[str, ...] = setting(
        (),
        "only follow URLs matching this regex (repeatable)",
        group="scope and limits",
        metavar="REGEX",
        resume="fixed",
    )
    deny: tuple[str, ...] = setting(
        (),
        "never follow URLs matching this regex (repeatable; wins over --allow)",
        group="scope and limits",
        metavar="REGEX",
        resume="fixed",
    )
    tracking_params: tuple[str, ...] = setting(
        default_of(FetchSettings, "tracking_params"),
        "query parameters dropped from URLs, comma-separated fnmatch patterns",
        group="scope and limits",
        metavar="PATTERNS",
        resume="fixed",
    )
    max_pages_per_host: int | None = setting(
        default_of(FrontierSettings, "max_pages_per_host"),
        (
            "URLs admitted per host; further ones are held for a --resume with a larger budget (--leftovers "
            "record: recorded out_of_budget)"
        ),
        group="scope and limits",
        at_least=1,
    )
    leftovers: Leftovers = setting(
        default_of(LoopSettings, "leftovers"),
        (
            "what a --max-pages/--time-limit stop does with queued URLs: keep them for --resume, or record "
            "each as out_of_budget (final)"
        ),
        group="scope and limits",
    )
    sitemaps: bool = setting(
        default_of(FrontierSettings, "sitemaps"),
        "read no sitemaps (robots.txt Sitemap: lines, their indexes and files)",
        group="scope and limits",
    )
    sitemap_xml: bool = setting(
        default_of(FrontierSettings, "sitemap_xml"),
        "also try /sitemap.xml on every host (robots.txt need not name it)",
        group="scope and limits",
    )
    max_sitemaps_per_host: int = setting(
        default_of(FrontierSettings, "max_sitemaps_per_host"),
        "sitemap files fetched per host in a run; more end as out_of_budget",
        group="scope and limits",
        at_least=0,
    )
    priority: tuple[str, ...] = setting(
        (),
        (
            "add WEIGHT to the score of URLs matching the regular expression PATTERN (repeatable); higher "
            "scores are fetched first"
        ),
        group="scope and limits",
        metavar="PATTERN=WEIGHT",
    )  # PATTERN=WEIGHT rules added to a URL's score (core/priority.py)
    strict: bool = setting(False, "a malformed seed is an error instead of a warning", group="scope and limits")
