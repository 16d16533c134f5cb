"""The crawl configuration: one frozen dataclass, validated once, loaded from four layers.

Precedence, lowest to highest: built-in defaults < TOML file (``--config``) < ``RAYCRAWL_*`` environment
variables < command-line flags. Every field can be set in every layer under the same name (dashes or
underscores in TOML and on the command line; upper case with underscores after ``RAYCRAWL_`` in the
environment, e.g. ``RAYCRAWL_MAX_PAGES=100``). List fields take a TOML array or a comma-separated string.
"""

from __future__ import annotations

import dataclasses
import difflib
import ipaddress
import math
import os
import re
import tomllib
import types
import typing
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from raycrawl.adapters.extraction import extraction_problem, load_function
from raycrawl.adapters.snapshots import redis_url_problem
from raycrawl.core.addresses import is_ip_literal
from raycrawl.core.contract import ContentContract
from raycrawl.core.crawl_loop import LoopSettings
from raycrawl.core.extract_settings import ExtractSettings, field_table, spec_name
from raycrawl.core.fetch_settings import DEFAULT_TRACKING_PARAMS as DEFAULT_TRACKING_PARAMS
from raycrawl.core.fetch_settings import FetchSettings
from raycrawl.core.frontier_settings import FrontierSettings
from raycrawl.core.politeness import DelayPolicy
from raycrawl.core.priority import parse_rule
from raycrawl.core.proxy_routes import check_proxy_url
from raycrawl.core.proxy_routes import parse_rule as parse_proxy_rule
from raycrawl.core.render_jobs import RenderSettings
from raycrawl.core.render_rules import RenderMode
from raycrawl.core.render_rules import parse_rule as parse_render_rule
from raycrawl.core.revisit_schedule import RevisitPolicy, ScheduleKind, parse_duration
from raycrawl.core.revisit_schedule import parse_rule as parse_revisit_rule
from raycrawl.core.robots_txt import product_token
from raycrawl.core.settle import RecordRules
from raycrawl.core.traps import TrapRules
from raycrawl.errors import ConfigError

ENV_PREFIX = "RAYCRAWL_"

Scope = Literal["host", "domain", "any"]
DedupKind = Literal["exact", "bloom"]
CrawlDelayPolicy = Literal["cap", "skip"]
Leftovers = Literal["keep", "record"]


# The groups of ``raycrawl crawl --help``, in the order it shows them (each setting names its own).
HELP_GROUPS = ("scope and limits", "politeness", "output and durability", "fetching and bounds", "pages into data",
               "proxies", "rendering", "continuous crawling", "cluster")  # fmt: skip


@dataclass(frozen=True, slots=True)
class Setting:
    """What the command line, the TOML and environment readers, resuming and the docs know of a setting: written
    once, on its field (``setting(...)``); the tables they use are made from these (``SETTINGS``)."""

    help: str = ""  # its --help line
    group: str | None = None  # its --help group (HELP_GROUPS); None: no flag of its own (the seeds, Python only)
    unit: Literal["seconds", "duration"] | None = None  # seconds (SECONDS in --help), or a duration such as 7d
    metavar: str | None = None  # what --help says to give, where the type does not say it
    default_text: str | None = None  # what --help says the default is, where None means more than "none"
    resume: Literal["saved", "fixed", "per_run"] = "saved"  # fixed: a resume may not change it; per_run: not saved
    spec: bool = False  # a module:function (from Python, the function itself)
    python_only: bool = False  # no flag, TOML key or environment variable: an object, not text
    toml: tuple[str, str] | None = None  # also a key of a TOML table: (table, key), e.g. ("extract", "timeout")
    at_least: float | None = None  # the least value it may take (a setting that may be None: when it is not)


def setting(default: Any, help: str = "", **described: Any) -> Any:
    """A CrawlConfig field: its default and what is known of it (``Setting``); ``compare``/``repr`` go to the field."""
    field_options = {key: described.pop(key) for key in ("compare", "repr") if key in described}
    return dataclasses.field(default=default, metadata={"setting": Setting(help, **described)}, **field_options)


