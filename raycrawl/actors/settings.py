"""From the crawl configuration to what each part of the crawl needs to know."""

from __future__ import annotations

import dataclasses
import re
from pathlib import PurePosixPath
from typing import Any, TypeVar
from urllib.parse import urlsplit

from raycrawl.adapters.storage import is_uri
from raycrawl.config import CrawlConfig
from raycrawl.core.crawl_loop import LoopSettings
from raycrawl.core.fetch_settings import FetchSettings
from raycrawl.core.frontier_settings import FrontierSettings
from raycrawl.core.politeness import DelayPolicy
from raycrawl.core.priority import Priority
from raycrawl.core.proxy_routes import ProxyPlan
from raycrawl.core.render_jobs import RenderSettings, render_bound
from raycrawl.core.render_rules import RenderRules
from raycrawl.core.revisit_schedule import RevisitPolicy
from raycrawl.core.robots import product_token
from raycrawl.core.settle import RecordRules
from raycrawl.core.shard_work import ShardSetup
from raycrawl.core.traps import TrapRules
from raycrawl.version import __version__


def crawl_id_of(cfg: CrawlConfig, out_dir: str) -> str:
    """The crawl's name in the checkpoint store: --crawl-id, or the last part of the output's path."""
    path = urlsplit(out_dir).path if is_uri(out_dir) else out_dir
    return cfg.crawl_id or PurePosixPath(path.rstrip("/")).name or "crawl"


S = TypeVar("S")
CONFIG_FIELDS = frozenset(f.name for f in dataclasses.fields(CrawlConfig))

# A new host's first request waits up to this long (never more than its delay): see core/politeness.py.
# Measured in the 40-host polite benchmark: 97.2-98.0% of the ideal rate without, 98.1-98.4% with.
FIRST_SLOT_SPREAD = 1.0


def section(cls: type[S], cfg: CrawlConfig, **derived: Any) -> S:
    """A section of the settings (a frozen dataclass of core/) from the config: every field that has a config
    setting of its name takes it; ``derived`` gives the rest that differ from the section's own defaults."""
    given = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cls) if f.name in CONFIG_FIELDS}  # type: ignore[arg-type]
    return cls(**(given | derived))


def loop_settings(cfg: CrawlConfig) -> LoopSettings:
    return section(LoopSettings, cfg, extracting=cfg.extracting)


def frontier_settings(cfg: CrawlConfig) -> FrontierSettings:
    return section(
        FrontierSettings,
        cfg,
        policy=section(DelayPolicy, cfg),
        ua_token=product_token(cfg.user_agent) or "*",  # (config validation refuses an agent without one)
        hold_over_budget=cfg.leftovers == "keep",
        # (a page that may be rendered holds its lease for its render too: adapters/fetcher.py's render budget)
        lease_ttl=cfg.lease_horizon
        + max(4 * cfg.timeout, cfg.fetch_deadline)
        + 60.0
        + (render_bound(cfg.render_timeout) if render_rules(cfg).ever else 0.0),
        first_slot_spread=FIRST_SLOT_SPREAD,
    )


def shard_setup(
    cfg: CrawlConfig, seeds: list[str], shards: int, partitions: int, out_dir: str, crawl_id: str
) -> ShardSetup:
    return ShardSetup(
        frontier=frontier_settings(cfg),
        records=section(RecordRules, cfg, extracting=cfg.extracting),
        traps=section(TrapRules, cfg),
        scope=cfg.scope,
        seeds=tuple(seeds),
        allow=tuple(cfg.allow),
        deny=tuple(cfg.deny),
        shards=shards,
        partitions=partitions,
        out=out_dir,
        filesystem=cfg.filesystem,
        crawl_id=crawl_id,
        priority=Priority.of(cfg.priority, cfg.score, links_scored=cfg.score_links is not None),
        frontier_dir=cfg.frontier_dir,
        revisit=section(RevisitPolicy, cfg),
        seen_ttl=cfg.seen_expiry,
        shared_politeness=cfg.shared_politeness,
    )


def render_rules(cfg: CrawlConfig) -> RenderRules:
    return RenderRules.of(cfg.render, cfg.render_rules)


def render_settings(cfg: CrawlConfig) -> RenderSettings:
    return section(RenderSettings, cfg)


def fetch_settings(
    cfg: CrawlConfig, out_dir: str, warc_buffer: str | None, egress: ProxyPlan | None = None
) -> FetchSettings:
    return section(
        FetchSettings,
        cfg,
        proxies=egress.urls if egress is not None else (),
        resolve=tuple(sorted(cfg.resolve_map().items())),
        warc_buffer=warc_buffer if cfg.warc else None,
        item_buffer=warc_buffer if cfg.extracting else None,
        warc_info=warcinfo_fields(cfg, crawl_id_of(cfg, out_dir)),
        extraction=cfg.extract_settings(),
    )


def warcinfo_fields(cfg: CrawlConfig, crawl_id: str) -> tuple[tuple[str, str], ...]:
    """What opens every WARC file (WARC 1.1 section 6.1): who made it, for which crawl, under which rules."""
    operator = re.search(r"\+\s*([^\s;)]+)", cfg.user_agent)  # "(+https://example.com/bot)" names the operator
    settings = (
        f"scope={cfg.scope} delay={cfg.delay:g}s delay_factor={cfg.delay_factor:g} "
        f"max_depth={cfg.max_depth} max_pages={cfg.max_pages} max_body_bytes={cfg.max_body_bytes} "
        f"per_host_concurrency={cfg.per_host_concurrency}"
    )
    fields = [
        ("software", f"raycrawl/{__version__} (aiohttp)"),
        ("format", "WARC File Format 1.1"),
        ("conformsTo", "http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"),
        ("isPartOf", crawl_id),
        ("http-header-user-agent", cfg.user_agent),
        ("robots", "obey (RFC 9309)"),
        ("description", settings),
    ]
    if operator is not None:
        fields.insert(4, ("operator", operator.group(1)))
    return tuple(fields)
