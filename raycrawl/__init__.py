"""raycrawl: a polite, durable, distributed web crawler built on Ray."""

from raycrawl.api import Crawl, crawl
from raycrawl.config import CrawlConfig, load_config
from raycrawl.errors import ConfigError, RaycrawlError, SeedError, ServiceError
from raycrawl.results import read_results
from raycrawl.version import __version__

__all__ = [
    "ConfigError",
    "Crawl",
    "CrawlConfig",
    "RaycrawlError",
    "SeedError",
    "ServiceError",
    "__version__",
    "crawl",
    "load_config",
    "read_results",
]
