"""Which proxy carries a host's requests (issue 34): the crawl's proxies, its pools and its per-host rules, and each
shard's router that picks a proxy of the right pool for every lease (pure: the clock is injected).

- **Proxies** are URLs: ``http://``, ``https://``, ``socks5://`` (``socks5h://``: names resolved by the proxy),
  ``socks4://``. Credentials come from the environment, written as ``${VAR}`` in the URL
  (``http://crawler:${PROXY_PASSWORD}@proxy:3128``); a password written out in a flag, a TOML file or a
  ``RAYCRAWL_*`` variable is refused (those end up in shell histories, checkpoints and resume commands). A pool file
  (``--proxy-file``, one URL a line) may hold them: it is read where the crawl starts and kept nowhere.
- **Pools**: pool 0 is the default (``--proxy``, repeatable, and the file's); a rule's own list of proxies is a
  pool of its own.
- **Rules** (``--proxy-rules PATTERN=TARGET``, TOML ``[[proxy]]``): the first whose pattern (an fnmatch pattern,
  ``*.example.com``) matches a host's name decides: ``none`` (direct), ``pool`` (the default pool), or proxy URLs
  separated by spaces. A host no rule matches uses the default pool, or goes direct when there is none.
- **The router** (one per shard: a host's shard owns its requests, so a host keeps its proxy across fetch tasks)
  picks within the pool by session stickiness and rests failing proxies (core/proxy_pool.py). Only proxy numbers
  and redacted names reach the shards, leases and reports; the URLs with credentials go to the fetch workers only
  (``ProxyPlan.urls``).
"""

from __future__ import annotations

import fnmatch
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

from raycrawl.core.proxy_pool import SCHEMES, Outcome, ProxyPool, outcome_of, redact, userinfo_reparsed
from raycrawl.core.rules import split_rule

VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
DIRECT = -1  # a lease's proxy when it goes direct
PROXY_AUTH_REFUSED = "ProxyAuthRefused"  # the fetcher's error for a 407 from the proxy (adapters/egress.py)
# Errors (as the fetcher names them) that say the proxy could not be reached or refused the tunnel
CONNECT_ERRORS = frozenset(
    {
        "ClientProxyConnectionError",
        "ClientHttpProxyError",
        "ProxyUnreachable",  # (as the fetcher names them)
        "ProxyConnectionError",
        "ProxyError",
        "ProxyTimeoutError",  # (aiohttp-socks': python-socks' errors)
    }
)


def check_proxy_url(url: str, secrets_allowed: bool = False) -> str | None:
    """What is wrong with a proxy URL (None: nothing). ``secrets_allowed``: a pool file's (a password may be
    written out there)."""
    if not url or any(c.isspace() for c in url):  # (shown redacted too: a pool file's line may be all secret)
        return f"{redact_text(url)!r}: a proxy URL such as http://127.0.0.1:3128 (no spaces)"
    plain = VARIABLE.sub("x", url)
    try:
        parts = urlsplit(plain)
        port = parts.port
    except ValueError:
        return f"{redact_text(url)!r}: not a URL (expected http://HOST:PORT)"
    if parts.scheme not in SCHEMES:
        return f"{redact_text(url)!r}: a proxy's scheme is one of {', '.join(SCHEMES)}"
    if not parts.hostname or port is None:
        return f"{redact_text(url)!r}: a proxy URL names its host and port, e.g. http://127.0.0.1:3128"
    if userinfo_reparsed(plain, parts.netloc) or parts.path not in ("", "/"):
        return (
            f"{redact_text(url)!r}: a proxy URL is scheme://[USER:PASSWORD@]HOST:PORT ('/', '#', '?' and '@' in a "
            "password percent-encoded)"
        )
    password = urlsplit(url).password
    if password and not secrets_allowed and not VARIABLE.fullmatch(password):  # (none: a key as the user name)
        return (
            f"{redact_text(url)!r}: write the password as ${{VARIABLE}} and set that variable in the crawl's "
            f"environment (a password written here ends up in shell histories, checkpoints and logs)"
        )
    return None


