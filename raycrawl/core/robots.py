"""robots.txt rules per RFC 9309, from a fetch's status and body.

- 2xx: parse (protego, at least 500 KiB of the file).
- 4xx other than 429, and more than five redirects: the file is "unavailable" (RFC 9309 2.3.1.3): allow all.
- 5xx, 429, and no response at all: the file is "unreachable" (2.3.1.4): nothing may be fetched for now;
  the frontier keeps the host's URLs queued and asks again later (``RobotsRules.unreachable``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from protego import Protego

MAX_ROBOTS_BYTES = 512 * 1024  # RFC 9309 asks parsers to read at least 500 KiB
RobotsVerdict = Literal["parsed", "allow_all", "unreachable"]


def ua_token(user_agent: str) -> str:
    """The product token robots.txt groups are matched against: 'raycrawl' for 'raycrawl/0.1 (+url)'."""
    return user_agent.split("/", 1)[0].split()[0]


@dataclass(frozen=True, slots=True)
class RobotsRules:
    verdict: RobotsVerdict
    status: int | None
    text: str = ""
    crawl_delay: float | None = None
    fetched_at: float = 0.0
    expires_at: float = 0.0
    _parser: Protego | None = None

    @property
    def unreachable(self) -> bool:
        return self.verdict == "unreachable"

    def to_dict(self) -> dict[str, object]:
        return {
            "verdict": self.verdict,
            "status": self.status,
            "text": self.text,
            "crawl_delay": self.crawl_delay,
            "fetched_at": self.fetched_at,
            "expires_at": self.expires_at,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RobotsRules:
        """Rebuild cached rules from a checkpoint (the parsed file is parsed again)."""
        parser = Protego.parse(d["text"]) if d["verdict"] == "parsed" else None
        return cls(d["verdict"], d["status"], d["text"], d["crawl_delay"], d["fetched_at"], d["expires_at"], parser)

    def allows(self, url: str, token: str) -> bool:
        if self.verdict == "allow_all":
            return True
        if self.verdict == "unreachable" or self._parser is None:
            return False
        return bool(self._parser.can_fetch(url, token))


def rules_from_fetch(status: int | None, body: bytes | None, token: str, now: float, ttl: float) -> RobotsRules:
    if status is not None and 200 <= status < 300:
        text = (body or b"")[:MAX_ROBOTS_BYTES].decode("utf-8", errors="replace")
        parser = Protego.parse(text)
        delay = parser.crawl_delay(token)
        crawl_delay = float(delay) if delay is not None and delay >= 0 else None
        return RobotsRules("parsed", status, text, crawl_delay, now, now + ttl, parser)
    if status is not None and (300 <= status < 400 or (400 <= status < 500 and status != 429)):
        return RobotsRules("allow_all", status, fetched_at=now, expires_at=now + ttl)
    return RobotsRules("unreachable", status, fetched_at=now, expires_at=now)
