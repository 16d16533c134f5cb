"""The one grammar of the crawl's per-URL (or per-host) rules: ``PATTERN=VALUE``.

``--priority /news/=5``, ``--revisit-rule /news/=1h``, ``--render-rule /app/=always`` and ``--proxy-rule
'*.example.com=pool'`` are all a pattern and a value around an ``=``. A URL pattern is a regular expression searched
in the URL, and may hold an ``=`` itself (``\\?page=``): such rules split at the last one. A proxy rule's value is a
proxy URL, which may hold one: it splits at the first (its pattern is a host glob, which never does). Each kind reads
its own value (core/priority.py, core/revisit_schedule.py, core/render_rules.py, core/proxy_routes.py); the errors
say the rule as given and what was expected.
"""

from __future__ import annotations

import re


def split_rule(text: str, form: str, example: str, at_first: bool = False) -> tuple[str, str]:
    """(pattern, value) of ``text``, split at its last ``=`` (``at_first``: its first); ValueError showing ``form``
    (e.g. ``PATTERN=WEIGHT``) and an ``example`` when there is no pattern or no value."""
    pattern, sep, value = text.partition("=") if at_first else text.rpartition("=")
    if not sep or not pattern.strip() or not value.strip():
        raise ValueError(f"{text!r}: expected {form}, e.g. {example}")
    return pattern, value.strip()


def url_pattern(text: str, pattern: str) -> re.Pattern[str]:
    """A rule's pattern as a regular expression (ValueError naming the rule when it is not one)."""
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"{text!r}: {pattern!r} is not a valid regular expression ({exc})") from None