def redact_text(url: str) -> str:
    """``redact`` that never fails: a URL too broken to parse shows no more than its scheme."""
    try:
        return redact(url)
    except ValueError:
        return url.split(":", 1)[0] + "://***"


def parse_rule(rule: str) -> tuple[str, tuple[str, ...]]:
    """``PATTERN=TARGET`` as (pattern, targets): ``("none",)``, ``("pool",)`` or proxy URLs."""
    pattern, target = split_rule(rule, "HOST_PATTERN=none|pool|PROXY_URL [PROXY_URL ...]", "*.example.com=pool", True)
    targets = tuple(target.split())
    if len(targets) > 1 and ("none" in targets or "pool" in targets):
        raise ValueError(f"{rule!r}: none and pool stand alone")
    for url in targets if targets[0] not in ("none", "pool") else ():
        problem = check_proxy_url(url)
        if problem:
            raise ValueError(problem)
    return pattern.strip().lower(), targets


def pool_file_lines(text: str) -> list[str]:
    """A pool file's proxies: one URL a line; blank lines and ``#`` comments skipped."""
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def expand(url: str, environ: Mapping[str, str]) -> str:
    """``${VAR}`` replaced by the environment's value, percent-encoded (KeyError: the variable's name, when it is not
    set). Encoded, a password holding ``/``, ``#``, ``?`` or ``@`` stays a password: as it is, it would re-parse the
    URL (its rest taken for the host, the path, the fragment) and show up whole where only the proxy's name should."""
    return VARIABLE.sub(lambda m: quote(environ[m.group(1)], safe=""), url)


@dataclass(frozen=True, slots=True)
class ProxyPlan:
    """The crawl's proxies, as numbers: ``names`` (redacted) for reports, ``urls`` (with credentials) for the fetch
    workers only -- a shard is given ``without_secrets()``."""

    names: tuple[str, ...] = ()
    urls: tuple[str, ...] = field(default=(), repr=False)
    pools: tuple[tuple[int, ...], ...] = ((),)  # pool 0: the default
    rules: tuple[tuple[str, int], ...] = ()  # (host pattern, pool; DIRECT: none)
    cooldown: float = 60.0
    strikes: int = 3

    @classmethod
    def of(
        cls,
        default: Sequence[str],
        rules: Sequence[tuple[str, tuple[str, ...]]],
        cooldown: float = 60.0,
        strikes: int = 3,
    ) -> ProxyPlan:
        """A plan from URLs (credentials expanded): the default pool's, and the rules' parsed."""
        urls: dict[str, int] = {}

        def number(url: str) -> int:
            return urls.setdefault(url, len(urls))

        pools: list[tuple[int, ...]] = [tuple(dict.fromkeys(number(u) for u in default))]
        routed: list[tuple[str, int]] = []
        for pattern, targets in rules:
            if targets == ("none",):
                routed.append((pattern, DIRECT))
            elif targets == ("pool",):
                routed.append((pattern, 0 if pools[0] else DIRECT))
            else:
                pools.append(tuple(dict.fromkeys(number(u) for u in targets)))
                routed.append((pattern, len(pools) - 1))
        names = tuple(_unique_names(list(urls)))
        return cls(names, tuple(urls), tuple(pools), tuple(routed), cooldown, strikes)

    @property
    def used(self) -> bool:
        return bool(self.names)

    def without_secrets(self) -> ProxyPlan:
        return ProxyPlan(self.names, (), self.pools, self.rules, self.cooldown, self.strikes)

    def pool_of(self, hostname: str) -> int:
        """The pool a host's requests go through (DIRECT: none)."""
        name = hostname.lower()
        for pattern, pool in self.rules:
            if fnmatch.fnmatchcase(name, pattern):
                return pool
        return 0 if self.pools[0] else DIRECT


