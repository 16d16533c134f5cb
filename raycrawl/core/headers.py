"""Parsing of the response headers that steer politeness. Never raises: a bad header is treated as absent."""

from __future__ import annotations

import math
from email.utils import parsedate_to_datetime


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Retry-After (RFC 9110 section 10.2.3) as an absolute wall-clock time, or None if absent or malformed.

    Both forms: delay-seconds ("120") and HTTP-date ("Wed, 21 Oct 2026 07:28:00 GMT"). A date in the past
    means "now". Capping absurd values is the caller's policy.
    """
    if not value:
        return None
    text = value.strip()
    if text.isascii() and text.isdigit():  # str.isdigit alone accepts '¹' and other non-ASCII digits
        return now + float(int(text[:12]))  # 12 digits is ~31,000 years: beyond any cap, still a float
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT; a zone-less date is read as such
        from datetime import UTC

        when = when.replace(tzinfo=UTC)
    try:
        ts = when.timestamp()
    except (OverflowError, OSError, ValueError):
        return None
    return max(now, ts) if math.isfinite(ts) else None
