"""Egress through proxies (issue 34): which proxy of a pool carries a host's requests, and which proxies are resting
after failing (pure: the clock is injected).

- **Sessions**: a host keeps the proxy it was given while that proxy is healthy (sites that tie a session to the
  client's address see one), and a new host takes the healthy proxy carrying the fewest hosts.
- **Cool-down**: a proxy that fails ``strikes`` times in a row -- a connection that could not be made through it, a
  407 (it refused our credentials), or a streak of ban-like answers (403, 429) -- rests for ``cooldown`` seconds,
  doubled each time it is sent to rest again (up to ``MAX_COOLDOWN_FACTOR`` times); its hosts move to the others. A
  success ends the streak. With every proxy resting, the one back soonest is used (requests fail as they would
  through it, and count).
- Politeness is never the pool's business: it stays per target host, whatever proxy carries a request.

Credentials (``http://user:password@proxy:port``) are never shown: ``redact`` is what health reports and logs use.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

Clock = Callable[[], float]
SCHEMES = ("http", "https", "socks5", "socks5h", "socks4")  # a proxy's
Outcome = Literal["ok", "connect_error", "proxy_auth", "banned"]
MAX_COOLDOWN_FACTOR = 16


def redact(proxy: str) -> str:
    """A proxy's name for reports: scheme, host and port only, any user information as ``***``
    (``http://***@host:port``; a key given as the user name is as secret as a password). Never more of the URL than
    that: a URL that does not parse shows its scheme alone, and only a proxy's scheme."""
    scheme = proxy.partition("://")[0] if "://" in proxy else ""
    scheme = scheme if scheme in SCHEMES else "?"
    try:
        parts = urlsplit(proxy)
        host, port = parts.hostname, parts.port
    except ValueError:
        return f"{scheme}://***"
    if not host or userinfo_reparsed(proxy, parts.netloc):
        return f"{scheme}://***"
    netloc = ("***@" if "@" in parts.netloc else "") + (f"[{host}]" if ":" in host else host)
    return f"{scheme}://{netloc}" + (f":{port}" if port is not None else "")


def userinfo_reparsed(url: str, netloc: str) -> bool:
    """An '@' past the URL's netloc: user information holding '/', '#' or '?' unencoded, whose rest was read as the
    path, query or fragment (and its first part as the host)."""
    return "@" in url.partition("://")[2].replace(netloc, "", 1)


def outcome_of(status: int | None, connect_failed: bool) -> Outcome:
    """What an answer says about the proxy that carried it."""
    if connect_failed:
        return "connect_error"
    if status == 407:
        return "proxy_auth"
    if status in (403, 429):
        return "banned"
    return "ok"


@dataclass(slots=True)
class _Proxy:
    url: str
    streak: int = 0  # failures in a row
    rests: int = 0  # times sent to rest
    resting_until: float = 0.0
    requests: int = 0
    failures: int = 0
    hosts: int = 0  # hosts it carries


class ProxyPool:
    def __init__(self, proxies: Sequence[str], strikes: int = 3, cooldown: float = 60.0, clock: Clock = time.time):
        if not proxies:
            raise ValueError("a proxy pool needs at least one proxy")
        self._proxies = [_Proxy(url) for url in dict.fromkeys(proxies)]
        self._by_url = {p.url: p for p in self._proxies}
        self.strikes = strikes
        self.cooldown = cooldown
        self._clock = clock
        self._sessions: dict[str, _Proxy] = {}  # host -> its proxy

    def choose(self, host: str) -> str:
        """The proxy to carry the host's next request."""
        now = self._clock()
        current = self._sessions.get(host)
        if current is not None and current.resting_until <= now:
            return current.url
        healthy = [p for p in self._proxies if p.resting_until <= now]
        chosen = min(healthy, key=lambda p: p.hosts) if healthy else min(self._proxies, key=lambda p: p.resting_until)
        if current is not None:
            current.hosts -= 1
        chosen.hosts += 1
        self._sessions[host] = chosen
        return chosen.url

    def report(self, proxy: str, outcome: Outcome) -> None:
        """How a request through ``proxy`` went."""
        p = self._by_url.get(proxy)
        if p is None:
            return
        p.requests += 1
        if outcome == "ok":
            p.streak = 0
            return
        p.failures += 1
        p.streak += 1
        if p.streak >= self.strikes:
            p.rests += 1
            p.resting_until = self._clock() + self.cooldown * min(2 ** (p.rests - 1), MAX_COOLDOWN_FACTOR)
            p.streak = 0

    def any_healthy(self) -> bool:
        """Some proxy of the pool is not resting now."""
        now = self._clock()
        return any(p.resting_until <= now for p in self._proxies)

    def health(self) -> list[dict[str, Any]]:
        """Each proxy's state, for status(), stats and metrics (credentials redacted)."""
        now = self._clock()
        return [
            {
                "proxy": p.url if p.url.isdigit() else redact(p.url),  # (a router's pools hold proxies' numbers)
                "state": "resting" if p.resting_until > now else "ok",
                "resting_s": round(max(0.0, p.resting_until - now), 1),
                "requests": p.requests,
                "failures": p.failures,
                "rests": p.rests,
                "hosts": p.hosts,
            }
            for p in self._proxies
        ]
