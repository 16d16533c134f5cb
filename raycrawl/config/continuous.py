"""A continuous crawl: revisits, their schedule, output rolled over.

Each field is a setting, described once (config/setting.py ``setting``).
"""

from __future__ import annotations

from dataclasses import dataclass

from raycrawl.config.setting import (
    default_of,
    setting,
)
from raycrawl.core.revisit_schedule import RevisitPolicy, ScheduleKind


@dataclass(frozen=True)
class ContinuousSettings:
    """The settings of ``--help``'s group "continuous crawling" (a part of ``CrawlConfig``)."""

    # A continuous crawl (core/revisit_schedule.py): every page kept is due again after an interval
    revisit: bool = setting(
        default_of(RevisitPolicy, "revisit"),
        (
            "crawl continuously: every page kept is fetched again (conditionally) when due, and the crawl "
            "does not end when its frontier is empty (--time-limit, Ctrl-C or stop end a run; --resume goes "
            "on)"
        ),
        group="continuous crawling",
    )
    revisit_schedule: ScheduleKind = setting(
        default_of(RevisitPolicy, "revisit_schedule"),
        (
            "adaptive: shorter after a change, longer after none (within --revisit-min/--revisit-max); "
            "fixed: every --revisit-after"
        ),
        group="continuous crawling",
    )
    revisit_after: float = setting(
        default_of(RevisitPolicy, "revisit_after"),
        "a page's first interval (adaptive) or every interval (fixed): 90s, 10m, 6h, 7d",
        group="continuous crawling",
        unit="duration",
        metavar="DURATION",
    )
    revisit_min: float = setting(
        default_of(RevisitPolicy, "revisit_min"),
        "shortest adaptive interval",
        group="continuous crawling",
        unit="duration",
        metavar="DURATION",
    )
    revisit_max: float = setting(
        default_of(RevisitPolicy, "revisit_max"),
        "longest adaptive interval",
        group="continuous crawling",
        unit="duration",
        metavar="DURATION",
    )
    revisit_rules: tuple[str, ...] = setting(
        (),
        "a fixed interval for the URLs matching the regular expression PATTERN, e.g. /news/=1h",
        group="continuous crawling",
        metavar="PATTERN=DURATION",
    )  # PATTERN=DURATION: a fixed interval for the URLs it matches
    # the seen-set forgets a URL after this (core/seen_expiry.py); None: never, or with revisit 2 x revisit_max
    seen_ttl: float | None = setting(
        None,
        (
            "the seen-set forgets a URL after this long: a link to it found later queues it again (default: "
            "never; with --revisit, twice --revisit-max)"
        ),
        group="continuous crawling",
        unit="duration",
        metavar="DURATION",
        default_text="never; with --revisit, twice --revisit-max",
    )
