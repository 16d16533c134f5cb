"""What a fetch worker needs to know: the fetch section of the crawl's settings (pure data).

Its fields carry the names of the configuration's (``CrawlConfig``), whose defaults are these: a setting is
defined once, here, and ``actors/settings.section`` fills it from the config by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from raycrawl.core.extract_settings import ExtractSettings

# Query parameters that only track the visitor: dropped when URLs are canonicalised (``*`` ends a prefix).
DEFAULT_TRACKING_PARAMS = (
    "utm_*",
    "gclid",
    "dclid",
    "fbclid",
    "msclkid",
    "yclid",
    "igshid",
    "mc_cid",
    "mc_eid",
    "_ga",
    "_gl",
)


RENDER_TIMEOUT = 20.0  # seconds a page's render may take (RenderSettings' too: the config's one setting)


@dataclass(frozen=True, slots=True)
class FetchSettings:
    user_agent: str = "raycrawl/0.1"
    timeout: float = 30.0  # seconds to connect, and between two reads
    fetch_deadline: float = 60.0  # seconds for a whole exchange, however the server dribbles its bytes
    # The latency term of a host's delay, applied between the requests of a run (core/runs.py; the crawl's
    # DelayPolicy settings of these names).
    delay_factor: float = 1.0
    max_delay: float = 60.0
    max_body_bytes: int = 10 * 1024 * 1024
    keep_truncated: bool = False
    revisit_duplicates: bool = True  # a payload stored before under another URL is written as a revisit of it
    max_outlinks: int = 5000
    tracking_params: tuple[str, ...] = DEFAULT_TRACKING_PARAMS
    resolve: tuple[tuple[str, str], ...] = ()  # (name, address) pairs (the config's HOST=IP strings, parsed)
    warc_buffer: str | None = None  # where WARC records wait for the next cut: a directory under the node's temp dir
    item_buffer: str | None = None  # where item lines wait for the next cut (with an extractor; beside the WARC's)
    warc_info: tuple[tuple[str, str], ...] = ()  # the fields of each WARC file's warcinfo record
    allow_private_networks: bool = False
    allow_network: tuple[str, ...] = ()
    # Which pages go to a browser (core/render_rules.py) and how long a render may hold the page's lease
    render: str = "never"
    render_rules: tuple[str, ...] = ()
    render_timeout: float = RENDER_TIMEOUT
    proxies: tuple[str, ...] = field(default=(), repr=False)  # a lease's proxy by number, credentials in (proxy_routes)
    extraction: ExtractSettings | None = None  # items from pages (issue 47); None: no extractor