def _default(section: type, name: str) -> Any:
    """A setting's default, from the section of settings that owns it (core/): each is defined once, there."""
    return section.__dataclass_fields__[name].default  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class CrawlConfig:
    """Everything a crawl needs to know; see the README's flag table for each field's meaning."""

    seeds: tuple[str, ...] = setting((), resume="per_run")
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
    out: str = setting(
        "crawl-out",
        ("where the output goes: a directory, or a URI such as s3://bucket/prefix (pages/, warc/, stats.json)"),
        group="output and durability",
        metavar="DIR",
        resume="per_run",
    )
    max_pages: int | None = setting(
        None,
        "stop after this many pages were fetched (a limit: --resume with a larger one goes on)",
        group="scope and limits",
    )
    max_depth: int | None = setting(
        _default(RecordRules, "max_depth"),
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
        _default(FetchSettings, "tracking_params"),
        "query parameters dropped from URLs, comma-separated fnmatch patterns",
        group="scope and limits",
        metavar="PATTERNS",
        resume="fixed",
    )
    delay: float = setting(
        _default(DelayPolicy, "delay"),
        "minimum seconds between two requests to one host",
        group="politeness",
        unit="seconds",
    )
    delay_factor: float = setting(
        _default(DelayPolicy, "delay_factor"),
        "a host's delay is at least this many times its last exchange's duration (0: off)",
        group="politeness",
        metavar="FACTOR",
    )
    min_delay: float = setting(
        _default(DelayPolicy, "min_delay"),
        "floor of any host's delay",
        group="politeness",
        unit="seconds",
        at_least=0,
    )
    max_delay: float = setting(
        _default(DelayPolicy, "max_delay"), "ceiling of any host's delay", group="politeness", unit="seconds"
    )
    max_crawl_delay: float = setting(
        _default(DelayPolicy, "max_crawl_delay"),
        "largest robots.txt Crawl-delay honoured",
        group="politeness",
        unit="seconds",
        at_least=0,
    )
    crawl_delay_policy: CrawlDelayPolicy = setting(
        _default(FrontierSettings, "crawl_delay_policy"),
        "a Crawl-delay over the cap: cap it (and count it) or skip the host",
        group="politeness",
    )
    max_retry_after: float = setting(
        _default(DelayPolicy, "max_retry_after"),
        "longest Retry-After honoured, seconds",
        group="politeness",
        unit="seconds",
        at_least=0,
    )
    backoff_base: float = setting(
        _default(DelayPolicy, "backoff_base"),
        "first backoff after a transient failure, doubling per failure in a row",
        group="politeness",
        unit="seconds",
    )
    max_backoff: float = setting(
        _default(DelayPolicy, "max_backoff"), "longest backoff, seconds", group="politeness", unit="seconds"
    )
    pause_after: int = setting(
        _default(FrontierSettings, "pause_after"), "pause a host after this many 403/451 in a row", group="politeness"
    )
    per_host_concurrency: int = setting(
        _default(FrontierSettings, "per_host_concurrency"),
        "requests in flight per host",
        group="politeness",
        at_least=1,
    )
    shards: int | None = setting(
        None, "number of frontier shards", group="cluster", default_text="one per CPU, at least 2", resume="fixed"
    )
    dedup: DedupKind = setting(
        "exact",
        "seen-set: exact (64-bit fingerprints, ~9.6 B/URL) or bloom (smaller, may drop a few URLs)",
        group="cluster",
        resume="fixed",
    )
    dedup_partitions: int | None = setting(
        None,
        "number of seen-set partitions (dedup actors), each owning a share of the fingerprints",
        group="cluster",
        default_text="one per 8 CPUs, at least 1",
        resume="fixed",
    )
    bloom_capacity: int = setting(10_000_000, "URLs the Bloom filter is sized for", group="cluster", resume="fixed")
    bloom_error_rate: float = setting(
        0.001, "the Bloom filter's false-positive rate at capacity", group="cluster", metavar="RATE", resume="fixed"
    )
    user_agent: str = setting(
        _default(FetchSettings, "user_agent"),
        "User-Agent header; its product token picks robots.txt groups",
        group="politeness",
        metavar="AGENT",
        resume="fixed",
    )
    allow_private_networks: bool = setting(
        _default(FetchSettings, "allow_private_networks"),
        "allow connecting to private, loopback and link-local addresses (off by default)",
        group="fetching and bounds",
    )
    allow_network: tuple[str, ...] = setting(
        _default(FetchSettings, "allow_network"),
        "allow connecting to this CIDR even if private, e.g. 10.0.0.0/8 (repeatable)",
        group="fetching and bounds",
        metavar="CIDR",
    )
    resolve: tuple[str, ...] = setting(
        (),
        "pin a host name to an address, HOST=IP (repeatable), like curl --resolve",
        group="fetching and bounds",
        metavar="HOST=IP",
    )
    ray_address: str | None = setting(
        None,
        "address of a running Ray cluster",
        group="cluster",
        metavar="ADDRESS",
        default_text="RAY_ADDRESS, else a local Ray",
        resume="per_run",
    )
    fetch_batch_size: int = setting(
        _default(LoopSettings, "fetch_batch_size"),
        "URLs per fetch task when enough are due",
        group="cluster",
        at_least=1,
    )
    max_tasks_in_flight: int = setting(
        _default(LoopSettings, "max_tasks_in_flight"),
        "fetch tasks running at once",
        group="cluster",
        at_least=1,
    )
    fetch_task_cpus: float = setting(
        1.0, "CPUs a fetch task reserves", group="cluster", metavar="CPUS"
    )  # (each task running at once is a worker process: fewer, fuller ones cost less CPU)
    timeout: float = setting(
        _default(FetchSettings, "timeout"),
        "connect/read timeout per request, seconds",
        group="fetching and bounds",
        unit="seconds",
    )
    fetch_deadline: float = setting(
        _default(FetchSettings, "fetch_deadline"),
        "total seconds one fetch may take, on top of --timeout: cuts off slow drips",
        group="fetching and bounds",
        unit="seconds",
    )
    max_body_bytes: int = setting(
        _default(FetchSettings, "max_body_bytes"),
        "largest decoded body read, in bytes; larger ends as too_large",
        group="fetching and bounds",
        metavar="BYTES",
    )
    keep_truncated: bool = setting(
        _default(FetchSettings, "keep_truncated"),
        "keep the first max-body-bytes of a too_large body in the WARC",
        group="output and durability",
    )
    revisit_duplicates: bool = setting(
        _default(FetchSettings, "revisit_duplicates"),
        (
            "store every page's payload whole, even one this crawl already stored under another URL (by "
            "default such a page is a WARC revisit record naming the first URL)"
        ),
        group="output and durability",
    )
    max_redirects: int = setting(
        _default(RecordRules, "max_redirects"),
        "redirect hops followed from one URL; more ends as an error with the chain",
        group="fetching and bounds",
    )
    max_path_depth: int = setting(
        _default(TrapRules, "max_path_depth"),
        "URLs with more path segments are rejected as a likely trap",
        group="fetching and bounds",
        at_least=1,
    )
    max_repeated_segments: int = setting(
        _default(TrapRules, "max_repeated_segments"),
        "a path segment repeated more times in a row is rejected as a trap",
        group="fetching and bounds",
        at_least=1,
    )
    max_outlinks: int = setting(
        _default(FetchSettings, "max_outlinks"),
        "links taken from one page",
        group="fetching and bounds",
        at_least=1,
    )
    max_pages_per_host: int | None = setting(
        _default(FrontierSettings, "max_pages_per_host"),
        (
            "URLs admitted per host; further ones are held for a --resume with a larger budget (--leftovers "
            "record: recorded out_of_budget)"
        ),
        group="scope and limits",
        at_least=1,
    )
    leftovers: Leftovers = setting(
        _default(LoopSettings, "leftovers"),
        (
            "what a --max-pages/--time-limit stop does with queued URLs: keep them for --resume, or record "
            "each as out_of_budget (final)"
        ),
        group="scope and limits",
    )
    max_attempts: int = setting(
        _default(FrontierSettings, "max_attempts"),
        "attempts per URL for transient failures",
        group="fetching and bounds",
        at_least=1,
    )
    max_queue_per_host: int = setting(
        _default(FrontierSettings, "max_queue_per_host"),
        "queued URLs per host before new ones are shed as out_of_budget",
        group="fetching and bounds",
        at_least=1,
    )
    max_queue_total: int = setting(
        _default(FrontierSettings, "max_queue_total"),
        "with --workbench 0: queued URLs per shard before new ones are shed as out_of_budget",
        group="fetching and bounds",
        at_least=1,
    )
    workbench: int = setting(
        _default(FrontierSettings, "workbench"),
        ("queued URLs per host a shard keeps in memory; the rest wait on its node's disk (0: all in memory)"),
        group="fetching and bounds",
    )
    frontier_dir: str = setting(
        "",
        "where shards keep queued URLs on their node's disk (default: the system's temporary directory)",
        group="fetching and bounds",
    )
    lease_horizon: float = setting(
        _default(LoopSettings, "lease_horizon"),
        "how far ahead (s) a URL may be leased before its host is due",
        group="cluster",
        unit="seconds",
    )
    run_length: int = setting(
        _default(FrontierSettings, "run_length"),
        ("URLs of a due host leased at once and sent one after another by one fetch task (1: one at a time)"),
        group="cluster",
    )
    robots_ttl: float = setting(
        _default(FrontierSettings, "robots_ttl"), "seconds a robots.txt is cached", group="politeness", unit="seconds"
    )
    sitemaps: bool = setting(
        _default(FrontierSettings, "sitemaps"),
        "read no sitemaps (robots.txt Sitemap: lines, their indexes and files)",
        group="scope and limits",
    )
    sitemap_xml: bool = setting(
        _default(FrontierSettings, "sitemap_xml"),
        "also try /sitemap.xml on every host (robots.txt need not name it)",
        group="scope and limits",
    )
    max_sitemaps_per_host: int = setting(
        _default(FrontierSettings, "max_sitemaps_per_host"),
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
    # A continuous crawl (core/revisit_schedule.py): every page kept is due again after an interval
    revisit: bool = setting(
        _default(RevisitPolicy, "revisit"),
        (
            "crawl continuously: every page kept is fetched again (conditionally) when due, and the crawl "
            "does not end when its frontier is empty (--time-limit, Ctrl-C or stop end a run; --resume goes "
            "on)"
        ),
        group="continuous crawling",
    )
    revisit_schedule: ScheduleKind = setting(
        _default(RevisitPolicy, "revisit_schedule"),
        (
            "adaptive: shorter after a change, longer after none (within --revisit-min/--revisit-max); "
            "fixed: every --revisit-after"
        ),
        group="continuous crawling",
    )
    revisit_after: float = setting(
        _default(RevisitPolicy, "revisit_after"),
        "a page's first interval (adaptive) or every interval (fixed): 90s, 10m, 6h, 7d",
        group="continuous crawling",
        unit="duration",
        metavar="DURATION",
    )
    revisit_min: float = setting(
        _default(RevisitPolicy, "revisit_min"),
        "shortest adaptive interval",
        group="continuous crawling",
        unit="duration",
        metavar="DURATION",
    )
    revisit_max: float = setting(
        _default(RevisitPolicy, "revisit_max"),
        "longest adaptive interval",
        group="continuous crawling",
        unit="duration",
        metavar="DURATION",
    )
    revisit_rules: tuple[str, ...] = setting(
        (),
        "a fixed interval for the URLs matching the regular expression PATTERN, e.g. /news/=1h",
        group="continuous crawling",
        metavar="PATTERN=DURATION",
    )  # PATTERN=DURATION: a fixed interval for the URLs it matches
    rollover: float | None = setting(
        _default(LoopSettings, "rollover"),
        ("output parts by period: pages/PERIOD/ and warc/PERIOD/, a checkpoint as each period ends (1d, 6h)"),
        group="output and durability",
        unit="duration",
        metavar="DURATION",
    )  # output parts by period (core/rollover.py)
    # the seen-set forgets a URL after this (core/seen_expiry.py); None: never, or with revisit 2 x revisit_max
    seen_ttl: float | None = setting(
        None,
        (
            "the seen-set forgets a URL after this long: a link to it found later queues it again (default: "
            "never; with --revisit, twice --revisit-max)"
        ),
        group="continuous crawling",
        unit="duration",
        metavar="DURATION",
        default_text="never; with --revisit, twice --revisit-max",
    )
    # one politeness budget per host with every crawl that names the same: "cluster" (the Ray cluster's registry
    # actor) or a redis:// URL (core/host_budget.py); None: this crawl's own clocks only
    shared_politeness: str | None = setting(
        None,
        (
            "share one politeness budget per host with every crawl that names the same: cluster (this Ray "
            "cluster's registry) or redis://... (with crawls anywhere, and other tools)"
        ),
        group="politeness",
        metavar="cluster|URL",
        resume="per_run",
    )
    # Egress through proxies (core/proxy_routes.py): the default pool, a pool file, and per-host rules
    proxy: tuple[str, ...] = setting(
        (),
        "send requests through this proxy: http, https, socks5; a password as ${VAR} (repeatable: a pool)",
        group="proxies",
        metavar="URL",
    )  # proxy URLs; a password as ${VARIABLE}, from the environment
    proxy_file: str | None = setting(
        None, "a pool of proxies, one URL a line (added to --proxy's)", group="proxies", metavar="FILE"
    )  # one proxy URL a line (read where the crawl starts)
    proxy_rules: tuple[str, ...] = setting(
        (),
        "per-host egress, HOST_PATTERN=none|pool|PROXY_URL ... (repeatable; first match wins)",
        group="proxies",
        metavar="HOST_PATTERN=TARGET",
    )  # HOST_PATTERN=none|pool|PROXY_URL [PROXY_URL ...], first match wins
    proxy_cooldown: float = setting(
        60.0,
        "a proxy that fails 3 times in a row rests this long, doubling each time",
        group="proxies",
        unit="duration",
        metavar="DURATION",
    )  # a proxy failing 3 times in a row rests this long (doubling each time)
    # Pages that need a browser (core/render_rules.py, core/render_jobs.py): which, and the render pool
    render: RenderMode = setting(
        "never",
        "hand pages to headless Chromium: never, always, or auto (those that look like a script's shell)",
        group="rendering",
    )
    render_rules: tuple[str, ...] = setting(
        (),
        "per-URL rendering, URL_PATTERN=always|never|auto (repeatable; first match wins)",
        group="rendering",
        metavar="URL_PATTERN=MODE",
    )  # URL_PATTERN=always|never|auto, first match wins
    render_workers: int = setting(
        _default(RenderSettings, "render_workers"),
        "render actors at the fewest, a browser each (on nodes with a 'browser' resource if any)",
        group="rendering",
    )
    render_workers_max: int = setting(
        _default(RenderSettings, "render_workers_max"),
        "the most render actors: the pool grows to this with its queue (0: render_workers)",
        group="rendering",
    )
    render_pages: int = setting(
        _default(RenderSettings, "render_pages"), "pages each render actor renders at once", group="rendering"
    )
    render_timeout: float = setting(
        _default(RenderSettings, "render_timeout"),
        "a page's load and settle, its scripts' requests included, end by this",
        group="rendering",
        unit="duration",
        metavar="DURATION",
    )
    render_settle: float = setting(
        _default(RenderSettings, "render_settle"),
        "this long with no request in flight counts as settled",
        group="rendering",
        unit="duration",
        metavar="DURATION",
    )
    render_max_requests: int = setting(
        _default(RenderSettings, "render_max_requests"),
        "requests a rendered page's scripts may make (the rest refused, counted)",
        group="rendering",
        at_least=0,
    )
    render_restart_pages: int = setting(
        _default(RenderSettings, "render_restart_pages"),
        "a browser is replaced after this many pages",
        group="rendering",
    )
    render_max_memory_mb: int = setting(
        _default(RenderSettings, "render_max_memory_mb"),
        "... or when its processes hold more than this",
        group="rendering",
        metavar="MB",
    )
    render_browser: str = setting(
        _default(RenderSettings, "render_browser"),
        "Chromium's executable (default: the system's, apt-get install chromium)",
        group="rendering",
        metavar="PATH",
    )
    render_screenshots: bool = setting(
        _default(RenderSettings, "render_screenshots"),
        "a PNG of each rendered page, in the WARC as a resource record",
        group="rendering",
    )
    # Pages into data (issue 47): an extractor where pages are fetched, a content contract, items exactly once.
    # extract and accept: builtin:NAME or module:function (from Python, the function itself, shipped by Ray)
    extract: str | None = setting(
        None,
        (
            "make items of pages where they are fetched: builtin:article (title, text, markdown, author, "
            "date ...), builtin:meta (title, description, canonical, hreflang, OpenGraph, JSON-LD), or "
            "module:function (extract(page) -> dict | None, importable on the workers); items go to "
            "OUT/items/ (raycrawl.read_items)"
        ),
        group="pages into data",
        metavar="SPEC",
        spec=True,
        toml=("extract", "function"),
    )
    extract_fields: tuple[str, ...] = setting(
        (),
        (
            "an item field from a CSS selector, NAME=css:SELECTOR[::text|::attr(NAME)] or NAME=css-all:... "
            "(a list of every match)"
        ),
        group="pages into data",
        metavar="NAME=css:SELECTOR",
        toml=("extract", "fields"),
    )  # NAME=css:SELECTOR[::text|::attr(NAME)], the TOML [extract.fields]
    extract_timeout: float = setting(
        _default(ExtractSettings, "extract_timeout"),
        "a page's extraction that runs longer is stopped and the page quarantined",
        group="pages into data",
        unit="seconds",
        toml=("extract", "timeout"),
    )
    schema_version: str = setting(
        _default(ExtractSettings, "schema_version"),
        "the items' schema version, a column of every item (yours to set)",
        group="pages into data",
        metavar="VERSION",
        toml=("extract", "schema_version"),
    )
    require: tuple[str, ...] = setting(
        (),
        "the contract: an accepted item has this field, not empty (else the page is rejected)",
        group="pages into data",
        metavar="FIELD",
        toml=("accept", "require"),
    )  # the contract (core/contract.py): fields an accepted item has, not empty
    min_chars: tuple[str, ...] = setting(
        (),
        "the contract: FIELD=N, an accepted item's text field has at least N characters",
        group="pages into data",
        metavar="FIELD=N",
        toml=("accept", "min_chars"),
    )  # FIELD=N: a text field's least length
    languages: tuple[str, ...] = setting(
        (),
        "the contract: an accepted item's language is one of these (comma-separated, e.g. en,de)",
        group="pages into data",
        metavar="LANGS",
        toml=("accept", "languages"),
    )  # the item's language's primary subtag, one of these
    content_types: tuple[str, ...] = setting(
        (),
        "the contract: an accepted page's media type is one of these (e.g. text/html)",
        group="pages into data",
        metavar="TYPES",
        toml=("accept", "content_types"),
    )  # the page's media type, one of these
    accept: str | None = setting(
        None,
        "the contract: module:function, accept(page, item) -> True or a reason to reject",
        group="pages into data",
        metavar="module:function",
        spec=True,
        toml=("accept", "function"),
    )  # accept(page, item) -> True | "reason"
    # Focused crawls (issue 48): score_links(page, item) -> float | {link URL: float}, added to the links' scores
    score_links: str | None = setting(
        None,
        (
            "a focused crawl: module:function, score_links(page, item) -> a number for all of the page's "
            "links or {link URL: number}; added to the links' scores (one unit is one level of depth), "
            "higher first"
        ),
        group="pages into data",
        metavar="module:function",
        spec=True,
        toml=("extract", "score_links"),
    )
    follow_rejected: bool = setting(
        _default(RecordRules, "follow_rejected"),
        "follow the links of pages the contract rejected (by default they are not followed)",
        group="pages into data",
    )
    max_accepted: int | None = setting(
        None,
        "stop after this many pages were accepted (a limit: --resume with a larger one goes on)",
        group="pages into data",
    )
    max_accepted_per_host: int | None = setting(
        _default(FrontierSettings, "max_accepted_per_host"),
        (
            "pages accepted per host; its further URLs are held for a --resume with a larger budget "
            "(--leftovers record: recorded out_of_budget)"
        ),
        group="pages into data",
    )
    warc: bool = setting(True, "write no WARC files", group="output and durability")
    checkpoint_interval: float = setting(
        _default(LoopSettings, "checkpoint_interval"),
        "seconds between checkpoints",
        group="output and durability",
        unit="seconds",
    )
    stats_interval: float = setting(
        5.0,
        "seconds between two writes of stats.json (and of the Prometheus gauges)",
        group="output and durability",
        unit="seconds",
        at_least=0.5,
    )
    redis_url: str | None = setting(
        None,
        "keep checkpoints in Redis (redis://[:password@]host:port/db)",
        group="output and durability",
        metavar="URL",
        default_text="none: OUT/checkpoints",
        resume="per_run",
    )
    crawl_id: str | None = setting(
        None,
        "name of the crawl in the checkpoint store",
        group="output and durability",
        metavar="NAME",
        default_text="the --out directory's name",
        resume="per_run",
    )
    resume: bool = setting(
        False, "continue the crawl from its last checkpoint", group="output and durability", resume="per_run"
    )
    retry_errors: bool = setting(
        False,
        ("with --resume: crawl again the URLs whose records ended in error (their new records replace the old ones)"),
        group="output and durability",
        resume="per_run",
    )  # with resume: URLs whose records ended in error are crawled again
    retry_budget: bool = setting(
        False,
        "with --retry-errors: the URLs that ended out_of_budget too",
        group="output and durability",
        resume="per_run",
    )  # ... and those that ended out_of_budget
    retry_quarantined: bool = setting(
        False,
        (
            "with --resume: fetch and extract again the pages whose extraction was quarantined (after you "
            "fixed the cause); their new records and items replace the old ones"
        ),
        group="output and durability",
        resume="per_run",
    )  # with resume: pages whose extraction was quarantined are fetched again
    strict: bool = setting(False, "a malformed seed is an error instead of a warning", group="scope and limits")
    fresh: bool = setting(
        False, "replace an earlier crawl's output in --out", group="output and durability", resume="per_run"
    )
    quiet: bool = setting(False, "no progress bar or progress lines", group="output and durability", resume="per_run")
    max_part_bytes: int = setting(
        _default(LoopSettings, "max_part_bytes"),
        "a WARC or pages part is closed and stored when its buffer passes this size",
        group="output and durability",
    )
    # Python only (as Ray Data's ``filesystem=``): a pyarrow.fs or fsspec filesystem that ``out`` is a path in.
    filesystem: Any = setting(None, resume="per_run", python_only=True, compare=False, repr=False)
    # Python only: score(url, depth) -> float, higher first, instead of -depth (shipped to the shards by Ray).
    score: Any = setting(None, resume="per_run", python_only=True, compare=False, repr=False)
    # Made where the crawl starts, never given (raycrawl/proxies.py): the proxies with their credentials.
    egress: Any = setting(None, resume="per_run", python_only=True, compare=False, repr=False)

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):  # a list where a tuple is declared is what a notebook user writes
            if isinstance(getattr(self, f.name), list):
                object.__setattr__(self, f.name, tuple(getattr(self, f.name)))
        for name in DURATIONS:  # ("7d" from Python, as on the command line)
            value = getattr(self, name)
            if isinstance(value, str):
                object.__setattr__(self, name, _duration(name, value))
        _validate(self)

    def replace(self, **changes: Any) -> CrawlConfig:
        return dataclasses.replace(self, **changes)

    @property
    def seen_expiry(self) -> float | None:
        """How long the seen-set keeps a URL: --seen-ttl, or in a continuous crawl twice --revisit-max (a URL that
        left the schedule -- gone, an error -- may come back through a link then); None: for ever."""
        if self.seen_ttl is not None:
            return self.seen_ttl
        return 2 * self.revisit_max if self.revisit else None

    @property
    def extracting(self) -> bool:
        return self.extract is not None or bool(self.extract_fields)

    def extract_settings(self) -> ExtractSettings | None:
        """What the fetch workers extract with (None: no extractor)."""
        if not self.extracting:
            return None
        contract = ContentContract.of(self.require, self.min_chars, self.languages, self.content_types)
        return ExtractSettings(
            self.extract,
            self.extract_fields,
            self.accept,
            contract,
            self.extract_timeout,
            self.schema_version,
            self.score_links,
        )

    def resolve_map(self) -> dict[str, str]:
        """``--resolve HOST=IP`` entries as a mapping (like curl's --resolve, without the port)."""
        return dict(entry.split("=", 1) for entry in self.resolve)