def _unique_names(urls: list[str]) -> list[str]:
    """Redacted names, told apart by a number where redaction made two the same (two passwords of one proxy)."""
    names = [redact_text(url) for url in urls]
    return [name if names.count(name) == 1 else f"{name}#{i}" for i, name in enumerate(names)]


class ProxyRouter:
    """A shard's choice of proxy per host, and what the answers say of each proxy."""

    def __init__(self, plan: ProxyPlan, clock: Callable[[], float] = time.time) -> None:
        self.plan = plan
        self._pools = [
            ProxyPool([str(p) for p in members], plan.strikes, plan.cooldown, clock) if members else None
            for members in plan.pools
        ]
        self._host_pool: dict[str, int] = {}  # host name -> its pool (rules matched once per host)

    def choose(self, hostname: str) -> int:
        pool = self._host_pool.get(hostname)
        if pool is None:
            pool = self._host_pool[hostname] = self.plan.pool_of(hostname)
            if len(self._host_pool) > 1_000_000:  # (bounded: a crawl of millions of hosts matches again)
                self._host_pool.clear()
        chosen = self._pools[pool] if pool != DIRECT else None
        return DIRECT if chosen is None else int(chosen.choose(hostname))

    def report(self, hostname: str, proxy: int, status: int | None, error: str | None) -> Outcome | None:
        """An answer that came through ``proxy``: the pool the host uses learns of it (and the outcome is
        returned, for counts)."""
        if proxy == DIRECT:
            return None
        pool = self._host_pool.get(hostname, self.plan.pool_of(hostname))
        chosen = self._pools[pool] if pool != DIRECT else None
        outcome = "proxy_auth" if error == PROXY_AUTH_REFUSED else outcome_of(status, error in CONNECT_ERRORS)
        if chosen is not None:
            chosen.report(str(proxy), outcome)
        return outcome

    def can_retry_elsewhere(self, hostname: str) -> bool:
        """A request of the host that failed at its proxy may go again without spending an attempt: the target never
        saw it, and the host's pool has a proxy that is not resting (with all of them resting, failures count, so
        a crawl whose proxies are all dead ends)."""
        pool = self._host_pool.get(hostname, self.plan.pool_of(hostname))
        chosen = self._pools[pool] if pool != DIRECT else None
        return chosen is not None and chosen.any_healthy()

    def health(self) -> list[dict[str, Any]]:
        """Per proxy (by name): requests and failures through it, whether it rests now and for how long, and the
        hosts it carries, over every pool it is in."""
        out: dict[int, dict[str, Any]] = {}
        for pool in self._pools:
            for row in pool.health() if pool is not None else ():
                number = int(row["proxy"])
                mine = out.setdefault(number, {"proxy": self.plan.names[number], "state": "ok", "resting_s": 0.0,
                                               "requests": 0, "failures": 0, "rests": 0, "hosts": 0})  # fmt: skip
                for key in ("requests", "failures", "rests", "hosts"):
                    mine[key] += row[key]
                if row["state"] == "resting":
                    mine["state"], mine["resting_s"] = "resting", max(mine["resting_s"], row["resting_s"])
        return [out[n] for n in sorted(out)]


def merge_health(reports: Sequence[Sequence[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Every shard's ``health()`` as one table: counts summed, resting if any shard rests it (the longest rest)."""
    out: dict[str, dict[str, Any]] = {}
    for report in reports:
        for row in report:
            mine = out.get(row["proxy"])
            if mine is None:
                out[row["proxy"]] = dict(row)
                continue
            for key in ("requests", "failures", "rests", "hosts"):
                mine[key] += row[key]
            if row["state"] == "resting":
                mine["state"], mine["resting_s"] = "resting", max(mine["resting_s"], row["resting_s"])
    return list(out.values())
