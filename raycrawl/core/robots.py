"""A host's robots.txt verdict (RFC 9309 2.3.1), from how its fetch ended.

- 2xx, read to its end (or to ``MAX_ROBOTS_BYTES``): parse (``core/robots_txt.py``).
- 4xx other than 429, and more than five redirects: the file is "unavailable" (2.3.1.3): allow all.
- 5xx, 429, and every transport failure — no answer, a reset or timeout in the middle of the body, a body that
  does not decode, a redirect hop that fails or is refused: the file is "unreachable" (2.3.1.4): nothing may be
  fetched for now; the frontier keeps the host's URLs queued and asks again later (``RobotsRules.unreachable``).
  Part of a file is never read as the whole file: a cut before ``Disallow: /`` would allow everything.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from raycrawl.core.robots_txt import RobotsGroup, RobotsLimits, parse_robots, product_token, robots_sitemaps
from raycrawl.core.urls import path_of

MAX_ROBOTS_BYTES = 512 * 1024  # RFC 9309 asks parsers to read at least 500 KiB
RobotsVerdict = Literal["parsed", "allow_all", "unreachable"]
DEFAULT_LIMITS = RobotsLimits()

__all__ = ["MAX_ROBOTS_BYTES", "RobotsRules", "product_token", "rules_from_fetch"]


@dataclass(frozen=True, slots=True)
class RobotsRules:
    verdict: RobotsVerdict
    status: int | None
    crawl_delay: float | None = None
    fetched_at: float = 0.0
    expires_at: float = 0.0
    group: RobotsGroup | None = None  # the rules for our product token (parsed files only)
    sitemaps: tuple[str, ...] = ()  # the file's Sitemap: lines, as written

    @property
    def unreachable(self) -> bool:
        return self.verdict == "unreachable"

    def to_dict(self) -> dict[str, object]:
        return {
            "verdict": self.verdict,
            "status": self.status,
            "crawl_delay": self.crawl_delay,
            "fetched_at": self.fetched_at,
            "expires_at": self.expires_at,
            "group": self.group.to_dict() if self.group is not None else None,
            "sitemaps": list(self.sitemaps),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any], token: str) -> RobotsRules:
        """Cached rules from a checkpoint. One written before the rules were kept per group holds the file's
        text instead: it is parsed again for ``token``."""
        if d.get("group") is not None:
            group: RobotsGroup | None = RobotsGroup.from_dict(d["group"])
        elif d["verdict"] == "parsed":
            group = parse_robots(str(d.get("text", "")).encode("utf-8", "surrogateescape"), token)
        else:
            group = None
        sitemaps = tuple(str(u) for u in d.get("sitemaps", ()))
        return cls(d["verdict"], d["status"], d["crawl_delay"], d["fetched_at"], d["expires_at"], group, sitemaps)

    def allows(self, request_url: str) -> bool:
        """May this URL, spelled as it will be requested, be fetched?"""
        if self.verdict == "allow_all":
            return True
        if self.verdict == "unreachable" or self.group is None:
            return False
        return self.group.allows(path_of(request_url))


def rules_from_fetch(
    status: int | None,
    body: bytes | None,
    token: str,
    now: float,
    ttl: float,
    failed: bool = False,
    truncated: bool = False,
    limits: RobotsLimits = DEFAULT_LIMITS,
) -> RobotsRules:
    """The verdict on a robots.txt fetch. ``failed``: the exchange did not end well (see the module doc).
    ``truncated``: reading stopped at ``MAX_ROBOTS_BYTES`` (parsed up to its last whole line)."""
    if failed or status is None:
        return RobotsRules("unreachable", status, fetched_at=now, expires_at=now)
    if 200 <= status < 300:
        data = (body or b"")[:MAX_ROBOTS_BYTES]
        if truncated or len(body or b"") > MAX_ROBOTS_BYTES:
            end = max(data.rfind(b"\n"), data.rfind(b"\r"))
            if end >= 0:
                data = data[: end + 1]  # a line cut short could say less than it meant
        group = parse_robots(data, token, limits)
        return RobotsRules("parsed", status, group.crawl_delay, now, now + ttl, group, robots_sitemaps(data))
    if 300 <= status < 400 or (400 <= status < 500 and status != 429):
        return RobotsRules("allow_all", status, fetched_at=now, expires_at=now + ttl)
    return RobotsRules("unreachable", status, fetched_at=now, expires_at=now)
