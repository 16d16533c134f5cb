"""raycrawl: a polite, durable, distributed web crawler built on Ray.

The names below are imported when first used (PEP 562), not with the package: every Ray worker that runs a fetch
task or an actor imports ``raycrawl`` on its way to the module it needs, and the API's imports (the output
and storage stacks, pyarrow) cost each of those processes ~0.2 s of CPU it never uses.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from raycrawl.version import __version__

if TYPE_CHECKING:
    from raycrawl.api import Crawl, crawl
    from raycrawl.config import CrawlConfig, load_config
    from raycrawl.errors import ConfigError, RaycrawlError, SeedError, ServiceError
    from raycrawl.reextract import extract_from_warc
    from raycrawl.results import read_items, read_results
    from raycrawl.warc_dataset import read_warc

_LAZY = {
    "Crawl": "raycrawl.api",
    "crawl": "raycrawl.api",
    "CrawlConfig": "raycrawl.config",
    "load_config": "raycrawl.config",
    "ConfigError": "raycrawl.errors",
    "RaycrawlError": "raycrawl.errors",
    "SeedError": "raycrawl.errors",
    "ServiceError": "raycrawl.errors",
    "read_results": "raycrawl.results",
    "read_items": "raycrawl.results",
    "read_warc": "raycrawl.warc_dataset",
    "extract_from_warc": "raycrawl.reextract",
}

__all__ = [
    "ConfigError",
    "Crawl",
    "CrawlConfig",
    "RaycrawlError",
    "SeedError",
    "ServiceError",
    "__version__",
    "crawl",
    "extract_from_warc",
    "load_config",
    "read_items",
    "read_results",
    "read_warc",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'raycrawl' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # (once: later lookups find it without coming here)
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
