"""Wall-clock times as the UTC text records and WARC headers carry: the second's text made once a second.

A page's record and its WARC records each write a time; ``datetime.fromtimestamp(at, UTC).isoformat()`` builds a
datetime for each (1.9 us), where the second's text changes once a second (benchmarks/README.md, issue 51).
"""

from __future__ import annotations

import math
import time

_second_text = (-1, "")  # (the second last asked for, its text)


def utc_second_and_micros(at: float) -> tuple[str, int]:
    """("YYYY-MM-DDTHH:MM:SS" of ``at``'s second in UTC, its microseconds), as ``datetime.fromtimestamp(at, UTC)``
    has them: microseconds rounded half to even, a rounding up to the next second carried into it."""
    global _second_text
    second = math.floor(at)
    micros = round((at - second) * 1e6)
    if micros >= 1_000_000:
        second, micros = second + 1, micros - 1_000_000
    cached, text = _second_text  # (one read: another thread may replace it)
    if cached != second:
        text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        _second_text = (second, text)
    return text, micros
