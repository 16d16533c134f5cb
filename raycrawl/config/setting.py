"""What is known of a setting, written once on its field (``setting(...)``), and the types settings share."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

from raycrawl.core.revisit_schedule import parse_duration
from raycrawl.errors import ConfigError

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


def default_of(section: type, name: str) -> Any:
    """A setting's default, from the section of settings that owns it (core/): each is defined once, there."""
    return section.__dataclass_fields__[name].default  # type: ignore[attr-defined]


def duration(key: str, text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise ConfigError(f"{key}: {exc}", key) from None