# Upper bounds of settings whose values load but would fail later, on every worker (OverflowError, an allocation no
# machine has, a timer no event loop takes): refused when the config is loaded, with one line.
MAX_ACTORS = 1024  # shards, and seen-set partitions: an actor each
MAX_BLOOM_CAPACITY = 10**11  # ~120 GB of bits at a 1% error rate
MAX_FETCH_SECONDS = 86_400.0
MAX_BODY_BYTES = 1 << 30  # a body is held in memory, decoded, by the fetch worker
MAX_NUMBER = 1e12  # any other number (in seconds, ~31,700 years: what a timer may still take)


def _validate(cfg: CrawlConfig) -> None:
    def need(ok: bool, key: str, expected: str) -> None:
        if not ok:
            raise ConfigError(f"{key} = {getattr(cfg, key)!r}: expected {expected}", key)

    for f in dataclasses.fields(cfg):  # from Python nothing has coerced the values: their types first
        if f.name in PYTHON_ONLY or (f.name in CALLABLE_OR_SPEC and callable(getattr(cfg, f.name))):
            continue
        value = getattr(cfg, f.name)
        if not _has_type(value, FIELD_TYPES[f.name]):
            listed = typing.get_origin(FIELD_TYPES[f.name]) is tuple and isinstance(value, str)
            hint = f" (a list of strings, not one string: {f.name}=({value!r},))" if listed else ""
            raise ConfigError(f"{f.name} = {value!r}: expected {_describe(FIELD_TYPES[f.name])}{hint}", f.name)

    for key in ("max_pages", "max_depth"):
        value = getattr(cfg, key)
        need(value is None or value >= 0, key, "a whole number >= 0")
    need(cfg.time_limit is None or cfg.time_limit > 0, "time_limit", "seconds > 0")
    need(cfg.scope in ("host", "domain", "any"), "scope", "one of host, domain, any")
    need(cfg.dedup in ("exact", "bloom"), "dedup", "one of exact, bloom")
    need(math.isfinite(cfg.delay) and cfg.delay >= 0, "delay", "seconds >= 0")
    need(math.isfinite(cfg.delay_factor) and cfg.delay_factor >= 0, "delay_factor", "a factor >= 0 (0: off)")
    need(cfg.max_delay >= max(cfg.min_delay, cfg.delay), "max_delay", "seconds >= delay and >= min_delay")
    need(cfg.crawl_delay_policy in ("cap", "skip"), "crawl_delay_policy", "one of cap, skip")
    need(cfg.leftovers in ("keep", "record"), "leftovers", "one of keep, record")
    need(cfg.backoff_base > 0, "backoff_base", "seconds > 0")
    need(cfg.max_backoff >= cfg.backoff_base, "max_backoff", "seconds >= backoff_base")
    need(cfg.pause_after >= 0, "pause_after", "a whole number >= 0 (0: never pause)")
    need(cfg.shards is None or 1 <= cfg.shards <= MAX_ACTORS, "shards", f"a whole number from 1 to {MAX_ACTORS}")
    need(
        cfg.dedup_partitions is None or 1 <= cfg.dedup_partitions <= MAX_ACTORS,
        "dedup_partitions",
        f"1 to {MAX_ACTORS}",
    )
    need(
        1000 <= cfg.bloom_capacity <= MAX_BLOOM_CAPACITY,
        "bloom_capacity",
        f"a whole number from 1000 to {MAX_BLOOM_CAPACITY:.0e}",
    )
    need(0 < cfg.bloom_error_rate < 0.5, "bloom_error_rate", "a fraction between 0 and 0.5")
    need(
        cfg.user_agent.isprintable() and product_token(cfg.user_agent) is not None,
        "user_agent",
        "one printable line naming the crawler's product token, e.g. 'examplebot/1.0 (+https://example.com/bot)'",
    )
    need(0 < cfg.fetch_task_cpus <= 64, "fetch_task_cpus", "CPUs per fetch task, > 0")
    need(0 < cfg.timeout <= MAX_FETCH_SECONDS, "timeout", f"seconds > 0, at most {MAX_FETCH_SECONDS}")
    need(0 < cfg.fetch_deadline <= MAX_FETCH_SECONDS, "fetch_deadline", f"seconds > 0, at most {MAX_FETCH_SECONDS}")
    need(1024 <= cfg.max_body_bytes <= MAX_BODY_BYTES, "max_body_bytes", f"bytes from 1024 to {MAX_BODY_BYTES:,}")
    need(0 <= cfg.max_redirects <= 100, "max_redirects", "a whole number between 0 and 100")
    need(cfg.workbench == 0 or cfg.workbench >= 2, "workbench", "0 (all in memory) or a whole number >= 2")
    need(0 <= cfg.lease_horizon <= 10, "lease_horizon", "seconds between 0 and 10")
    need(1 <= cfg.run_length <= 256, "run_length", "a whole number between 1 and 256")
    need(cfg.robots_ttl > 0, "robots_ttl", "seconds > 0")
    need(cfg.score is None or callable(cfg.score), "score", "a function score(url, depth) -> float, or None")
    for rule in cfg.priority:
        try:
            parse_rule(rule)
        except ValueError as exc:
            raise ConfigError(f"priority: {exc}", "priority") from None
    for name in DURATIONS:
        value = getattr(cfg, name)
        need(value is None or (isinstance(value, int | float) and math.isfinite(value)), name, "a duration")
    need(cfg.revisit_min > 0, "revisit_min", "a duration > 0, e.g. 90s, 10m, 6h, 7d")
    need(cfg.revisit_max >= cfg.revisit_min, "revisit_max", f"a duration >= revisit_min ({cfg.revisit_min:g} s)")
    need(cfg.revisit_after > 0, "revisit_after", "a duration > 0, e.g. 7d")
    need(cfg.rollover is None or cfg.rollover >= 1, "rollover", "a duration of at least 1s, e.g. 1d or 6h")
    need(cfg.seen_ttl is None or cfg.seen_ttl >= 1, "seen_ttl", "a duration of at least 1s, e.g. 60d")
    shared = cfg.shared_politeness
    if shared is not None and shared != "cluster":  # (the URL may hold a password: messages show it redacted)
        if not shared.startswith(("redis://", "rediss://", "unix://")):
            raise ConfigError(
                "shared_politeness: expected cluster (the Ray cluster's registry) or a redis:// URL",
                "shared_politeness",
            )
        problem = redis_url_problem(shared)
        if problem is not None:
            raise ConfigError(f"shared_politeness: {problem}", "shared_politeness")
    if cfg.redis_url:
        problem = redis_url_problem(cfg.redis_url)
        if problem is not None:
            raise ConfigError(f"redis_url: {problem}", "redis_url")
    for url in cfg.proxy:
        problem = check_proxy_url(url)
        if problem is not None:  # (the message shows the URL redacted: never ``need``'s value as given)
            raise ConfigError(f"proxy: {problem}", "proxy")
    for rule in cfg.proxy_rules:
        try:
            parse_proxy_rule(rule)
        except ValueError as exc:
            raise ConfigError(f"proxy_rules: {exc}", "proxy_rules") from None
    need(cfg.proxy_cooldown >= 1, "proxy_cooldown", "a duration of at least 1s, e.g. 60s or 10m")
    for rule in cfg.render_rules:
        try:
            parse_render_rule(rule)
        except ValueError as exc:
            raise ConfigError(f"render_rules: {exc}", "render_rules") from None
    for name in ("render_workers", "render_pages", "render_restart_pages"):
        need(getattr(cfg, name) >= 1, name, "a whole number >= 1")
    need(cfg.render_workers_max == 0 or cfg.render_workers_max >= cfg.render_workers, "render_workers_max",
         "0 (a pool of render_workers) or a whole number >= render_workers")  # fmt: skip
    need(cfg.render_max_memory_mb >= 64, "render_max_memory_mb", "megabytes >= 64")
    need(cfg.render_timeout >= 1, "render_timeout", "a duration of at least 1s, e.g. 20s")
    need(0 <= cfg.render_settle < cfg.render_timeout, "render_settle", "a duration shorter than render_timeout")
    for rule in cfg.revisit_rules:
        try:
            _, seconds = parse_revisit_rule(rule)
        except ValueError as exc:
            raise ConfigError(f"revisit_rules: {exc}", "revisit_rules") from None
        need(seconds > 0, "revisit_rules", f"{rule!r}: an interval > 0")
    _validate_extraction(cfg)
    need(cfg.checkpoint_interval >= 0, "checkpoint_interval", "seconds >= 0 (0: only at the end and on a stop)")
    need(cfg.max_part_bytes >= 1 << 20, "max_part_bytes", "bytes >= 1048576 (1 MiB)")
    need(bool(cfg.out.strip()), "out", "a directory or a URI such as s3://bucket/prefix")
    need(cfg.recrawl is None or bool(cfg.recrawl.strip()), "recrawl", "an earlier crawl's --out: a directory or URI")
    need(
        cfg.recrawl is None or cfg.recrawl.rstrip("/") != cfg.out.rstrip("/"), "recrawl", "another --out than this one"
    )
    need(not (cfg.resume and cfg.fresh), "resume", "not both --resume and --fresh")
    need(cfg.resume or not cfg.retry_errors, "retry_errors", "with --resume (it retries a crawl's dead letters)")
    need(cfg.retry_errors or not cfg.retry_budget, "retry_budget", "with --retry-errors")
    need(cfg.resume or not cfg.retry_quarantined, "retry_quarantined", "with --resume (it retries quarantined pages)")

    need(
        cfg.crawl_id is None or bool(re.fullmatch(r"[A-Za-z0-9._-]{1,128}", cfg.crawl_id)),
        "crawl_id",
        "1-128 characters from A-Z a-z 0-9 . _ -",
    )
    for key in ("allow", "deny"):
        for pattern in getattr(cfg, key):
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ConfigError(f"{key}: {pattern!r} is not a valid regular expression ({exc})", key) from None
    for cidr in cfg.allow_network:
        try:
            ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            message = f"allow_network: {cidr!r}: expected a CIDR such as 127.0.0.0/8"
            raise ConfigError(message, "allow_network") from None
    for entry in cfg.resolve:
        host, sep, addr = entry.partition("=")
        if not sep or not host or not is_ip_literal(addr):
            raise ConfigError(f"resolve: {entry!r}: expected HOST=IP, e.g. example.test=127.0.0.2", "resolve")
    for f in dataclasses.fields(cfg):  # (last: the bounds above say more where a setting has its own)
        value = getattr(cfg, f.name)
        if isinstance(value, int | float) and not isinstance(value, bool) and f.name not in PYTHON_ONLY:
            need(math.isfinite(value) and abs(value) <= MAX_NUMBER, f.name, f"a finite number up to {MAX_NUMBER:.0e}")
            info = SETTINGS[f.name]
            if info.at_least is not None:  # (the least value its description gives)
                what = (
                    "seconds" if info.unit == "seconds" else "a whole number" if isinstance(value, int) else "a number"
                )
                need(value >= info.at_least, f.name, f"{what} >= {info.at_least:g}")


