"""Strings from the network, made safe to store: valid UTF-8, no control characters, bounded length.

aiohttp hands header values and reason phrases over as ``str`` decoded with ``surrogateescape``: a byte that is
not UTF-8 becomes a lone surrogate, which ``json.dumps(ensure_ascii=False)`` passes through and the UTF-8 file it
is written to then refuses -- one such header used to end a whole crawl. Everything that came from a server goes
through ``clean_text`` before it reaches a record, ``stats.json``, a log line or the notebook API; WARC records
keep the raw bytes instead (``adapters/warc.py``).
"""

from __future__ import annotations

import re
from typing import Any

REPLACEMENT = "\ufffd"
MAX_TEXT = 1000  # characters kept of a header value or message
# C0 and C1 controls and DEL (a terminal escape in a log line is an attack, not text); tab is kept.
_CONTROLS = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def clean_text(value: str | bytes | None, limit: int = MAX_TEXT) -> str | None:
    """``value`` as clean text: undecodable bytes and lone surrogates become U+FFFD, control characters too,
    and at most ``limit`` characters are kept (with ``…`` when cut)."""
    if value is None:
        return None
    if isinstance(value, bytes):
        text = value.decode("utf-8", "replace")
    else:
        try:
            value.encode("utf-8")
            text = value
        except UnicodeEncodeError:
            try:  # bytes that aiohttp escaped: the original bytes, then decoded for real
                text = value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            except UnicodeEncodeError:  # surrogates that are no escape
                text = value.encode("utf-8", "replace").decode("utf-8")
    if _CONTROLS.search(text):
        text = _CONTROLS.sub(REPLACEMENT, text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def clean_value(value: Any) -> Any:
    """Every string inside a JSON-like value (dicts, lists, tuples) cleaned: the last line of defence before a
    record is written, for a string that was not cleaned where it was read."""
    if isinstance(value, str):
        return clean_text(value, limit=len(value) + 1)
    if isinstance(value, dict):
        return {clean_value(k): clean_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean_value(v) for v in value]
    return value


def describe_exception(exc: BaseException, limit: int = 300) -> str:
    """``ClassName: message``, clean and short: what an error record says about an exception."""
    message = clean_text(str(exc), limit) or ""
    name = type(exc).__name__
    return f"{name}: {message}" if message else name
