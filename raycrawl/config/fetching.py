"""How a page is fetched, and the bounds on what a server may send.

Each field is a setting, described once (config/setting.py ``setting``).
"""

from __future__ import annotations

from dataclasses import dataclass

from raycrawl.config.setting import (
    default_of,
    setting,
)
from raycrawl.core.fetch_settings import FetchSettings
from raycrawl.core.frontier_settings import FrontierSettings
from raycrawl.core.settle import RecordRules
from raycrawl.core.traps import TrapRules


@dataclass(frozen=True)
class FetchingSettings:
    """The settings of ``--help``'s group "fetching and bounds" (a part of ``CrawlConfig``)."""

    allow_private_networks: bool = setting(
        default_of(FetchSettings, "allow_private_networks"),
        "allow connecting to private, loopback and link-local addresses (off by default)",
        group="fetching and bounds",
    )
    allow_network: tuple[str, ...] = setting(
        default_of(FetchSettings, "allow_network"),
        "allow connecting to this CIDR even if private, e.g. 10.0.0.0/8 (repeatable)",
        group="fetching and bounds",
        metavar="CIDR",
    )
    resolve: tuple[str, ...] = setting(
        (),
        "pin a host name to an address, HOST=IP (repeatable), like curl --resolve",
        group="fetching and bounds",
        metavar="HOST=IP",
    )
    timeout: float = setting(
        default_of(FetchSettings, "timeout"),
        "connect/read timeout per request, seconds",
        group="fetching and bounds",
        unit="seconds",
    )
    fetch_deadline: float = setting(
        default_of(FetchSettings, "fetch_deadline"),
        "total seconds one fetch may take, on top of --timeout: cuts off slow drips",
        group="fetching and bounds",
        unit="seconds",
    )
    max_body_bytes: int = setting(
        default_of(FetchSettings, "max_body_bytes"),
        "largest decoded body read, in bytes; larger ends as too_large",
        group="fetching and bounds",
        metavar="BYTES",
    )
    max_redirects: int = setting(
        default_of(RecordRules, "max_redirects"),
        "redirect hops followed from one URL; more ends as an error with the chain",
        group="fetching and bounds",
    )
    max_path_depth: int = setting(
        default_of(TrapRules, "max_path_depth"),
        "URLs with more path segments are rejected as a likely trap",
        group="fetching and bounds",
        at_least=1,
    )
    max_repeated_segments: int = setting(
        default_of(TrapRules, "max_repeated_segments"),
        "a path segment repeated more times in a row is rejected as a trap",
        group="fetching and bounds",
        at_least=1,
    )
    max_outlinks: int = setting(
        default_of(FetchSettings, "max_outlinks"),
        "links taken from one page",
        group="fetching and bounds",
        at_least=1,
    )
    max_attempts: int = setting(
        default_of(FrontierSettings, "max_attempts"),
        "attempts per URL for transient failures",
        group="fetching and bounds",
        at_least=1,
    )
    max_queue_per_host: int = setting(
        default_of(FrontierSettings, "max_queue_per_host"),
        "queued URLs per host before new ones are shed as out_of_budget",
        group="fetching and bounds",
        at_least=1,
    )
    max_queue_total: int = setting(
        default_of(FrontierSettings, "max_queue_total"),
        "with --workbench 0: queued URLs per shard before new ones are shed as out_of_budget",
        group="fetching and bounds",
        at_least=1,
    )
    workbench: int = setting(
        default_of(FrontierSettings, "workbench"),
        ("queued URLs per host a shard keeps in memory; the rest wait on its node's disk (0: all in memory)"),
        group="fetching and bounds",
    )
    frontier_dir: str = setting(
        "",
        "where shards keep queued URLs on their node's disk (default: the system's temporary directory)",
        group="fetching and bounds",
    )
