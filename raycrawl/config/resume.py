"""A crawl's settings travel with its checkpoints: saved with them, and taken again (under what the user named this
time, refused where a running crawl cannot change) on ``--resume``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from typing import Any

from raycrawl.config.coerce import coerce
from raycrawl.config.schema import CALLABLE_OR_SPEC, FIELD_TYPES, FIXED_ON_RESUME, PER_RUN, CrawlConfig
from raycrawl.core.extract_settings import spec_name
from raycrawl.errors import ConfigError


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
