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
from raycrawl.core.frontier import FrontierSettings
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


def _default(section: type, name: str) -> Any:
    """A setting's default, from the section of settings that owns it (core/): each is defined once, there."""
    return section.__dataclass_fields__[name].default  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class CrawlConfig:
    """Everything a crawl needs to know; see the README's flag table for each field's meaning."""

    seeds: tuple[str, ...] = ()
    seeds_file: str | None = None
    recrawl: str | None = None  # an earlier crawl's output: its URLs are fetched again, conditionally
    out: str = "crawl-out"
    max_pages: int | None = None
    max_depth: int | None = _default(RecordRules, "max_depth")
    time_limit: float | None = None
    scope: Scope = "host"
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    tracking_params: tuple[str, ...] = _default(FetchSettings, "tracking_params")
    delay: float = _default(DelayPolicy, "delay")
    delay_factor: float = _default(DelayPolicy, "delay_factor")
    min_delay: float = _default(DelayPolicy, "min_delay")
    max_delay: float = _default(DelayPolicy, "max_delay")
    max_crawl_delay: float = _default(DelayPolicy, "max_crawl_delay")
    crawl_delay_policy: CrawlDelayPolicy = _default(FrontierSettings, "crawl_delay_policy")  # noqa: RUF009 (a str)
    max_retry_after: float = _default(DelayPolicy, "max_retry_after")
    backoff_base: float = _default(DelayPolicy, "backoff_base")
    max_backoff: float = _default(DelayPolicy, "max_backoff")
    pause_after: int = _default(FrontierSettings, "pause_after")
    per_host_concurrency: int = _default(FrontierSettings, "per_host_concurrency")
    shards: int | None = None
    dedup: DedupKind = "exact"
    dedup_partitions: int | None = None
    bloom_capacity: int = 10_000_000
    bloom_error_rate: float = 0.001
    user_agent: str = _default(FetchSettings, "user_agent")
    allow_private_networks: bool = _default(FetchSettings, "allow_private_networks")
    allow_network: tuple[str, ...] = _default(FetchSettings, "allow_network")
    resolve: tuple[str, ...] = ()
    ray_address: str | None = None
    fetch_batch_size: int = _default(LoopSettings, "fetch_batch_size")
    max_tasks_in_flight: int = _default(LoopSettings, "max_tasks_in_flight")
    fetch_task_cpus: float = 1.0  # (each task running at once is a worker process: fewer, fuller ones cost less CPU)
    timeout: float = _default(FetchSettings, "timeout")
    fetch_deadline: float = _default(FetchSettings, "fetch_deadline")
    max_body_bytes: int = _default(FetchSettings, "max_body_bytes")
    keep_truncated: bool = _default(FetchSettings, "keep_truncated")
    revisit_duplicates: bool = _default(FetchSettings, "revisit_duplicates")
    max_redirects: int = _default(RecordRules, "max_redirects")
    max_path_depth: int = _default(TrapRules, "max_path_depth")
    max_repeated_segments: int = _default(TrapRules, "max_repeated_segments")
    max_outlinks: int = _default(FetchSettings, "max_outlinks")
    max_pages_per_host: int | None = _default(FrontierSettings, "max_pages_per_host")
    leftovers: Leftovers = _default(LoopSettings, "leftovers")  # noqa: RUF009 (a str)
    max_attempts: int = _default(FrontierSettings, "max_attempts")
    max_queue_per_host: int = _default(FrontierSettings, "max_queue_per_host")
    max_queue_total: int = _default(FrontierSettings, "max_queue_total")
    workbench: int = _default(FrontierSettings, "workbench")
    frontier_dir: str = ""
    lease_horizon: float = _default(LoopSettings, "lease_horizon")
    run_length: int = _default(FrontierSettings, "run_length")
    robots_ttl: float = _default(FrontierSettings, "robots_ttl")
    sitemaps: bool = _default(FrontierSettings, "sitemaps")
    sitemap_xml: bool = _default(FrontierSettings, "sitemap_xml")
    max_sitemaps_per_host: int = _default(FrontierSettings, "max_sitemaps_per_host")
    priority: tuple[str, ...] = ()  # PATTERN=WEIGHT rules added to a URL's score (core/priority.py)
    # A continuous crawl (core/revisit_schedule.py): every page kept is due again after an interval
    revisit: bool = _default(RevisitPolicy, "revisit")
    revisit_schedule: ScheduleKind = _default(RevisitPolicy, "revisit_schedule")  # noqa: RUF009 (a str)
    revisit_after: float = _default(RevisitPolicy, "revisit_after")
    revisit_min: float = _default(RevisitPolicy, "revisit_min")
    revisit_max: float = _default(RevisitPolicy, "revisit_max")
    revisit_rules: tuple[str, ...] = ()  # PATTERN=DURATION: a fixed interval for the URLs it matches
    rollover: float | None = _default(LoopSettings, "rollover")  # output parts by period (core/rollover.py)
    # the seen-set forgets a URL after this (core/seen_expiry.py); None: never, or with revisit 2 x revisit_max
    seen_ttl: float | None = None
    # one politeness budget per host with every crawl that names the same: "cluster" (the Ray cluster's registry
    # actor) or a redis:// URL (core/host_budget.py); None: this crawl's own clocks only
    shared_politeness: str | None = None
    # Egress through proxies (core/proxy_routes.py): the default pool, a pool file, and per-host rules
    proxy: tuple[str, ...] = ()  # proxy URLs; a password as ${VARIABLE}, from the environment
    proxy_file: str | None = None  # one proxy URL a line (read where the crawl starts)
    proxy_rules: tuple[str, ...] = ()  # HOST_PATTERN=none|pool|PROXY_URL [PROXY_URL ...], first match wins
    proxy_cooldown: float = 60.0  # a proxy failing 3 times in a row rests this long (doubling each time)
    # Pages that need a browser (core/render_rules.py, core/render_jobs.py): which, and the render pool
    render: RenderMode = "never"
    render_rules: tuple[str, ...] = ()  # URL_PATTERN=always|never|auto, first match wins
    render_workers: int = _default(RenderSettings, "render_workers")
    render_workers_max: int = _default(RenderSettings, "render_workers_max")
    render_pages: int = _default(RenderSettings, "render_pages")
    render_timeout: float = _default(RenderSettings, "render_timeout")
    render_settle: float = _default(RenderSettings, "render_settle")
    render_max_requests: int = _default(RenderSettings, "render_max_requests")
    render_restart_pages: int = _default(RenderSettings, "render_restart_pages")
    render_max_memory_mb: int = _default(RenderSettings, "render_max_memory_mb")
    render_browser: str = _default(RenderSettings, "render_browser")
    render_screenshots: bool = _default(RenderSettings, "render_screenshots")
    # Pages into data (issue 47): an extractor where pages are fetched, a content contract, items exactly once.
    # extract and accept: builtin:NAME or module:function (from Python, the function itself, shipped by Ray)
    extract: str | None = None
    extract_fields: tuple[str, ...] = ()  # NAME=css:SELECTOR[::text|::attr(NAME)], the TOML [extract.fields]
    extract_timeout: float = _default(ExtractSettings, "extract_timeout")
    schema_version: str = _default(ExtractSettings, "schema_version")
    require: tuple[str, ...] = ()  # the contract (core/contract.py): fields an accepted item has, not empty
    min_chars: tuple[str, ...] = ()  # FIELD=N: a text field's least length
    languages: tuple[str, ...] = ()  # the item's language's primary subtag, one of these
    content_types: tuple[str, ...] = ()  # the page's media type, one of these
    accept: str | None = None  # accept(page, item) -> True | "reason"
    # Focused crawls (issue 48): score_links(page, item) -> float | {link URL: float}, added to the links' scores
    score_links: str | None = None
    follow_rejected: bool = _default(RecordRules, "follow_rejected")
    max_accepted: int | None = None
    max_accepted_per_host: int | None = _default(FrontierSettings, "max_accepted_per_host")
    warc: bool = True
    checkpoint_interval: float = _default(LoopSettings, "checkpoint_interval")
    redis_url: str | None = None
    crawl_id: str | None = None
    resume: bool = False
    retry_errors: bool = False  # with resume: URLs whose records ended in error are crawled again
    retry_budget: bool = False  # ... and those that ended out_of_budget
    retry_quarantined: bool = False  # with resume: pages whose extraction was quarantined are fetched again
    strict: bool = False
    fresh: bool = False
    quiet: bool = False
    max_part_bytes: int = _default(LoopSettings, "max_part_bytes")
    # Python only (as Ray Data's ``filesystem=``): a pyarrow.fs or fsspec filesystem that ``out`` is a path in.
    filesystem: Any = dataclasses.field(default=None, compare=False, repr=False)
    # Python only: score(url, depth) -> float, higher first, instead of -depth (shipped to the shards by Ray).
    score: Any = dataclasses.field(default=None, compare=False, repr=False)
    # Made where the crawl starts, never given (raycrawl/proxies.py): the proxies with their credentials.
    egress: Any = dataclasses.field(default=None, compare=False, repr=False)

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
    need(cfg.min_delay >= 0, "min_delay", "seconds >= 0")
    need(cfg.max_delay >= max(cfg.min_delay, cfg.delay), "max_delay", "seconds >= delay and >= min_delay")
    need(cfg.max_crawl_delay >= 0, "max_crawl_delay", "seconds >= 0")
    need(cfg.crawl_delay_policy in ("cap", "skip"), "crawl_delay_policy", "one of cap, skip")
    need(cfg.leftovers in ("keep", "record"), "leftovers", "one of keep, record")
    need(cfg.max_retry_after >= 0, "max_retry_after", "seconds >= 0")
    need(cfg.backoff_base > 0, "backoff_base", "seconds > 0")
    need(cfg.max_backoff >= cfg.backoff_base, "max_backoff", "seconds >= backoff_base")
    need(cfg.pause_after >= 0, "pause_after", "a whole number >= 0 (0: never pause)")
    need(cfg.per_host_concurrency >= 1, "per_host_concurrency", "a whole number >= 1")
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
    need(cfg.fetch_batch_size >= 1, "fetch_batch_size", "a whole number >= 1")
    need(cfg.max_tasks_in_flight >= 1, "max_tasks_in_flight", "a whole number >= 1")
    need(0 < cfg.fetch_task_cpus <= 64, "fetch_task_cpus", "CPUs per fetch task, > 0")
    need(0 < cfg.timeout <= MAX_FETCH_SECONDS, "timeout", f"seconds > 0, at most {MAX_FETCH_SECONDS}")
    need(0 < cfg.fetch_deadline <= MAX_FETCH_SECONDS, "fetch_deadline", f"seconds > 0, at most {MAX_FETCH_SECONDS}")
    need(1024 <= cfg.max_body_bytes <= MAX_BODY_BYTES, "max_body_bytes", f"bytes from 1024 to {MAX_BODY_BYTES:,}")
    need(0 <= cfg.max_redirects <= 100, "max_redirects", "a whole number between 0 and 100")
    need(cfg.max_path_depth >= 1, "max_path_depth", "a whole number >= 1")
    need(cfg.max_repeated_segments >= 1, "max_repeated_segments", "a whole number >= 1")
    need(cfg.max_outlinks >= 1, "max_outlinks", "a whole number >= 1")
    need(cfg.max_pages_per_host is None or cfg.max_pages_per_host >= 1, "max_pages_per_host", "a whole number >= 1")
    need(cfg.max_attempts >= 1, "max_attempts", "a whole number >= 1")
    need(cfg.max_queue_per_host >= 1, "max_queue_per_host", "a whole number >= 1")
    need(cfg.max_queue_total >= 1, "max_queue_total", "a whole number >= 1")
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
    need(cfg.max_sitemaps_per_host >= 0, "max_sitemaps_per_host", "a whole number >= 0")
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
    need(cfg.render_max_requests >= 0, "render_max_requests", "a whole number >= 0")
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
DURATIONS = frozenset(
    {"revisit_after", "revisit_min", "revisit_max", "rollover", "seen_ttl", "proxy_cooldown", "render_timeout",
     "render_settle"}
)  # fmt: skip
# A spec in every layer; from Python, the function too
CALLABLE_OR_SPEC = frozenset({"extract", "accept", "score_links"})
PYTHON_ONLY = frozenset(
    {"filesystem", "score", "egress"}
)  # no flag, TOML key or environment variable: an object, not text
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
TABLE_KEYS = {
    "extract": {"function": "extract", "fields": "extract_fields", "timeout": "extract_timeout",
                "schema_version": "schema_version", "score_links": "score_links"},
    "accept": {"function": "accept", "require": "require", "min_chars": "min_chars", "languages": "languages",
               "content_types": "content_types"},
}  # fmt: skip


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
FIXED_ON_RESUME = frozenset(
    {
        "scope",
        "allow",
        "deny",
        "tracking_params",
        "dedup",
        "bloom_capacity",
        "bloom_error_rate",
        "shards",
        "dedup_partitions",
        "user_agent",
    }
)
# Settings that say how to run this command, not what the crawl is: never taken from a checkpoint.
PER_RUN = frozenset(
    {
        "seeds",
        "seeds_file",
        "recrawl",
        "retry_errors",
        "retry_budget",
        "retry_quarantined",
        "out",
        "redis_url",
        "shared_politeness",  # (a redis:// URL may hold a password: never written into checkpoints)
        "crawl_id",
        "ray_address",
        "resume",
        "fresh",
        "quiet",
        "filesystem",
        "score",
        "egress",
    }
)


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
