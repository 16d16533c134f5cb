"""A configuration checked once, where it is made: every value of its type and within its bounds, every rule parsed,
every spec imported -- one line naming the setting, never a failure later on every worker.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import math
import re
import typing
from collections.abc import Callable
from typing import Any

from raycrawl.adapters.extraction import extraction_problem, load_function
from raycrawl.adapters.snapshots import redis_url_problem
from raycrawl.config.coerce import describe, has_type
from raycrawl.config.schema import CALLABLE_OR_SPEC, DURATIONS, FIELD_TYPES, PYTHON_ONLY, SETTINGS, CrawlConfig
from raycrawl.core.addresses import is_ip_literal
from raycrawl.core.contract import ContentContract
from raycrawl.core.extract_settings import field_table
from raycrawl.core.priority import parse_rule
from raycrawl.core.proxy_routes import check_proxy_url
from raycrawl.core.proxy_routes import parse_rule as parse_proxy_rule
from raycrawl.core.render_rules import parse_rule as parse_render_rule
from raycrawl.core.revisit_schedule import parse_rule as parse_revisit_rule
from raycrawl.core.robots_txt import product_token
from raycrawl.errors import ConfigError

# Upper bounds of settings whose values load but would fail later, on every worker (OverflowError, an allocation no
# machine has, a timer no event loop takes): refused when the config is loaded, with one line.
MAX_ACTORS = 1024  # shards, and seen-set partitions: an actor each


MAX_BLOOM_CAPACITY = 10**11  # ~120 GB of bits at a 1% error rate
MAX_FETCH_SECONDS = 86_400.0
MAX_BODY_BYTES = 1 << 30  # a body is held in memory, decoded, by the fetch worker
MAX_NUMBER = 1e12  # any other number (in seconds, ~31,700 years: what a timer may still take)


def validate(cfg: CrawlConfig) -> None:
    """Raise ConfigError (one line, naming the setting) at the first value a crawl could not run with; the checks
    go in this order, so that a setting with a bound of its own is named by it before the generic one."""
    for check in (
        _check_types,
        _check_bounds,
        _check_durations,
        _check_connections,
        _check_rendering_and_revisits,
        _validate_extraction,
        _check_output_and_resume,
        _check_patterns,
        _check_numbers,
    ):
        check(cfg)


def _parse_each(cfg: CrawlConfig, key: str, parse: Callable[[str], Any]) -> list[Any]:
    """Each rule of the setting ``key`` (PATTERN=VALUE: core/rules.py) parsed; the first that does not, named."""
    parsed = []
    for rule in getattr(cfg, key):
        try:
            parsed.append(parse(rule))
        except ValueError as exc:
            raise ConfigError(f"{key}: {exc}", key) from None
    return parsed


def _needs(cfg: CrawlConfig) -> Callable[[bool, str, str], None]:
    """``need(ok, key, expected)``: a ConfigError naming ``key`` with its value and what was expected, unless ok."""

    def need(ok: bool, key: str, expected: str) -> None:
        if not ok:
            raise ConfigError(f"{key} = {getattr(cfg, key)!r}: expected {expected}", key)

    return need


def _check_types(cfg: CrawlConfig) -> None:
    """Every value of its setting's type (from Python nothing has coerced them)."""
    for f in dataclasses.fields(cfg):  # from Python nothing has coerced the values: their types first
        if f.name in PYTHON_ONLY or (f.name in CALLABLE_OR_SPEC and callable(getattr(cfg, f.name))):
            continue
        value = getattr(cfg, f.name)
        if not has_type(value, FIELD_TYPES[f.name]):
            listed = typing.get_origin(FIELD_TYPES[f.name]) is tuple and isinstance(value, str)
            hint = f" (a list of strings, not one string: {f.name}=({value!r},))" if listed else ""
            raise ConfigError(f"{f.name} = {value!r}: expected {describe(FIELD_TYPES[f.name])}{hint}", f.name)


def _check_bounds(cfg: CrawlConfig) -> None:
    """Each setting within the values a crawl can run with."""
    need = _needs(cfg)
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


def _check_durations(cfg: CrawlConfig) -> None:
    """Priority rules parse; durations are finite, and the schedule's in order."""
    need = _needs(cfg)
    _parse_each(cfg, "priority", parse_rule)
    for name in DURATIONS:
        value = getattr(cfg, name)
        need(value is None or (isinstance(value, int | float) and math.isfinite(value)), name, "a duration")
    need(cfg.revisit_min > 0, "revisit_min", "a duration > 0, e.g. 90s, 10m, 6h, 7d")
    need(cfg.revisit_max >= cfg.revisit_min, "revisit_max", f"a duration >= revisit_min ({cfg.revisit_min:g} s)")
    need(cfg.revisit_after > 0, "revisit_after", "a duration > 0, e.g. 7d")
    need(cfg.rollover is None or cfg.rollover >= 1, "rollover", "a duration of at least 1s, e.g. 1d or 6h")
    need(cfg.seen_ttl is None or cfg.seen_ttl >= 1, "seen_ttl", "a duration of at least 1s, e.g. 60d")


def _check_connections(cfg: CrawlConfig) -> None:
    """Redis URLs, proxies and their rules: parsed here, shown redacted (they may hold a password)."""
    need = _needs(cfg)
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
    _parse_each(cfg, "proxy_rules", parse_proxy_rule)
    need(cfg.proxy_cooldown >= 1, "proxy_cooldown", "a duration of at least 1s, e.g. 60s or 10m")


def _check_rendering_and_revisits(cfg: CrawlConfig) -> None:
    """The rendering pool's bounds and rules, and the revisit rules."""
    need = _needs(cfg)
    _parse_each(cfg, "render_rules", parse_render_rule)
    for name in ("render_workers", "render_pages", "render_restart_pages"):
        need(getattr(cfg, name) >= 1, name, "a whole number >= 1")
    need(cfg.render_workers_max == 0 or cfg.render_workers_max >= cfg.render_workers, "render_workers_max",
         "0 (a pool of render_workers) or a whole number >= render_workers")  # fmt: skip
    need(cfg.render_max_memory_mb >= 64, "render_max_memory_mb", "megabytes >= 64")
    need(cfg.render_timeout >= 1, "render_timeout", "a duration of at least 1s, e.g. 20s")
    need(0 <= cfg.render_settle < cfg.render_timeout, "render_settle", "a duration shorter than render_timeout")
    for rule, (_, seconds) in zip(
        cfg.revisit_rules, _parse_each(cfg, "revisit_rules", parse_revisit_rule), strict=True
    ):
        need(seconds > 0, "revisit_rules", f"{rule!r}: an interval > 0")


def _check_output_and_resume(cfg: CrawlConfig) -> None:
    """Where the output goes, and the flags that only mean something on a resume."""
    need = _needs(cfg)
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


def _check_patterns(cfg: CrawlConfig) -> None:
    """Scope patterns, networks and --resolve entries."""
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


def _check_numbers(cfg: CrawlConfig) -> None:
    """Last: every number finite and within its least value (the bounds above say more where a setting has its own)."""
    need = _needs(cfg)
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