def _validate_functions(cfg: CrawlConfig) -> None:
    """``accept`` and ``score_links``: a module:function that imports here, or a function from Python."""
    for key in ("accept", "score_links"):
        spec = getattr(cfg, key)
        if isinstance(spec, str):
            try:
                load_function(spec)
            except ValueError as exc:
                raise ConfigError(f"{key}: {exc}", key) from None
        elif spec is not None and not callable(spec):
            raise ConfigError(f"{key} = {spec!r}: expected module:function, or a function from Python", key)


def _validate_extraction(cfg: CrawlConfig) -> None:
    """The extraction settings (issue 47): a spec is imported here, where the crawl starts, so that one that does
    not import is one line now rather than every worker's failure."""
    try:
        fields = field_table(cfg.extract_fields)
        ContentContract.of(cfg.require, cfg.min_chars, cfg.languages, cfg.content_types)
    except ValueError as exc:
        key = "min_chars" if str(exc).startswith("min_chars") else "extract_fields"
        raise ConfigError(str(exc), key) from None
    if cfg.extracting:
        problem = extraction_problem(cfg.extract, fields)
        if problem is not None:
            raise ConfigError(f"extract: {problem}" if not problem.startswith("extract") else problem, "extract")
    _validate_functions(cfg)
    contract_named = cfg.require or cfg.min_chars or cfg.languages or cfg.content_types or cfg.accept
    budgets = cfg.max_accepted is not None or cfg.max_accepted_per_host is not None
    later = cfg.follow_rejected or cfg.retry_quarantined or cfg.score_links is not None
    if (contract_named or budgets or later) and not cfg.extracting:
        raise ConfigError(
            "a content contract, --max-accepted, --follow-rejected and --score-links need an extractor: --extract"
            " builtin:meta, builtin:article, module:function, or [extract.fields]",
            "extract",
        )
    if not (0 < cfg.extract_timeout <= MAX_FETCH_SECONDS):
        raise ConfigError(f"extract_timeout = {cfg.extract_timeout!r}: expected seconds > 0", "extract_timeout")
    for key in ("max_accepted", "max_accepted_per_host"):
        value = getattr(cfg, key)
        if value is not None and value < 1:
            raise ConfigError(f"{key} = {value!r}: expected a whole number >= 1", key)
    if not re.fullmatch(r"[A-Za-z0-9._+-]{1,64}", cfg.schema_version):
        raise ConfigError(f"schema_version = {cfg.schema_version!r}: expected 1-64 of A-Z a-z 0-9 . _ + -",
                          "schema_version")  # fmt: skip


