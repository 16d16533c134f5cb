"""The four layers merged into one validated configuration: defaults < TOML file (``--config``) < ``RAYCRAWL_*``
environment variables < command-line flags.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from raycrawl.config.coerce import coerce, normalise_key
from raycrawl.config.schema import CrawlConfig
from raycrawl.config.toml_file import read_toml, sourced
from raycrawl.errors import ConfigError

ENV_PREFIX = "RAYCRAWL_"


def read_env(environ: Mapping[str, str], sources: dict[str, str] | None = None) -> dict[str, Any]:
    """Settings from ``RAYCRAWL_*`` variables; RAYCRAWL_CONFIG names the TOML file and is not a field."""
    out: dict[str, Any] = {}
    for name, raw in environ.items():
        if not name.startswith(ENV_PREFIX) or name == ENV_PREFIX + "CONFIG":
            continue
        key = normalise_key(name[len(ENV_PREFIX) :], f"environment variable {name}")
        where = f"environment variable {name}"
        if sources is not None:
            sources[key] = where
        out[key] = sourced(lambda key=key, raw=raw: coerce(key, raw), where)
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
        name = normalise_key(key, "command line")
        where = "the command line" if name == "seeds" else f"--{name.replace('_', '-')} on the command line"
        sources[name] = where
        merged[name] = sourced(lambda name=name, value=value: coerce(name, value), where)
    try:
        return CrawlConfig(**merged), frozenset(merged)
    except ConfigError as exc:
        if exc.key in sources:
            raise ConfigError(f"{exc} (from {sources[exc.key]})", exc.key) from None
        raise
