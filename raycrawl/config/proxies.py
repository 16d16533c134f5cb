"""Which proxies carry which hosts' requests.

Each field is a setting, described once (config/setting.py ``setting``).
"""

from __future__ import annotations

from dataclasses import dataclass

from raycrawl.config.setting import (
    setting,
)


@dataclass(frozen=True)
class ProxySettings:
    """The settings of ``--help``'s group "proxies" (a part of ``CrawlConfig``)."""

    # Egress through proxies (core/proxy_routes.py): the default pool, a pool file, and per-host rules
    proxy: tuple[str, ...] = setting(
        (),
        "send requests through this proxy: http, https, socks5; a password as ${VAR} (repeatable: a pool)",
        group="proxies",
        metavar="URL",
    )  # proxy URLs; a password as ${VARIABLE}, from the environment
    proxy_file: str | None = setting(
        None, "a pool of proxies, one URL a line (added to --proxy's)", group="proxies", metavar="FILE"
    )  # one proxy URL a line (read where the crawl starts)
    proxy_rules: tuple[str, ...] = setting(
        (),
        "per-host egress, HOST_PATTERN=none|pool|PROXY_URL ... (repeatable; first match wins)",
        group="proxies",
        metavar="HOST_PATTERN=TARGET",
    )  # HOST_PATTERN=none|pool|PROXY_URL [PROXY_URL ...], first match wins
    proxy_cooldown: float = setting(
        60.0,
        "a proxy that fails 3 times in a row rests this long, doubling each time",
        group="proxies",
        unit="duration",
        metavar="DURATION",
    )  # a proxy failing 3 times in a row rests this long (doubling each time)