# ---------------------------------------------------------------------------------------------------------
# Loading


def _field_types() -> dict[str, Any]:
    hints = typing.get_type_hints(CrawlConfig)
    return {f.name: hints[f.name] for f in dataclasses.fields(CrawlConfig) if f.name not in PYTHON_ONLY}


# Settings that are durations: seconds, or 90s, 10m, 6h, 7d
# What each setting is, from its field; and the tables made from that.
SETTINGS: dict[str, Setting] = {f.name: f.metadata["setting"] for f in dataclasses.fields(CrawlConfig)}
DURATIONS = frozenset(name for name, info in SETTINGS.items() if info.unit == "duration")
CALLABLE_OR_SPEC = frozenset(name for name, info in SETTINGS.items() if info.spec)
PYTHON_ONLY = frozenset(name for name, info in SETTINGS.items() if info.python_only)
FIELD_TYPES = _field_types()


def _describe(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is Literal:
        return "one of " + ", ".join(map(str, typing.get_args(tp)))
    if origin in (types.UnionType, typing.Union):
        inner = [a for a in typing.get_args(tp) if a is not type(None)]
        return _describe(inner[0]) + " (or empty for none)"
    if origin is tuple:
        return "a list of strings"
    return {int: "a whole number", float: "a number", bool: "true or false", str: "a string"}.get(tp, str(tp))


def coerce(key: str, raw: Any, tp: Any | None = None) -> Any:
    """Turn a TOML value or an environment/CLI string into the field's type, or raise ConfigError naming key."""
    tp = FIELD_TYPES[key] if tp is None else tp
    if key in DURATIONS and isinstance(raw, str) and raw.strip().lower() not in ("", "none"):
        return _duration(key, raw)
    origin = typing.get_origin(tp)
    try:
        if origin in (types.UnionType, typing.Union):
            if raw is None or (isinstance(raw, str) and raw.strip().lower() in ("", "none")):
                return None
            inner = next(a for a in typing.get_args(tp) if a is not type(None))
            return coerce(key, raw, inner)
        if origin is Literal:
            if raw not in typing.get_args(tp):
                raise ValueError
            return raw
        if origin is tuple:
            if isinstance(raw, str):
                return tuple(part.strip() for part in raw.split(",") if part.strip())
            if isinstance(raw, list | tuple) and all(isinstance(x, str) for x in raw):
                return tuple(raw)
            raise ValueError
        if tp is bool:
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text in ("1", "true", "yes", "on"):
                return True
            if text in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if tp is int:
            if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
                raise ValueError
            return int(str(raw).replace("_", "")) if isinstance(raw, str) else int(raw)
        if tp is float:
            if isinstance(raw, bool):
                raise ValueError
            value = float(raw)
            if not math.isfinite(value):
                raise ValueError
            return value
        if tp is str:
            if not isinstance(raw, str):
                raise ValueError
            return raw
    except (ValueError, TypeError, StopIteration):
        pass
    else:
        raise ConfigError(f"{key}: unsupported type {tp}", key)
    raise ConfigError(f"{key} = {raw!r}: expected {_describe(tp)}", key)


def _has_type(value: Any, tp: Any) -> bool:
    """Does ``value`` have the field type ``tp`` (as the dataclass declares it)?"""
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        return value is None or any(_has_type(value, a) for a in typing.get_args(tp) if a is not type(None))
    if origin is Literal:
        return value in typing.get_args(tp)
    if origin is tuple:
        return isinstance(value, tuple) and all(isinstance(x, str) for x in value)
    if tp is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, tp)


