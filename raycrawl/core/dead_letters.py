"""Dead letters: URLs whose records ended in ``error`` (and, if asked, ``out_of_budget``, or whose extraction was
quarantined), taken out of a committed page part to be crawled again with fresh attempts.

The output stays one record per URL: the part is rewritten without those records (a new part replaces it in the
next checkpoint, and the old one is deleted once that checkpoint commits), and each URL's new record is written
when it ends again. Until that checkpoint commits nothing has changed: a crash goes back to the old part, with the
URLs not queued.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field

from raycrawl.core.records import UrlEntry

RETRIED_OUTCOMES = frozenset({"error"})
BUDGET_OUTCOMES = frozenset({"out_of_budget"})
QUARANTINED = frozenset({"quarantined"})  # the verdict --retry-quarantined takes (issue 47)


@dataclass(slots=True)
class DeadLetters:
    kept: list[bytes] = field(default_factory=list)  # the part's other lines, as they were
    entries: list[UrlEntry] = field(default_factory=list)  # the URLs to crawl again, attempts from 0
    outcomes: Counter[str] = field(default_factory=Counter)  # the records taken out, by outcome
    verdicts: Counter[str] = field(default_factory=Counter)  # ... and by verdict, where they had one


def take_dead_letters(part: bytes, outcomes: Collection[str], verdicts: Collection[str] = ()) -> DeadLetters:
    """Split a page part (JSON lines) into the records that stay and the URLs whose records ended in ``outcomes``
    or have a verdict in ``verdicts``."""
    out = DeadLetters()
    for line in part.splitlines(keepends=True):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            out.kept.append(line)  # (not ours to judge: kept as it was)
            continue
        outcome, url, verdict = record.get("outcome"), record.get("url"), record.get("verdict")
        if (outcome not in outcomes and verdict not in verdicts) or not isinstance(url, str):
            out.kept.append(line)
            continue
        requested = record.get("requested_url")
        depth = record.get("depth")
        out.entries.append(
            UrlEntry(
                url,
                depth if isinstance(depth, int) else 0,
                record.get("parent") if isinstance(record.get("parent"), str) else None,
                0,
                (),
                requested if isinstance(requested, str) and requested != url else None,
                "sitemap" if record.get("kind") == "sitemap" else "page",
            )
        )
        out.outcomes[outcome] += 1
        if isinstance(verdict, str):
            out.verdicts[verdict] += 1
    return out
