"""What a frontier shard is told (``FrontierSettings``, made from the crawl's config by actors/settings.py), and the
details its terminal records give for a budget or a bound."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from raycrawl.core.politeness import DelayPolicy

HOST_BUDGET = "max_pages_per_host"  # the detail of URLs a host's page budget turned away
ACCEPTED_BUDGET = "max_accepted_per_host"  # ... and of those its accepted-page budget did (issue 47)
SITEMAP_BOUND = "max_sitemaps_per_host"  # ... and of sitemap files past the per-host bound


@dataclass(frozen=True, slots=True)
class FrontierSettings:
    policy: DelayPolicy = field(default_factory=DelayPolicy)
    per_host_concurrency: int = 1
    crawl_delay_policy: Literal["cap", "skip"] = "cap"
    pause_after: int = 3  # a streak of this many 403/451 pauses the host (0: never)
    robots_ttl: float = 24 * 3600.0
    ua_token: str = "raycrawl"
    max_attempts: int = 3
    max_queue_per_host: int = 100_000
    max_queue_total: int = 2_000_000  # (in memory only: with a queue store, the store's disk is the bound)
    workbench: int = 16  # with a queue store: URLs per host kept in memory, the rest stored (core/workbench.py)
    max_pages_per_host: int | None = None  # URLs admitted per host over the whole crawl
    hold_over_budget: bool = True  # past max_pages_per_host: hold URLs for a resume with a larger budget (else end)
    # Pages of a host whose items were accepted (with an extractor): no more are leased than could still be
    # accepted, and once that many were, the host's other URLs are held (or ended) as past max_pages_per_host
    max_accepted_per_host: int | None = None
    lease_ttl: float = 120.0
    seed: int = 0  # for the backoff jitter
    first_slot_spread: float = 0.0  # new hosts' first requests spread over up to this long (core/politeness.py)
    sitemaps: bool = True  # follow robots.txt Sitemap: lines (core/sitemaps.py)
    sitemap_xml: bool = False  # ... and try /sitemap.xml on every host, named there or not
    max_sitemaps_per_host: int = 100  # sitemap files fetched per host in a run; more end as out_of_budget
    # URLs a due host may be leased at once as a run (core/runs.py), sent one after another by one fetch task;
    # with per_host_concurrency 1 only. 1: each URL on its own.
    run_length: int = 16
