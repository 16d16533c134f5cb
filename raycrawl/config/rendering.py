"""Which pages a browser renders, and the rendering pool's bounds.

Each field is a setting, described once (config/setting.py ``setting``).
"""

from __future__ import annotations

from dataclasses import dataclass

from raycrawl.config.setting import (
    default_of,
    setting,
)
from raycrawl.core.render_jobs import RenderSettings
from raycrawl.core.render_rules import RenderMode


@dataclass(frozen=True)
class RenderingSettings:
    """The settings of ``--help``'s group "rendering" (a part of ``CrawlConfig``)."""

    # Pages that need a browser (core/render_rules.py, core/render_jobs.py): which, and the render pool
    render: RenderMode = setting(
        "never",
        "hand pages to headless Chromium: never, always, or auto (those that look like a script's shell)",
        group="rendering",
    )
    render_rules: tuple[str, ...] = setting(
        (),
        "per-URL rendering, URL_PATTERN=always|never|auto (repeatable; first match wins)",
        group="rendering",
        metavar="URL_PATTERN=MODE",
    )  # URL_PATTERN=always|never|auto, first match wins
    render_workers: int = setting(
        default_of(RenderSettings, "render_workers"),
        "render actors at the fewest, a browser each (on nodes with a 'browser' resource if any)",
        group="rendering",
    )
    render_workers_max: int = setting(
        default_of(RenderSettings, "render_workers_max"),
        "the most render actors: the pool grows to this with its queue (0: render_workers)",
        group="rendering",
    )
    render_pages: int = setting(
        default_of(RenderSettings, "render_pages"), "pages each render actor renders at once", group="rendering"
    )
    render_timeout: float = setting(
        default_of(RenderSettings, "render_timeout"),
        "a page's load and settle, its scripts' requests included, end by this",
        group="rendering",
        unit="duration",
        metavar="DURATION",
    )
    render_settle: float = setting(
        default_of(RenderSettings, "render_settle"),
        "this long with no request in flight counts as settled",
        group="rendering",
        unit="duration",
        metavar="DURATION",
    )
    render_max_requests: int = setting(
        default_of(RenderSettings, "render_max_requests"),
        "requests a rendered page's scripts may make (the rest refused, counted)",
        group="rendering",
        at_least=0,
    )
    render_restart_pages: int = setting(
        default_of(RenderSettings, "render_restart_pages"),
        "a browser is replaced after this many pages",
        group="rendering",
    )
    render_max_memory_mb: int = setting(
        default_of(RenderSettings, "render_max_memory_mb"),
        "... or when its processes hold more than this",
        group="rendering",
        metavar="MB",
    )
    render_browser: str = setting(
        default_of(RenderSettings, "render_browser"),
        "Chromium's executable (default: the system's, apt-get install chromium)",
        group="rendering",
        metavar="PATH",
    )
    render_screenshots: bool = setting(
        default_of(RenderSettings, "render_screenshots"),
        "a PNG of each rendered page, in the WARC as a resource record",
        group="rendering",
    )
