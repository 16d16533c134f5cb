"""Continuous crawling: when a fetched URL is due again (pure: no Ray, no clock of its own).

With ``--revisit`` every URL whose fetch gave a page to keep (a 2xx, or a revisit's ``not_modified`` /
``unchanged``) is scheduled again. Its interval is, in order:

1. the interval of the first ``[[revisit]]`` rule whose pattern (a regular expression searched in the URL) matches:
   fixed, whatever the page does;
2. with the ``fixed`` schedule, ``--revisit-after``;
3. with the ``adaptive`` schedule (the default), the URL's last interval, shortened after a change and lengthened
   after ``not_modified`` / ``unchanged`` -- Nutch's ``AdaptiveFetchSchedule`` rule (x(1 - DEC_RATE) after a
   change, x(1 + INC_RATE) without one, 0.2 and 0.4) -- always within ``--revisit-min`` .. ``--revisit-max``. A URL
   fetched for the first time starts at what its sitemap's ``<changefreq>`` says, else at how long its ``<lastmod>``
   says it has not changed, else at ``--revisit-after``.

Over visits the adaptive interval settles where about 60% of visits find a change: between 0.6 and 1.2 times the
page's change period (below it, a visit finds a change with probability interval/period; above, always). Pages that
never change climb to ``--revisit-max`` in about log(max/after)/log(1.4) visits.

URLs that end otherwise are not scheduled: ``gone`` (404/410 of a page captured before) is recorded once, and an
error, a robots.txt denial or a redirect ends its URL as in any crawl (the seen-set's expiry lets a link found
later bring it back: core/seen.py).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Literal

from raycrawl.core.rules import split_rule, url_pattern

ScheduleKind = Literal["adaptive", "fixed"]
Change = Literal["first", "changed", "unchanged"]

INC_RATE = 0.4  # an unchanged page's interval x1.4 (Nutch's db.fetch.schedule.adaptive.inc_rate)
DEC_RATE = 0.2  # a changed page's interval x0.8 (... dec_rate)

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 7 * 86400.0}
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", re.IGNORECASE)

# sitemaps.org <changefreq>: the interval a URL fetched for the first time starts at ("always": as often as allowed)
CHANGEFREQ = {
    "always": 0.0,
    "hourly": 3600.0,
    "daily": 86400.0,
    "weekly": 7 * 86400.0,
    "monthly": 30 * 86400.0,
    "yearly": 365 * 86400.0,
    "never": math.inf,
}


def parse_duration(text: str | float | int) -> float:
    """``90s``, ``10m``, ``6h``, ``7d``, ``2w`` or a bare number of seconds -> seconds; ValueError says why."""
    if isinstance(text, bool):
        raise ValueError(f"{text!r} is not a duration")
    if isinstance(text, int | float):
        seconds = float(text)
    else:
        match = _DURATION.fullmatch(text)
        if match is None:
            raise ValueError(f"{text!r} is not a duration: expected a number and a unit, e.g. 90s, 10m, 6h, 7d")
        seconds = float(match.group(1)) * _UNITS[(match.group(2) or "s").lower()]
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"{text!r} is not a duration: expected a finite number of seconds >= 0")
    return seconds


def format_duration(seconds: float) -> str:
    """The largest whole unit that says ``seconds`` within 1% (``format_duration(90) == "90s"``, 3600 -> ``1h``)."""
    for unit, size in (("w", 7 * 86400.0), ("d", 86400.0), ("h", 3600.0), ("m", 60.0)):
        if seconds >= size and abs(seconds / size - round(seconds / size)) * size <= seconds / 100:
            return f"{round(seconds / size)}{unit}"
    return f"{seconds:g}s"


def parse_rule(text: str) -> tuple[str, float]:
    """``PATTERN=DURATION`` (split at the last ``=``) -> (pattern, seconds); ValueError says what is wrong."""
    pattern, duration = split_rule(text, "PATTERN=DURATION", "/news/=1h")
    url_pattern(text, pattern)
    return pattern, parse_duration(duration)


@dataclass(frozen=True, slots=True)
class RevisitPolicy:
    """How a crawl schedules its URLs again (named as the crawl's settings: config/ takes these defaults)."""

    revisit: bool = False
    revisit_schedule: ScheduleKind = "adaptive"
    revisit_after: float = 86400.0  # a first interval (adaptive), or every interval (fixed)
    revisit_min: float = 3600.0
    revisit_max: float = 30 * 86400.0
    revisit_rules: tuple[str, ...] = ()  # PATTERN=DURATION, first match wins (a fixed interval)
    _compiled: tuple[tuple[re.Pattern[str], float], ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        rules = tuple((re.compile(p), s) for p, s in map(parse_rule, self.revisit_rules))
        object.__setattr__(self, "_compiled", rules)

    def rule_for(self, url: str) -> float | None:
        for pattern, seconds in self._compiled:
            if pattern.search(url):
                return float(seconds)
        return None

    def first(self, url: str, changefreq: str | None = None, unchanged_for: float | None = None) -> float:
        """The interval of a URL fetched for the first time: by its sitemap's ``<changefreq>``, else by how long its
        ``<lastmod>`` says it has not changed (``unchanged_for`` seconds: likely to stay so about as long), else
        ``revisit_after`` -- always within the bounds (a rule or a fixed schedule decides alone)."""
        fixed = self.rule_for(url)
        if fixed is not None:
            return fixed
        if self.revisit_schedule == "fixed":
            return self.revisit_after
        if changefreq in CHANGEFREQ:
            return self.bounded(CHANGEFREQ[changefreq])
        if unchanged_for is not None and unchanged_for >= 0:
            return self.bounded(unchanged_for)
        return self.bounded(self.revisit_after)

    def next(self, url: str, previous: float | None, change: Change) -> float:
        """The interval after a visit that found ``change``, from the one that led to it (None: never visited)."""
        fixed = self.rule_for(url)
        if fixed is not None:
            return fixed
        if self.revisit_schedule == "fixed":
            return self.revisit_after
        if previous is None or change == "first" or not math.isfinite(previous) or previous <= 0:
            return self.first(url)
        factor = 1.0 - DEC_RATE if change == "changed" else 1.0 + INC_RATE
        return self.bounded(previous * factor)

    def bounded(self, seconds: float) -> float:
        return min(max(seconds, self.revisit_min), self.revisit_max)


def change_of(outcome: str, had_capture: bool) -> Change:
    """What a visit found: a page fetched before and answered ``not_modified`` / ``unchanged`` did not change."""
    if outcome in ("not_modified", "unchanged"):
        return "unchanged"
    return "changed" if had_capture else "first"


REVISITED_OUTCOMES = frozenset({"fetched", "not_modified", "unchanged"})


def scheduled_again(outcome: str, status: int | None, kind: str) -> bool:
    """Whether a URL's visit keeps it on the schedule: a page with a capture to keep (a 2xx, or its revisit)."""
    if kind != "page" or outcome not in REVISITED_OUTCOMES:
        return False
    return outcome != "fetched" or (status is not None and 200 <= status < 300)