def _normalise_key(key: str, source: str) -> str:
    name = key.replace("-", "_").lower()
    if name not in FIELD_TYPES:
        close = difflib.get_close_matches(name, list(FIELD_TYPES), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"{source}: unknown setting {key!r}{hint}")
    return name


def read_toml(path: str | os.PathLike[str], sources: dict[str, str] | None = None) -> dict[str, Any]:
    """Settings from a TOML file: top-level keys, or a ``[crawl]`` table. ``sources`` learns where each was."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except FileNotFoundError:
        raise ConfigError(f"config: {p} does not exist") from None
    except IsADirectoryError:
        raise ConfigError(f"config: {p} is a directory, not a TOML file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config: {p} is not valid TOML ({exc})") from None
    except OSError as exc:
        raise ConfigError(f"config: cannot read {p} ({exc.strerror})") from None
    if isinstance(data.get("crawl"), dict):
        data = data["crawl"]
    out: dict[str, Any] = {}
    for raw_key, value in data.items():
        key = _normalise_key(raw_key, str(p))
        where = f"{p}, line {_line_of(text, raw_key)}"
        if sources is not None:
            sources[key] = where
        if key == "priority" and isinstance(value, list) and all(isinstance(t, dict) for t in value):
            value = [_sourced(lambda table=table: _priority_rule(table), where) for table in value]
        if key == "revisit" and isinstance(value, list) and all(isinstance(t, dict) for t in value):
            # [[revisit]] tables: rules, and the crawl is a continuous one
            rules = [_sourced(lambda table=table: _revisit_rule(table), where) for table in value]
            out["revisit_rules"] = coerce("revisit_rules", rules)
            value = out.get("revisit", True)
        if key == "render" and isinstance(value, list) and all(isinstance(t, dict) for t in value):
            # [[render]] tables: per-pattern rules (the crawl's own mode is --render, or render_rules' catch-all)
            value = [_sourced(lambda table=table: _render_rule(table), where) for table in value]
            key = "render_rules"
            if sources is not None:
                sources[key] = where
        if key in ("extract", "accept") and isinstance(value, dict):
            # [extract] (function, fields, timeout, schema_version) and [accept] (function, require, min_chars,
            # languages, content_types): tables of settings under one name
            for name, inner in _sourced(lambda key=key, value=value: _table_settings(key, value), where).items():
                if sources is not None:
                    sources[name] = where
                out[name] = _sourced(lambda name=name, inner=inner: coerce(name, inner), where)
            continue
        if key == "proxy" and isinstance(value, list) and value and all(isinstance(t, dict) for t in value):
            # [[proxy]] tables: per-host rules (the default pool is --proxy, or a proxy = [...] list)
            rules = [_sourced(lambda table=table: _proxy_rule(table), where) for table in value]
            key = "proxy_rules"
            if sources is not None:
                sources[key] = where
            value = rules
        out[key] = _sourced(lambda key=key, value=value: coerce(key, value), where)
    return out


# The keys of the [extract] and [accept] tables, and the settings they are
# The keys of the TOML tables ([extract], [accept]) and the settings they are: the table's function first.
TABLE_KEYS: dict[str, dict[str, str]] = {}
_TABLED = [(info.toml, name) for name, info in SETTINGS.items() if info.toml is not None]
for (_table, _key), _name in sorted(_TABLED, key=lambda tabled: tabled[0][1] != "function"):  # (stable sort)
    TABLE_KEYS.setdefault(_table, {})[_key] = _name


def _table_settings(table_name: str, table: dict[str, Any]) -> dict[str, Any]:
    """An ``[extract]`` or ``[accept]`` table as the settings it holds: ``fields`` and ``min_chars`` are tables of
    NAME = value, made the entries (NAME=value) the other layers use."""
    keys = TABLE_KEYS[table_name]
    out: dict[str, Any] = {}
    for key, value in table.items():
        if key not in keys:
            raise ConfigError(f"[{table_name}]: unknown key {key!r} (expected {', '.join(keys)})", table_name)
        if isinstance(value, dict):
            if not all(isinstance(v, str | int) and not isinstance(v, bool) for v in value.values()):
                raise ConfigError(f"[{table_name}.{key}]: expected NAME = value entries", keys[key])
            value = [f"{name}={inner}" for name, inner in value.items()]
        out[keys[key]] = value
    return out


def _revisit_rule(table: dict[str, Any]) -> str:
    """A ``[[revisit]]`` table (``pattern = "..."``, ``every = "1h"``) as the rule text the other layers use."""
    pattern, every = table.get("pattern"), table.get("every")
    if not isinstance(pattern, str) or not isinstance(every, str | int | float) or set(table) - {"pattern", "every"}:
        raise ConfigError(f"revisit: {table!r}: expected a table with pattern (a regular expression) and every (a"
                          " duration such as 1h)", "revisit_rules")  # fmt: skip
    return f"{pattern}={every}"


def _render_rule(table: dict[str, Any]) -> str:
    """A ``[[render]]`` table (``pattern = "..."``, ``mode = "always" | "never" | "auto"``) as the rule text the other
    layers use."""
    pattern, mode = table.get("pattern"), table.get("mode")
    if not isinstance(pattern, str) or not isinstance(mode, str) or set(table) - {"pattern", "mode"}:
        raise ConfigError(f"render: {table!r}: expected a table with pattern (a regular expression) and mode (always,"
                          " never or auto)", "render_rules")  # fmt: skip
    return f"{pattern}={mode}"


def _proxy_rule(table: dict[str, Any]) -> str:
    """A ``[[proxy]]`` table (``pattern = "*.example.com"``, ``proxy = "none" | "pool" | URL | [URL, ...]``) as the
    rule text the other layers use."""
    pattern, proxy = table.get("pattern"), table.get("proxy")
    targets = [proxy] if isinstance(proxy, str) else proxy
    if (
        not isinstance(pattern, str) or not isinstance(targets, list) or not targets
        or not all(isinstance(t, str) for t in targets) or set(table) - {"pattern", "proxy"}
    ):  # fmt: skip
        raise ConfigError(f"proxy: {table!r}: expected a table with pattern (a host pattern such as *.example.com)"
                          " and proxy (none, pool, a proxy URL or a list of them)", "proxy_rules")  # fmt: skip
    return f"{pattern}={' '.join(targets)}"


def _duration(key: str, text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise ConfigError(f"{key}: {exc}", key) from None


def _priority_rule(table: dict[str, Any]) -> str:
    """A ``[[priority]]`` table (``pattern = "..."``, ``weight = 5``) as the rule text the other layers use."""
    pattern, weight = table.get("pattern"), table.get("weight")
    unknown = set(table) - {"pattern", "weight"}
    if not isinstance(pattern, str) or isinstance(weight, bool) or not isinstance(weight, int | float) or unknown:
        raise ConfigError(f"priority: {table!r}: expected a table with pattern (a string) and weight (a number)")
    return f"{pattern}={weight}"


def _line_of(text: str, key: str) -> int | str:
    """The line of a TOML file that sets ``key`` (the last one: TOML forbids two), for messages."""
    pattern = re.compile(rf"""^\s*["']?{re.escape(key)}["']?\s*=""")
    lines = [n for n, line in enumerate(text.splitlines(), 1) if pattern.match(line)]
    return lines[-1] if lines else "?"


def _sourced(make: Any, where: str) -> Any:
    """``make()``, with where the value came from added to a ConfigError it raises."""
    try:
        return make()
    except ConfigError as exc:
        raise ConfigError(f"{exc} (from {where})", exc.key) from None


def read_env(environ: Mapping[str, str], sources: dict[str, str] | None = None) -> dict[str, Any]:
    """Settings from ``RAYCRAWL_*`` variables; RAYCRAWL_CONFIG names the TOML file and is not a field."""
    out: dict[str, Any] = {}
    for name, raw in environ.items():
        if not name.startswith(ENV_PREFIX) or name == ENV_PREFIX + "CONFIG":
            continue
        key = _normalise_key(name[len(ENV_PREFIX) :], f"environment variable {name}")
        where = f"environment variable {name}"
        if sources is not None:
            sources[key] = where
        out[key] = _sourced(lambda key=key, raw=raw: coerce(key, raw), where)
    return out


def load_config(
    cli: Mapping[str, Any] | None = None,
    config_file: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> CrawlConfig:
    """Merge the four layers (defaults < TOML < environment < CLI) into one validated CrawlConfig.

    ``cli`` holds only the flags the user actually gave (None values are ignored), already typed or as strings.
    """
    return load_named_config(cli, config_file, environ)[0]


def load_named_config(
    cli: Mapping[str, Any] | None = None,
    config_file: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[CrawlConfig, frozenset[str]]:
    """``load_config``, and the names of the settings the user gave in some layer (what a resume overrides)."""
    environ = os.environ if environ is None else environ
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}  # setting -> where its value came from, for messages
    config_file = config_file or environ.get(ENV_PREFIX + "CONFIG")
    if config_file:
        merged.update(read_toml(config_file, sources))
    merged.update(read_env(environ, sources))
    for key, value in (cli or {}).items():
        if value is None:
            continue
        name = _normalise_key(key, "command line")
        where = "the command line" if name == "seeds" else f"--{name.replace('_', '-')} on the command line"
        sources[name] = where
        merged[name] = _sourced(lambda name=name, value=value: coerce(name, value), where)
    try:
        return CrawlConfig(**merged), frozenset(merged)
    except ConfigError as exc:
        if exc.key in sources:
            raise ConfigError(f"{exc} (from {sources[exc.key]})", exc.key) from None
        raise


# ---------------------------------------------------------------------------------------------------------
# A crawl's settings travel with its checkpoints

# Settings a running crawl cannot change: what was seen, queued or decided under them would no longer hold.
FIXED_ON_RESUME = frozenset(name for name, info in SETTINGS.items() if info.resume == "fixed")
# Settings that say how to run this command, not what the crawl is: never taken from a checkpoint.
PER_RUN = frozenset(name for name, info in SETTINGS.items() if info.resume == "per_run")


def saved_settings(cfg: CrawlConfig) -> dict[str, Any]:
    """The settings that make up the crawl, as JSON-ready values, for its checkpoints."""
    return {f.name: _plain(getattr(cfg, f.name)) for f in dataclasses.fields(cfg) if f.name not in PER_RUN}


PYTHON_FUNCTION = "python:"  # a saved extract/accept/score_links that was a function from Python: its name, after this


def _plain(value: Any) -> Any:
    if callable(value):  # (a function given from Python: its name is saved, the function is given again on resume)
        return PYTHON_FUNCTION + spec_name(value)
    return list(value) if isinstance(value, tuple) else value


def resumed_config(cfg: CrawlConfig, saved: Mapping[str, Any], named: Collection[str] | None) -> CrawlConfig:
    """The configuration of a resumed crawl: its saved settings, with what the user named this time on top.

    ``named``: the settings the user gave (flags, TOML, environment); None (the Python API) takes every field
    that differs from its default as named. A fixed setting (``FIXED_ON_RESUME``) named with another value than
    the saved one is refused.
    """
    defaults = CrawlConfig()
    if named is None:
        named = {f.name for f in dataclasses.fields(cfg) if getattr(cfg, f.name) != getattr(defaults, f.name)}
    merged: dict[str, Any] = {}
    for key, raw in saved.items():
        if key not in FIELD_TYPES or key in PER_RUN:
            continue  # (a setting this version does not know, from an older or newer raycrawl: skipped)
        value = coerce(key, raw)
        if key in CALLABLE_OR_SPEC and isinstance(value, str) and value.startswith(PYTHON_FUNCTION):
            if getattr(cfg, key) is None:
                name = value.removeprefix(PYTHON_FUNCTION)
                raise ConfigError(
                    f"{key}: this crawl ran with a Python function ({name}); give it again to resume, "
                    f"CrawlConfig({key}=...), or a module:function",
                    key,
                )
            continue  # the function given this time
        if key in named and getattr(cfg, key) != value:
            if key in FIXED_ON_RESUME:
                raise ConfigError(
                    f"{key} = {getattr(cfg, key)!r}: cannot change when resuming (the crawl runs with {value!r}); "
                    f"leave it out, or start a new crawl with --fresh"
                )
            continue  # the user's value
        merged[key] = value
    return dataclasses.replace(cfg, **merged)
