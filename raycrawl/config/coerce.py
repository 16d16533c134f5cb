"""A value from a TOML file, an environment variable or the command line, made the type of its setting."""

from __future__ import annotations

import difflib
import math
import types
import typing
from typing import Any, Literal

from raycrawl.config.schema import DURATIONS, FIELD_TYPES
from raycrawl.config.setting import (
    duration,
)
from raycrawl.errors import ConfigError


def describe(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is Literal:
        return "one of " + ", ".join(map(str, typing.get_args(tp)))
    if origin in (types.UnionType, typing.Union):
        inner = [a for a in typing.get_args(tp) if a is not type(None)]
        return describe(inner[0]) + " (or empty for none)"
    if origin is tuple:
        return "a list of strings"
    return {int: "a whole number", float: "a number", bool: "true or false", str: "a string"}.get(tp, str(tp))


def coerce(key: str, raw: Any, tp: Any | None = None) -> Any:
    """Turn a TOML value or an environment/CLI string into the field's type, or raise ConfigError naming key."""
    tp = FIELD_TYPES[key] if tp is None else tp
    if key in DURATIONS and isinstance(raw, str) and raw.strip().lower() not in ("", "none"):
        return duration(key, raw)
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):  # (X | None: empty or "none" is None)
        if raw is None or (isinstance(raw, str) and raw.strip().lower() in ("", "none")):
            return None
        return coerce(key, raw, next(a for a in typing.get_args(tp) if a is not type(None)))
    if origin is Literal:
        if raw in typing.get_args(tp):
            return raw
        raise ConfigError(f"{key} = {raw!r}: expected {describe(tp)}", key)
    convert = _to_tuple if origin is tuple else _SCALARS.get(tp)
    if convert is None:
        raise ConfigError(f"{key}: unsupported type {tp}", key)
    try:
        return convert(raw)
    except (ValueError, TypeError):
        raise ConfigError(f"{key} = {raw!r}: expected {describe(tp)}", key) from None


def _to_tuple(raw: Any) -> tuple[str, ...]:
    """A list of strings: a TOML array, or a comma-separated string."""
    if isinstance(raw, str):
        return tuple(part.strip() for part in raw.split(",") if part.strip())
    if isinstance(raw, list | tuple) and all(isinstance(x, str) for x in raw):
        return tuple(raw)
    raise ValueError


def _to_bool(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError


def _to_int(raw: Any) -> int:
    if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
        raise ValueError
    return int(str(raw).replace("_", "")) if isinstance(raw, str) else int(raw)


def _to_float(raw: Any) -> float:
    if isinstance(raw, bool):
        raise ValueError
    value = float(raw)
    if not math.isfinite(value):
        raise ValueError
    return value


def _to_str(raw: Any) -> str:
    if not isinstance(raw, str):
        raise ValueError
    return raw


_SCALARS: dict[Any, Any] = {bool: _to_bool, int: _to_int, float: _to_float, str: _to_str}


def has_type(value: Any, tp: Any) -> bool:
    """Does ``value`` have the field type ``tp`` (as the dataclass declares it)?"""
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        return value is None or any(has_type(value, a) for a in typing.get_args(tp) if a is not type(None))
    if origin is Literal:
        return value in typing.get_args(tp)
    if origin is tuple:
        return isinstance(value, tuple) and all(isinstance(x, str) for x in value)
    if tp is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, tp)


def normalise_key(key: str, source: str) -> str:
    name = key.replace("-", "_").lower()
    if name not in FIELD_TYPES:
        close = difflib.get_close_matches(name, list(FIELD_TYPES), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"{source}: unknown setting {key!r}{hint}")
    return name
