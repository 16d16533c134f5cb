"""raycrawl: a polite, durable, distributed web crawler built on Ray."""

from raycrawl.api import Crawl, crawl
from raycrawl.config import CrawlConfig, load_config
from raycrawl.errors import ConfigError, RaycrawlError, SeedError, ServiceError

__all__ = ["ConfigError", "Crawl", "CrawlConfig", "RaycrawlError", "SeedError", "ServiceError", "crawl", "load_config"]
__version__ = "0.1.0"
