"""Where the output and the checkpoints go, and how a crawl resumes.

Each field is a setting, described once (config/setting.py ``setting``).
"""

from __future__ import annotations

from dataclasses import dataclass

from raycrawl.config.setting import (
    default_of,
    setting,
)
from raycrawl.core.crawl_loop import LoopSettings
from raycrawl.core.fetch_settings import FetchSettings


@dataclass(frozen=True)
class OutputSettings:
    """The settings of ``--help``'s group "output and durability" (a part of ``CrawlConfig``)."""

    out: str = setting(
        "crawl-out",
        ("where the output goes: a directory, or a URI such as s3://bucket/prefix (pages/, warc/, stats.json)"),
        group="output and durability",
        metavar="DIR",
        resume="per_run",
    )
    keep_truncated: bool = setting(
        default_of(FetchSettings, "keep_truncated"),
        "keep the first max-body-bytes of a too_large body in the WARC",
        group="output and durability",
    )
    revisit_duplicates: bool = setting(
        default_of(FetchSettings, "revisit_duplicates"),
        (
            "store every page's payload whole, even one this crawl already stored under another URL (by "
            "default such a page is a WARC revisit record naming the first URL)"
        ),
        group="output and durability",
    )
    rollover: float | None = setting(
        default_of(LoopSettings, "rollover"),
        ("output parts by period: pages/PERIOD/ and warc/PERIOD/, a checkpoint as each period ends (1d, 6h)"),
        group="output and durability",
        unit="duration",
        metavar="DURATION",
    )  # output parts by period (core/rollover.py)
    warc: bool = setting(True, "write no WARC files", group="output and durability")
    checkpoint_interval: float = setting(
        default_of(LoopSettings, "checkpoint_interval"),
        "seconds between checkpoints",
        group="output and durability",
        unit="seconds",
    )
    stats_interval: float = setting(
        5.0,
        "seconds between two writes of stats.json (and of the Prometheus gauges)",
        group="output and durability",
        unit="seconds",
        at_least=0.5,
    )
    stats_hosts: int = setting(
        50,
        "per-host rows in stats.json: the busiest hosts (Crawl.hosts() and raycrawl hosts have them all)",
        group="output and durability",
        at_least=0,
    )
    redis_url: str | None = setting(
        None,
        "keep checkpoints in Redis (redis://[:password@]host:port/db)",
        group="output and durability",
        metavar="URL",
        default_text="none: OUT/checkpoints",
        resume="per_run",
    )
    crawl_id: str | None = setting(
        None,
        "name of the crawl in the checkpoint store",
        group="output and durability",
        metavar="NAME",
        default_text="the --out directory's name",
        resume="per_run",
    )
    resume: bool = setting(
        False, "continue the crawl from its last checkpoint", group="output and durability", resume="per_run"
    )
    retry_errors: bool = setting(
        False,
        ("with --resume: crawl again the URLs whose records ended in error (their new records replace the old ones)"),
        group="output and durability",
        resume="per_run",
    )  # with resume: URLs whose records ended in error are crawled again
    retry_budget: bool = setting(
        False,
        "with --retry-errors: the URLs that ended out_of_budget too",
        group="output and durability",
        resume="per_run",
    )  # ... and those that ended out_of_budget
    retry_quarantined: bool = setting(
        False,
        (
            "with --resume: fetch and extract again the pages whose extraction was quarantined (after you "
            "fixed the cause); their new records and items replace the old ones"
        ),
        group="output and durability",
        resume="per_run",
    )  # with resume: pages whose extraction was quarantined are fetched again
    fresh: bool = setting(
        False, "replace an earlier crawl's output in --out", group="output and durability", resume="per_run"
    )
    quiet: bool = setting(False, "no progress bar or progress lines", group="output and durability", resume="per_run")
    max_part_bytes: int = setting(
        default_of(LoopSettings, "max_part_bytes"),
        "a WARC or pages part is closed and stored when its buffer passes this size",
        group="output and durability",
    )
