"""A URL's priority: a score, higher first -- from its depth, the operator's rules, and a function from Python.

    score = base + the weights of every rule whose pattern matches the URL + what its sitemap says of it
            + the score the page that linked to it gave it
    base  = score(url, depth) when CrawlConfig(score=...) gives a function, else -depth (breadth-first)

(a sitemap's ``<priority>`` and ``<lastmod>``: under one depth level, see core/sitemap_hints.py; a page's
``score_links``: see core/link_scores.py). A host's sitemap
files go before its pages, whatever the scores: they list its pages and say which matter.

Rules are ``PATTERN=WEIGHT`` (a regular expression searched in the URL, and a number): from TOML
(``[[priority]]`` tables with ``pattern`` and ``weight``, or a list of strings), ``--priority``, or
``RAYCRAWL_PRIORITY``. Within a host the best-scored URL is fetched first; when more hosts are due than the fetch
capacity takes, the hosts whose best URL scores best are leased first (never before a host's delay allows); and a
full host queue sheds its lowest score first (core/frontier.py). The frontier orders by the negated score.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from raycrawl.core.records import UrlEntry
from raycrawl.core.rules import split_rule, url_pattern

UserScore = Callable[[str, int], float]  # (canonical URL, depth) -> score, higher first
FrontierKey = Callable[[UrlEntry], float]  # lower first
Warn = Callable[[str], None]  # how a failure of the operator's function is said (the shard's actor: once, in its log)


def _silent(message: str) -> None:
    pass


SITEMAPS_FIRST = -1e18  # a sitemap's key (lower first): before any page of its host


def by_depth(entry: UrlEntry) -> float:
    """The default: shallower pages first (breadth-first per host; a sitemap's hint reorders a level), then first
    come first served."""
    if entry.kind != "page":
        return SITEMAPS_FIRST
    return entry.depth - entry.hint - entry.link_score


def parse_rule(text: str) -> tuple[str, float]:
    """``PATTERN=WEIGHT`` (split at the last ``=``: a pattern may hold one) -> (pattern, weight); ValueError says
    what is wrong."""
    pattern, weight = split_rule(text, "PATTERN=WEIGHT", "/news/=5")
    try:
        value = float(weight)
    except ValueError:
        raise ValueError(f"{text!r}: the weight {weight!r} is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"{text!r}: the weight must be a finite number")
    url_pattern(text, pattern)
    return pattern, value


@dataclass(frozen=True, slots=True)
class Priority:
    rules: tuple[tuple[str, float], ...] = ()
    score: UserScore | None = None
    links_scored: bool = False  # the crawl has a score_links function: scores say more than depth

    @classmethod
    def of(cls, rules: Iterable[str], score: UserScore | None = None, links_scored: bool = False) -> Priority:
        return cls(tuple(parse_rule(rule) for rule in rules), score, links_scored)

    def frontier_key(self, warn: Warn | None = None) -> FrontierKey:
        """The frontier's key for an entry (lower first). Without rules or functions: by_depth, as fast as before
        (the frontier ranks hosts by their best URL only when the key is not by_depth). ``warn``: how the score
        function's failures are said (by default, not at all)."""
        if not self.rules and self.score is None and not self.links_scored:
            return by_depth
        compiled = [(re.compile(pattern).search, weight) for pattern, weight in self.rules]
        user, say = self.score, warn or _silent

        def key(entry: UrlEntry) -> float:
            if entry.kind != "page":
                return SITEMAPS_FIRST
            value = -float(entry.depth)
            if user is not None:
                try:
                    value = float(user(entry.url, entry.depth))
                except Exception as exc:  # (the operator's code: a URL it cannot score is scored by depth)
                    say(f"the score function failed on {entry.url[:200]} ({type(exc).__name__}: {exc}); such URLs"
                         " are scored by depth")  # fmt: skip
                    value = -float(entry.depth)
                if not math.isfinite(value):
                    say(f"the score function gave {value} for {entry.url[:200]}; such URLs are scored by depth")
                    value = -float(entry.depth)
            value += entry.hint + entry.link_score
            for search, weight in compiled:
                if search(entry.url) is not None:
                    value += weight
            return -value

        return key
