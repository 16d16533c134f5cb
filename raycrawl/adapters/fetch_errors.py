"""What an exception during a fetch means for its URL: the error its record names, whether the frontier tries it
again (transient), and the fault boundary's class when it is none of the kinds a fetch expects.

One map for every way a fetch fails -- aiohttp's client errors, a proxy's refusal (aiohttp-socks raises OSErrors),
the deadline, the address guard, a body that does not decode -- so the fetcher handles a failure in one place.
"""

from __future__ import annotations

import aiohttp

from raycrawl.adapters.address_guard import BlockedAddress
from raycrawl.core.clean import describe_exception
from raycrawl.core.decoding import DecodingError
from raycrawl.core.records import FetchResult


class RedirectFailed(ValueError):
    """A robots.txt redirect hop without a Location that can be followed."""


def fetch_error(exc: Exception, deadline: float) -> tuple[str, bool, str | None]:
    """(error, transient, fault) of an exception a fetch raised; fault is None for the failures a fetch expects."""
    if isinstance(exc, aiohttp.ClientHttpProxyError):  # the proxy refused the tunnel (407: our credentials; 5xx)
        return "ClientHttpProxyError", True, None
    if isinstance(exc, aiohttp.ClientResponseError):  # a response aiohttp's parser refuses: the same next time
        return describe_exception(exc), False, None
    if isinstance(exc, aiohttp.ClientError):  # (aiohttp's connect and read timeouts are TimeoutErrors too)
        return type(exc).__name__, not isinstance(exc, ValueError), None  # (InvalidURL is a ValueError)
    if isinstance(exc, TimeoutError):  # (an OSError: before that case)
        return f"Deadline: not done in {deadline:g} s", True, None
    if isinstance(exc, OSError | ValueError | BlockedAddress):
        error = describe_exception(exc) if isinstance(exc, DecodingError) else type(exc).__name__
        # (a failed robots.txt hop may work later: asked again, as for any unreachable robots.txt)
        return error, isinstance(exc, RedirectFailed) or not isinstance(exc, ValueError | BlockedAddress), None
    # anything else a server's bytes provoke: this URL's error, nothing more
    return describe_exception(exc), False, type(exc).__name__


def fault_result(r: FetchResult, exc: Exception) -> None:
    """The per-URL fault boundary's last resort (docs/architecture.md, invariant 7): an exception while finishing a
    fetched result -- parsing, hashing, extracting, writing -- makes it this URL's error, with nothing it found (no
    links, no verdict, no item). Not tried again: the same bytes would fail the same way."""
    r.error, r.fault, r.transient = describe_exception(exc), type(exc).__name__, False
    r.outlinks, r.spellings = [], {}
    r.verdict = r.verdict_reason = r.verdict_rule = r.item = None
