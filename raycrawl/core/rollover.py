"""Output by period (``--rollover``): a months-long crawl's parts grouped by when their records were made, so each
period can be read, copied or deleted on its own (pure: no I/O).

Periods are aligned on the epoch (UTC): ``--rollover 1d`` makes days from midnight UTC, ``6h`` quarters of them. A
checkpoint is cut as each period ends, and the parts of a cut go to the directory of the period the cut's interval
began in (``pages/2026-12-03/``, ``warc/2026-12-03/``): an interval is within one period but for the few seconds a
cut takes to come to rest.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime


def period_of(t: float, every: float) -> int:
    """Which period ``t`` is in (periods of ``every`` seconds from the epoch)."""
    return math.floor(t / every)


def period_label(t: float, every: float) -> str:
    """The directory name of the period ``t`` is in: its start, to the unit the period's length needs."""
    start = datetime.fromtimestamp(period_of(t, every) * every, UTC)
    if every % 86400 == 0:
        return start.strftime("%Y-%m-%d")
    if every % 3600 == 0:
        return start.strftime("%Y-%m-%dT%HZ")
    if every % 60 == 0:
        return start.strftime("%Y-%m-%dT%H%MZ")
    return start.strftime("%Y-%m-%dT%H%M%SZ")
