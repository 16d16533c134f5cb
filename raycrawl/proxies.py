"""The crawl's proxies with their credentials, made where the crawl starts (core/proxy_routes.py has the rules).

The configuration keeps proxy URLs as written -- passwords as ``${VARIABLE}`` -- so checkpoints, resume commands
and status never hold one; here they are expanded from this process's environment and the pool file is read,
once, into the plan the fetch workers are given.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from raycrawl.config import CrawlConfig
from raycrawl.core.proxy_routes import ProxyPlan, check_proxy_url, expand, parse_rule, pool_file_lines, redact_text
from raycrawl.errors import ConfigError


def proxy_plan(cfg: CrawlConfig, environ: Mapping[str, str] = os.environ) -> ProxyPlan:
    """The plan of ``cfg``'s proxies: ConfigError for a pool file that cannot be read or holds a bad URL, and for
    a ``${VARIABLE}`` that is not set."""
    default = list(cfg.proxy)
    if cfg.proxy_file:
        try:
            lines = pool_file_lines(Path(cfg.proxy_file).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"proxy_file: cannot read {cfg.proxy_file} ({exc})", "proxy_file") from None
        for n, url in enumerate(lines, 1):
            problem = check_proxy_url(url, secrets_allowed=True)
            if problem:
                raise ConfigError(f"proxy_file: {cfg.proxy_file}, proxy {n}: {problem}", "proxy_file")
        if not lines:
            raise ConfigError(f"proxy_file: {cfg.proxy_file} names no proxy (one URL a line)", "proxy_file")
        default += lines
    rules = [parse_rule(rule) for rule in cfg.proxy_rules]  # (valid: the config checked them)

    def expanded(url: str, key: str) -> str:
        try:
            return expand(url, environ)
        except KeyError as exc:
            raise ConfigError(
                f"{key}: {redact_text(url)} needs the environment variable {exc.args[0]}, which is not set",
                key,
            ) from None

    return ProxyPlan.of(
        [expanded(url, "proxy") for url in default],
        [(pattern, tuple(t if t in ("none", "pool") else expanded(t, "proxy_rules") for t in targets))
         for pattern, targets in rules],
        cooldown=cfg.proxy_cooldown,
    )  # fmt: skip
