"""What a sitemap says of its pages -- ``<priority>`` and ``<lastmod>`` -- and what the frontier makes of it (pure).

- **Priority.** A URL's score gets ``(priority - 0.5) * PRIORITY_WEIGHT`` (the protocol's default, 0.5, adds
  nothing), and a page modified lately a little more (``FRESH_BONUS``, halved every ``FRESH_HALF_LIFE`` days of
  age): within a depth, the pages a site says matter and the ones that just changed go first. The bonus stays under
  one depth level (the default score is -depth), so a sitemap reorders a level without overturning breadth-first.
- **Recrawl decision.** A recrawl's URL whose ``lastmod`` is older than its last capture has not changed since,
  by the site's own word: it is not fetched again, and ends as ``skipped_unchanged``, its capture carried on.

A hint reaches a URL's entry wherever it is: queued already (a recrawl's seeds are queued before the sitemap is
read: the entry is scored again, or ends), or on its way through the seen-set (given to the entry it becomes).
Only the pages of the shard that read the sitemap take hints (a sitemap lists its own host's pages, sitemaps.org
section "Sitemap file location"); hints for other hosts' pages are dropped.
"""

from __future__ import annotations

from datetime import datetime

from raycrawl.core.records import Known

# (lastmod: seconds since the epoch, priority: 0.0 to 1.0, changefreq: always ... never, as the file says)
SitemapHint = tuple["float | None", "float | None", "str | None"]

PRIORITY_WEIGHT = 0.8  # priority 1.0: +0.4 to the score; 0.0: -0.4
FRESH_BONUS = 0.1  # a page modified just now: +0.1 (at most 0.5 in all: less than a depth level)
FRESH_HALF_LIFE = 7 * 86400.0
DEFAULT_PRIORITY = 0.5


def score_bonus(hint: SitemapHint, now: float) -> float:
    """What the hint adds to a URL's score (higher first)."""
    lastmod, priority = hint[0], hint[1]
    bonus = ((priority if priority is not None else DEFAULT_PRIORITY) - DEFAULT_PRIORITY) * PRIORITY_WEIGHT
    if lastmod is not None:
        age = max(0.0, now - lastmod)
        bonus += FRESH_BONUS * 0.5 ** (age / FRESH_HALF_LIFE)
    return bonus


def changefreq_of(hint: SitemapHint) -> str | None:
    """The hint's ``<changefreq>`` (what a continuous crawl's first interval may start at: core/revisit_schedule.py)."""
    return hint[2] if len(hint) > 2 else None  # (an older two-part hint has none)


def captured_at(known: Known) -> float | None:
    """When the earlier capture was made (its WARC-Date), or None when the earlier crawl wrote no WARC."""
    if not known.warc_date:
        return None
    try:
        return datetime.fromisoformat(known.warc_date.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def unchanged_since_capture(hint: SitemapHint, known: Known | None) -> bool:
    """Whether the sitemap says the page was last modified before its earlier capture (then it need not be
    fetched again). Without a lastmod, or a capture date to compare it with, the page is fetched."""
    lastmod = hint[0]
    if known is None or lastmod is None:
        return False
    capture = captured_at(known)
    return capture is not None and lastmod < capture
