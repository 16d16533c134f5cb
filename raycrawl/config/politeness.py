"""How gently each host is asked: delays, robots.txt, backoff, pauses.

Each field is a setting, described once (config/setting.py ``setting``).
"""

from __future__ import annotations

from dataclasses import dataclass

from raycrawl.config.setting import (
    CrawlDelayPolicy,
    default_of,
    setting,
)
from raycrawl.core.fetch_settings import FetchSettings
from raycrawl.core.frontier_settings import FrontierSettings
from raycrawl.core.politeness import DelayPolicy


@dataclass(frozen=True)
class PolitenessSettings:
    """The settings of ``--help``'s group "politeness" (a part of ``CrawlConfig``)."""

    delay: float = setting(
        default_of(DelayPolicy, "delay"),
        "minimum seconds between two requests to one host",
        group="politeness",
        unit="seconds",
    )
    delay_factor: float = setting(
        default_of(DelayPolicy, "delay_factor"),
        "a host's delay is at least this many times its last exchange's duration (0: off)",
        group="politeness",
        metavar="FACTOR",
    )
    min_delay: float = setting(
        default_of(DelayPolicy, "min_delay"),
        "floor of any host's delay",
        group="politeness",
        unit="seconds",
        at_least=0,
    )
    max_delay: float = setting(
        default_of(DelayPolicy, "max_delay"), "ceiling of any host's delay", group="politeness", unit="seconds"
    )
    max_crawl_delay: float = setting(
        default_of(DelayPolicy, "max_crawl_delay"),
        "largest robots.txt Crawl-delay honoured",
        group="politeness",
        unit="seconds",
        at_least=0,
    )
    crawl_delay_policy: CrawlDelayPolicy = setting(
        default_of(FrontierSettings, "crawl_delay_policy"),
        "a Crawl-delay over the cap: cap it (and count it) or skip the host",
        group="politeness",
    )
    max_retry_after: float = setting(
        default_of(DelayPolicy, "max_retry_after"),
        "longest Retry-After honoured, seconds",
        group="politeness",
        unit="seconds",
        at_least=0,
    )
    backoff_base: float = setting(
        default_of(DelayPolicy, "backoff_base"),
        "first backoff after a transient failure, doubling per failure in a row",
        group="politeness",
        unit="seconds",
    )
    max_backoff: float = setting(
        default_of(DelayPolicy, "max_backoff"), "longest backoff, seconds", group="politeness", unit="seconds"
    )
    pause_after: int = setting(
        default_of(FrontierSettings, "pause_after"), "pause a host after this many 403/451 in a row", group="politeness"
    )
    per_host_concurrency: int = setting(
        default_of(FrontierSettings, "per_host_concurrency"),
        "requests in flight per host",
        group="politeness",
        at_least=1,
    )
    user_agent: str = setting(
        default_of(FetchSettings, "user_agent"),
        "User-Agent header; its product token picks robots.txt groups",
        group="politeness",
        metavar="AGENT",
        resume="fixed",
    )
    robots_ttl: float = setting(
        default_of(FrontierSettings, "robots_ttl"), "seconds a robots.txt is cached", group="politeness", unit="seconds"
    )
    # one politeness budget per host with every crawl that names the same: "cluster" (the Ray cluster's registry
    # actor) or a redis:// URL (core/host_budget.py); None: this crawl's own clocks only
    shared_politeness: str | None = setting(
        None,
        (
            "share one politeness budget per host with every crawl that names the same: cluster (this Ray "
            "cluster's registry) or redis://... (with crawls anywhere, and other tools)"
        ),
        group="politeness",
        metavar="cluster|URL",
        resume="per_run",
    )
