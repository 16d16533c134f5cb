"""Crawler traps: URLs that look endless (calendars, session paths, relative-link loops) are rejected before
they reach the frontier, each by a named rule so ``stats.json`` can count rejections per rule."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from raycrawl.core.urls import MAX_URL_LENGTH


@dataclass(frozen=True, slots=True)
class TrapRules:
    max_url_length: int = MAX_URL_LENGTH
    max_path_depth: int = 20  # path segments
    max_repeated_segments: int = 2  # the same segment this many times in a row is fine, once more is a trap

    def rejects(self, canonical_url: str) -> str | None:
        """The name of the first rule the URL breaks, or None if it may be crawled."""
        if len(canonical_url) > self.max_url_length:
            return "url_too_long"
        path = canonical_url.split("/", 3)[3] if canonical_url.count("/") >= 3 else ""
        segments = path.split("?", 1)[0].split("/")
        if len(segments) > self.max_path_depth:
            return "path_too_deep"
        run = 1
        for previous, segment in itertools.pairwise(segments):
            run = run + 1 if segment == previous and segment else 1
            if run > self.max_repeated_segments:
                return "repeated_segment"
        return None
