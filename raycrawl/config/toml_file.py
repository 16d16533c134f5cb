"""Settings from a TOML file: top-level keys or a ``[crawl]`` table, and the tables of rules ([[priority]],
[[revisit]], [[render]], [[proxy]]) and of settings under one name ([extract], [accept]).
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from raycrawl.config.coerce import coerce, normalise_key
from raycrawl.config.schema import TABLE_KEYS
from raycrawl.errors import ConfigError


def read_toml(path: str | os.PathLike[str], sources: dict[str, str] | None = None) -> dict[str, Any]:
    """Settings from a TOML file: top-level keys, or a ``[crawl]`` table. ``sources`` learns where each was."""
    p = Path(path)
    text, data = _read(p)
    out: dict[str, Any] = {}
    for raw_key, value in data.items():
        key = normalise_key(raw_key, str(p))
        where = f"{p}, line {_line_of(text, raw_key)}"
        if sources is not None:
            sources[key] = where
        for name, typed in _settings_of(key, value, where, out).items():
            if sources is not None:
                sources[name] = where
            out[name] = typed
    return out


def _read(p: Path) -> tuple[str, dict[str, Any]]:
    """The file's text and its settings' table (``[crawl]``, or the top level)."""
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
    return text, data["crawl"] if isinstance(data.get("crawl"), dict) else data


def _settings_of(key: str, value: Any, where: str, before: dict[str, Any]) -> dict[str, Any]:
    """The settings one key of the file gives, typed: itself, or those of a table of settings ([extract] with
    function, fields, timeout, schema_version; [accept] with function, require, min_chars, languages,
    content_types), or a setting of rules from an array of tables ([[priority]], [[render]], [[proxy]] --
    per-host, the default pool being --proxy or a proxy = [...] list -- and [[revisit]], which also makes the
    crawl a continuous one)."""
    if key in ("extract", "accept") and isinstance(value, dict):
        settings = sourced(lambda: _table_settings(key, value), where)
        return {
            name: sourced(lambda name=name, inner=inner: coerce(name, inner), where) for name, inner in settings.items()
        }
    tables = isinstance(value, list) and all(isinstance(t, dict) for t in value) and (bool(value) or key != "proxy")
    if key in RULE_TABLES and tables:
        name, rule = RULE_TABLES[key]
        rules = [sourced(lambda table=table: rule(table), where) for table in value]
        out = {name: sourced(lambda: coerce(name, rules), where)}
        if key == "revisit":
            out["revisit"] = sourced(lambda: coerce("revisit", before.get("revisit", True)), where)
        return out
    return {key: sourced(lambda: coerce(key, value), where)}


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


def _priority_rule(table: dict[str, Any]) -> str:
    """A ``[[priority]]`` table (``pattern = "..."``, ``weight = 5``) as the rule text the other layers use."""
    pattern, weight = table.get("pattern"), table.get("weight")
    unknown = set(table) - {"pattern", "weight"}
    if not isinstance(pattern, str) or isinstance(weight, bool) or not isinstance(weight, int | float) or unknown:
        raise ConfigError(f"priority: {table!r}: expected a table with pattern (a string) and weight (a number)")
    return f"{pattern}={weight}"


# Arrays of tables that are rules: the setting each makes, and how a table becomes a rule's text
RULE_TABLES: dict[str, tuple[str, Callable[[dict[str, Any]], str]]] = {
    "priority": ("priority", _priority_rule),
    "revisit": ("revisit_rules", _revisit_rule),
    "render": ("render_rules", _render_rule),
    "proxy": ("proxy_rules", _proxy_rule),
}


def _line_of(text: str, key: str) -> int | str:
    """The line of a TOML file that sets ``key`` (the last one: TOML forbids two), for messages."""
    pattern = re.compile(rf"""^\s*["']?{re.escape(key)}["']?\s*=""")
    lines = [n for n, line in enumerate(text.splitlines(), 1) if pattern.match(line)]
    return lines[-1] if lines else "?"


def sourced(make: Any, where: str) -> Any:
    """``make()``, with where the value came from added to a ConfigError it raises."""
    try:
        return make()
    except ConfigError as exc:
        raise ConfigError(f"{exc} (from {where})", exc.key) from None
