"""What a page says its links are worth (issue 48: focused crawls): ``score_links(page, item)``'s answer, checked.

A focused crawl fetches first the links of pages that are on its topic: the operator's function sees each fetched
page and its item (None: nothing extracted, or the extraction failed) and gives a number for all of the page's
links, or a table of numbers by link URL (the canonical URLs of ``page.links``; a link it does not name scores 0).
A link's score is added to the score its URL has from depth, ``score=`` and ``--priority`` (core/priority.py): one
unit is one level of depth, so a score of 3 puts a link three levels ahead of its depth. It orders the frontier
within a host, and across hosts when more are due than the fetch capacity takes -- never sooner than politeness
allows (the frontier's order is only ever among the URLs that may go). A URL keeps the score of the first page
found linking to it (as it keeps that page's depth).

Pure: the worker that fetched the page runs the function and ``checked`` (adapters/extraction.py); the shard that
settles the result gives each link its score (core/outlinks.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping
from typing import Any

from raycrawl.core.page import Page
from raycrawl.core.urls import canonicalize

LinkScorer = Callable[[Page, "Mapping[str, Any] | None"], "float | Mapping[str, float]"]
LinkScores = float | dict[str, float]  # one score for every link, or a score per canonical link URL
# The largest score a link takes (a larger one is this): far beyond any depth, yet never ahead of a host's sitemaps,
# which go first whatever the scores (core/priority.py SITEMAPS_FIRST).
MAX_SCORE = 1e12


def checked(value: Any, links: Collection[str], tracking_params: tuple[str, ...] = ()) -> LinkScores:
    """``score_links``'s answer as the crawl keeps it, or ValueError saying what is wrong with it.

    A table's keys are link URLs: the canonical ones of ``page.links``, or any spelling of them (canonicalised
    here); a key that is not one of the page's links is left out (the page does not link there)."""
    if isinstance(value, Mapping):
        links = links if isinstance(links, set | frozenset) else frozenset(links)
        out: dict[str, float] = {}
        for key, score in value.items():
            if not isinstance(key, str):
                raise ValueError(f"a table of scores is keyed by link URL, not {type(key).__name__}")
            url = key if key in links else canonicalize(key, tracking_params)
            if url is not None and url in links:
                number = _number(score, f"the score of {key[:200]}")
                if number:
                    out[url] = number
        return out
    return _number(value, "the score")


def score_of(scores: LinkScores | None, url: str) -> float:
    """The score a page gave its link to ``url``."""
    if scores is None:
        return 0.0
    if isinstance(scores, dict):
        return scores.get(url, 0.0)
    return scores


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{what} is {type(value).__name__}: expected a number, or a table of numbers by link URL")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{what} is {number}: expected a finite number")
    return max(-MAX_SCORE, min(MAX_SCORE, number))
