"""The crawl configuration: one frozen dataclass, made of its groups of settings, validated once (config/validate.py);
and the tables the parser, the readers and resuming use, made from what each setting says of itself.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import Any

from raycrawl.config.cluster import ClusterSettings
from raycrawl.config.continuous import ContinuousSettings
from raycrawl.config.extraction import ExtractionSettings
from raycrawl.config.fetching import FetchingSettings
from raycrawl.config.output import OutputSettings
from raycrawl.config.politeness import PolitenessSettings
from raycrawl.config.proxies import ProxySettings
from raycrawl.config.rendering import RenderingSettings
from raycrawl.config.scope import ScopeSettings
from raycrawl.config.setting import (
    Setting,
    duration,
    setting,
)
from raycrawl.core.contract import ContentContract
from raycrawl.core.extract_settings import ExtractSettings


@dataclass(frozen=True)
class CrawlConfig(
    ScopeSettings,
    PolitenessSettings,
    OutputSettings,
    FetchingSettings,
    ExtractionSettings,
    ProxySettings,
    RenderingSettings,
    ContinuousSettings,
    ClusterSettings,
):
    """Everything a crawl needs to know; see the README's flag table for each field's meaning. Its settings are
    described by group, each in its own module (config/scope.py ...); these few belong to none."""

    seeds: tuple[str, ...] = setting((), resume="per_run")
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
                object.__setattr__(self, name, duration(name, value))
        from raycrawl.config.validate import validate  # (it reads the tables made from this class below)

        validate(self)

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


# Settings a running crawl cannot change: what was seen, queued or decided under them would no longer hold.
FIXED_ON_RESUME = frozenset(name for name, info in SETTINGS.items() if info.resume == "fixed")
# Settings that say how to run this command, not what the crawl is: never taken from a checkpoint.
PER_RUN = frozenset(name for name, info in SETTINGS.items() if info.resume == "per_run")


# The keys of the [extract] and [accept] tables, and the settings they are
# The keys of the TOML tables ([extract], [accept]) and the settings they are: the table's function first.
TABLE_KEYS: dict[str, dict[str, str]] = {}
_TABLED = [(info.toml, name) for name, info in SETTINGS.items() if info.toml is not None]
for (_table, _key), _name in sorted(_TABLED, key=lambda tabled: tabled[0][1] != "function"):  # (stable sort)
    TABLE_KEYS.setdefault(_table, {})[_key] = _name
