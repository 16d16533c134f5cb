"""raycrawl: a polite, durable, distributed web crawler built on Ray."""

from importlib import metadata as _metadata

from raycrawl.api import Crawl, crawl
from raycrawl.config import CrawlConfig, load_config
from raycrawl.errors import ConfigError, RaycrawlError, SeedError, ServiceError
from raycrawl.results import read_results

__all__ = [
    "ConfigError",
    "Crawl",
    "CrawlConfig",
    "RaycrawlError",
    "SeedError",
    "ServiceError",
    "crawl",
    "load_config",
    "read_results",
]
try:  # the version is written once, in pyproject.toml
    __version__ = _metadata.version("raycrawl")
except _metadata.PackageNotFoundError:  # (run from a source tree that was never installed)
    __version__ = "0+unknown"
