"""The ``raycrawl`` command line.

Exit codes: 0 the crawl finished (or was stopped cleanly); 1 the crawl failed; 2 bad configuration, flags or
seeds; 3 a service (Ray) could not be reached; 6 stopped cleanly on a full disk; 130 interrupted twice (hard stop).
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import signal
import sys
import types
import typing
from collections.abc import Sequence
from typing import Any

from raycrawl import operate, reextract
from raycrawl.adapters.snapshots import redis_url_for_messages
from raycrawl.config import DURATIONS, FIELD_TYPES, PYTHON_ONLY, CrawlConfig, load_named_config
from raycrawl.core.revisit_schedule import format_duration
from raycrawl.errors import RaycrawlError
from raycrawl.progress import Progress
from raycrawl.version import __version__

DISK_FULL = 6  # the exit code of a crawl stopped cleanly because a disk holding queued URLs is full

HELP = {
    "seeds_file": "file with one seed URL per line (# comments allowed)",
    "out": "where the output goes: a directory, or a URI such as s3://bucket/prefix (pages/, warc/, stats.json)",
    "max_part_bytes": "a WARC or pages part is closed and stored when its buffer passes this size",
    "max_pages": "stop after this many pages were fetched (a limit: --resume with a larger one goes on)",
    "leftovers": "what a --max-pages/--time-limit stop does with queued URLs: keep them for --resume,"
    " or record each as out_of_budget (final)",
    "max_depth": "do not follow links more than this many hops from a seed",
    "time_limit": "stop after this many seconds of crawling (worker start-up excluded)",
    "scope": "which links to follow: host (the seeds' hosts), domain (their registered domains), any",
    "allow": "only follow URLs matching this regex (repeatable)",
    "deny": "never follow URLs matching this regex (repeatable; wins over --allow)",
    "tracking_params": "query parameters dropped from URLs, comma-separated fnmatch patterns",
    "delay": "minimum seconds between two requests to one host",
    "delay_factor": "a host's delay is at least this many times its last exchange's duration (0: off)",
    "min_delay": "floor of any host's delay",
    "max_delay": "ceiling of any host's delay",
    "max_crawl_delay": "largest robots.txt Crawl-delay honoured",
    "crawl_delay_policy": "a Crawl-delay over the cap: cap it (and count it) or skip the host",
    "max_retry_after": "longest Retry-After honoured, seconds",
    "backoff_base": "first backoff after a transient failure, doubling per failure in a row",
    "max_backoff": "longest backoff, seconds",
    "pause_after": "pause a host after this many 403/451 in a row",
    "per_host_concurrency": "requests in flight per host",
    "shards": "number of frontier shards",
    "dedup_partitions": "number of seen-set partitions (dedup actors), each owning a share of the fingerprints",
    "dedup": "seen-set: exact (64-bit fingerprints, ~9.6 B/URL) or bloom (smaller, may drop a few URLs)",
    "bloom_capacity": "URLs the Bloom filter is sized for",
    "bloom_error_rate": "the Bloom filter's false-positive rate at capacity",
    "user_agent": "User-Agent header; its product token picks robots.txt groups",
    "allow_private_networks": "allow connecting to private, loopback and link-local addresses (off by default)",
    "allow_network": "allow connecting to this CIDR even if private, e.g. 10.0.0.0/8 (repeatable)",
    "resolve": "pin a host name to an address, HOST=IP (repeatable), like curl --resolve",
    "proxy": "send requests through this proxy: http, https, socks5; a password as ${VAR} (repeatable: a pool)",
    "proxy_file": "a pool of proxies, one URL a line (added to --proxy's)",
    "proxy_rules": "per-host egress, HOST_PATTERN=none|pool|PROXY_URL ... (repeatable; first match wins)",
    "proxy_cooldown": "a proxy that fails 3 times in a row rests this long, doubling each time",
    "render": "hand pages to headless Chromium: never, always, or auto (those that look like a script's shell)",
    "render_rules": "per-URL rendering, URL_PATTERN=always|never|auto (repeatable; first match wins)",
    "render_workers": "render actors at the fewest, a browser each (on nodes with a 'browser' resource if any)",
    "render_workers_max": "the most render actors: the pool grows to this with its queue (0: render_workers)",
    "render_pages": "pages each render actor renders at once",
    "render_timeout": "a page's load and settle, its scripts' requests included, end by this",
    "render_settle": "this long with no request in flight counts as settled",
    "render_max_requests": "requests a rendered page's scripts may make (the rest refused, counted)",
    "render_restart_pages": "a browser is replaced after this many pages",
    "render_max_memory_mb": "... or when its processes hold more than this",
    "render_browser": "Chromium's executable (default: the system's, apt-get install chromium)",
    "render_screenshots": "a PNG of each rendered page, in the WARC as a resource record",
    "ray_address": "address of a running Ray cluster",
    "fetch_batch_size": "URLs per fetch task when enough are due",
    "run_length": "URLs of a due host leased at once and sent one after another by one fetch task (1: one at a time)",
    "max_tasks_in_flight": "fetch tasks running at once",
    "fetch_task_cpus": "CPUs a fetch task reserves",
    "timeout": "connect/read timeout per request, seconds",
    "fetch_deadline": "total seconds one fetch may take, on top of --timeout: cuts off slow drips",
    "max_body_bytes": "largest decoded body read, in bytes; larger ends as too_large",
    "keep_truncated": "keep the first max-body-bytes of a too_large body in the WARC",
    "max_redirects": "redirect hops followed from one URL; more ends as an error with the chain",
    "max_path_depth": "URLs with more path segments are rejected as a likely trap",
    "max_repeated_segments": "a path segment repeated more times in a row is rejected as a trap",
    "max_outlinks": "links taken from one page",
    "max_pages_per_host": "URLs admitted per host; further ones are held for a --resume with a larger budget"
    " (--leftovers record: recorded out_of_budget)",
    "max_attempts": "attempts per URL for transient failures",
    "max_queue_per_host": "queued URLs per host before new ones are shed as out_of_budget",
    "max_queue_total": "with --workbench 0: queued URLs per shard before new ones are shed as out_of_budget",
    "workbench": "queued URLs per host a shard keeps in memory; the rest wait on its node's disk (0: all in memory)",
    "frontier_dir": "where shards keep queued URLs on their node's disk (default: the system's temporary directory)",
    "lease_horizon": "how far ahead (s) a URL may be leased before its host is due",
    "robots_ttl": "seconds a robots.txt is cached",
    "recrawl": "fetch again the URLs an earlier crawl fetched (its --out), asking conditionally; WARC revisit"
    " records for what did not change",
    "priority": "add WEIGHT to the score of URLs matching the regular expression PATTERN (repeatable); higher"
    " scores are fetched first",
    "sitemaps": "read no sitemaps (robots.txt Sitemap: lines, their indexes and files)",
    "sitemap_xml": "also try /sitemap.xml on every host (robots.txt need not name it)",
    "max_sitemaps_per_host": "sitemap files fetched per host in a run; more end as out_of_budget",
    "extract": "make items of pages where they are fetched: builtin:article (title, text, markdown, author, date"
    " ...), builtin:meta (title, description, canonical, hreflang, OpenGraph, JSON-LD), or module:function"
    " (extract(page) -> dict | None, importable on the workers); items go to OUT/items/ (raycrawl.read_items)",
    "extract_fields": "an item field from a CSS selector, NAME=css:SELECTOR[::text|::attr(NAME)] or"
    " NAME=css-all:... (a list of every match)",
    "extract_timeout": "a page's extraction that runs longer is stopped and the page quarantined",
    "schema_version": "the items' schema version, a column of every item (yours to set)",
    "require": "the contract: an accepted item has this field, not empty (else the page is rejected)",
    "min_chars": "the contract: FIELD=N, an accepted item's text field has at least N characters",
    "languages": "the contract: an accepted item's language is one of these (comma-separated, e.g. en,de)",
    "content_types": "the contract: an accepted page's media type is one of these (e.g. text/html)",
    "accept": "the contract: module:function, accept(page, item) -> True or a reason to reject",
    "score_links": "a focused crawl: module:function, score_links(page, item) -> a number for all of the page's"
    " links or {link URL: number}; added to the links' scores (one unit is one level of depth), higher first",
    "follow_rejected": "follow the links of pages the contract rejected (by default they are not followed)",
    "max_accepted": "stop after this many pages were accepted (a limit: --resume with a larger one goes on)",
    "max_accepted_per_host": "pages accepted per host; its further URLs are held for a --resume with a larger"
    " budget (--leftovers record: recorded out_of_budget)",
    "warc": "write no WARC files",
    "revisit_duplicates": "store every page's payload whole, even one this crawl already stored under another URL"
    " (by default such a page is a WARC revisit record naming the first URL)",
    "revisit": "crawl continuously: every page kept is fetched again (conditionally) when due, and the crawl does"
    " not end when its frontier is empty (--time-limit, Ctrl-C or stop end a run; --resume goes on)",
    "revisit_schedule": "adaptive: shorter after a change, longer after none (within --revisit-min/--revisit-max);"
    " fixed: every --revisit-after",
    "revisit_after": "a page's first interval (adaptive) or every interval (fixed): 90s, 10m, 6h, 7d",
    "revisit_min": "shortest adaptive interval",
    "revisit_max": "longest adaptive interval",
    "revisit_rules": "a fixed interval for the URLs matching the regular expression PATTERN, e.g. /news/=1h",
    "seen_ttl": "the seen-set forgets a URL after this long: a link to it found later queues it again (default:"
    " never; with --revisit, twice --revisit-max)",
    "shared_politeness": "share one politeness budget per host with every crawl that names the same: cluster (this"
    " Ray cluster's registry) or redis://... (with crawls anywhere, and other tools)",
    "rollover": "output parts by period: pages/PERIOD/ and warc/PERIOD/, a checkpoint as each period ends (1d, 6h)",
    "checkpoint_interval": "seconds between checkpoints",
    "redis_url": "keep checkpoints in Redis (redis://[:password@]host:port/db)",
    "crawl_id": "name of the crawl in the checkpoint store",
    "resume": "continue the crawl from its last checkpoint",
    "retry_errors": "with --resume: crawl again the URLs whose records ended in error (their new records replace"
    " the old ones)",
    "retry_budget": "with --retry-errors: the URLs that ended out_of_budget too",
    "retry_quarantined": "with --resume: fetch and extract again the pages whose extraction was quarantined (after"
    " you fixed the cause); their new records and items replace the old ones",
    "strict": "a malformed seed is an error instead of a warning",
    "fresh": "replace an earlier crawl's output in --out",
    "quiet": "no progress bar or progress lines",
}


# The flags of `raycrawl crawl`, grouped as an operator looks for them (every CrawlConfig field is in one group).
GROUPS: dict[str, tuple[str, ...]] = {
    "scope and limits": ("seeds_file", "scope", "allow", "deny", "max_depth", "max_pages", "time_limit",
                         "max_pages_per_host", "leftovers", "tracking_params", "strict", "recrawl", "priority",
                         "sitemaps", "sitemap_xml", "max_sitemaps_per_host"),
    "politeness": ("delay", "delay_factor", "min_delay", "max_delay", "max_crawl_delay", "crawl_delay_policy",
                   "max_retry_after", "backoff_base", "max_backoff", "pause_after", "per_host_concurrency",
                   "user_agent", "robots_ttl", "shared_politeness"),
    "output and durability": ("out", "warc", "keep_truncated", "revisit_duplicates", "checkpoint_interval",
                              "max_part_bytes", "rollover", "redis_url", "crawl_id", "resume", "retry_errors",
                              "retry_budget", "retry_quarantined", "fresh", "quiet"),
    "fetching and bounds": ("timeout", "fetch_deadline", "max_body_bytes", "max_redirects", "max_path_depth",
                            "max_repeated_segments", "max_outlinks", "max_attempts", "max_queue_per_host",
                            "max_queue_total", "workbench", "frontier_dir", "allow_private_networks", "allow_network",
                            "resolve"),
    "pages into data": ("extract", "extract_fields", "extract_timeout", "schema_version", "require", "min_chars",
                        "languages", "content_types", "accept", "score_links", "follow_rejected", "max_accepted",
                        "max_accepted_per_host"),
    "proxies": ("proxy", "proxy_file", "proxy_rules", "proxy_cooldown"),
    "rendering": ("render", "render_rules", "render_workers", "render_workers_max", "render_pages", "render_timeout",
                  "render_settle", "render_max_requests", "render_restart_pages", "render_max_memory_mb",
                  "render_browser", "render_screenshots"),
    "continuous crawling": ("revisit", "revisit_schedule", "revisit_after", "revisit_min", "revisit_max",
                            "revisit_rules", "seen_ttl"),
    "cluster": ("ray_address", "shards", "dedup_partitions", "dedup", "bloom_capacity", "bloom_error_rate",
                "fetch_batch_size", "max_tasks_in_flight", "fetch_task_cpus", "lease_horizon", "run_length"),
}  # fmt: skip
# What to give, where the type alone does not say it.
METAVARS = {
    "seeds_file": "FILE", "allow": "REGEX", "deny": "REGEX", "tracking_params": "PATTERNS", "user_agent": "AGENT",
    "out": "DIR", "recrawl": "PREVIOUS_OUT", "priority": "PATTERN=WEIGHT", "redis_url": "URL", "crawl_id": "NAME",
    "allow_network": "CIDR",
    "resolve": "HOST=IP",
    "ray_address": "ADDRESS", "max_body_bytes": "BYTES", "delay_factor": "FACTOR", "bloom_error_rate": "RATE",
    "fetch_task_cpus": "CPUS",
    "revisit_after": "DURATION", "revisit_min": "DURATION", "revisit_max": "DURATION",
    "revisit_rules": "PATTERN=DURATION", "rollover": "DURATION", "seen_ttl": "DURATION",
    "shared_politeness": "cluster|URL",
    "proxy": "URL", "proxy_file": "FILE", "proxy_rules": "HOST_PATTERN=TARGET", "proxy_cooldown": "DURATION",
    "render_rules": "URL_PATTERN=MODE", "render_timeout": "DURATION", "render_settle": "DURATION",
    "render_browser": "PATH", "render_max_memory_mb": "MB",
    "extract": "SPEC", "extract_fields": "NAME=css:SELECTOR", "schema_version": "VERSION", "require": "FIELD",
    "min_chars": "FIELD=N", "languages": "LANGS", "content_types": "TYPES", "accept": "module:function",
    "score_links": "module:function",
}  # fmt: skip
SECONDS = {"time_limit", "delay", "min_delay", "max_delay", "max_crawl_delay", "max_retry_after", "backoff_base",
           "max_backoff", "robots_ttl", "checkpoint_interval", "timeout", "fetch_deadline",
           "lease_horizon", "extract_timeout"}  # fmt: skip

NO_DEFAULT = {"shards": "one per CPU, at least 2", "dedup_partitions": "one per 8 CPUs, at least 1",
              "seen_ttl": "never; with --revisit, twice --revisit-max",
              "crawl_id": "the --out directory's name",
              "ray_address": "RAY_ADDRESS, else a local Ray", "redis_url": "none: OUT/checkpoints"}  # fmt: skip

EPILOG = """examples:
  raycrawl crawl https://example.com/ --out example-out --max-pages 500 --delay 2
  raycrawl crawl --seeds-file seeds.txt --scope domain --max-depth 3 --config crawl.toml --out out
  raycrawl crawl --resume --out out --max-pages 1000      # continue a stopped crawl, with a larger budget

settings: flags > RAYCRAWL_* environment variables > --config TOML file > defaults.
Ctrl-C stops after a checkpoint (queued URLs stay for --resume); a second Ctrl-C aborts.

exit codes:
  0  the crawl finished, or stopped cleanly (Ctrl-C, a budget)
  1  the crawl failed
  2  bad configuration, flags or seeds
  3  a service (Ray, Redis) could not be reached
  4  (status, stop ... --crawl-id ID) no running crawl named ID
  5  (pause-host, resume-host, set-delay) the crawl has no such host
  6  stopped cleanly because a disk holding queued URLs is full (--resume once there is room)
  130 interrupted twice (hard stop)"""


def _metavar(name: str, tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return "{" + ",".join(typing.get_args(tp)) + "}"
    if origin in (types.UnionType, typing.Union):
        tp = next(a for a in typing.get_args(tp) if a is not type(None))
    if name in METAVARS:
        return METAVARS[name]
    if name in SECONDS:
        return "SECONDS"
    return {int: "N", float: "NUMBER", str: "TEXT"}.get(tp, "VALUE")


def _default_text(name: str) -> str:
    value = getattr(CrawlConfig(), name)
    if value is None:
        return "no limit" if name.startswith("max_") or name == "time_limit" else NO_DEFAULT.get(name, "none")
    if isinstance(value, tuple):
        return ",".join(value) if value else "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    if name in DURATIONS:
        return format_duration(value)
    return f"{value:,}" if isinstance(value, int) and value >= 10_000 else str(value)


def _add_config_flags(parser: argparse.ArgumentParser) -> None:
    placed = {name for names in GROUPS.values() for name in names}
    missing = {f.name for f in dataclasses.fields(CrawlConfig)} - placed - {"seeds"} - PYTHON_ONLY
    assert not missing, f"flags without a help group: {missing}"
    add_flags(parser, tuple(GROUPS))


def add_flags(parser: argparse.ArgumentParser, groups: tuple[str, ...], only: tuple[str, ...] | None = None) -> None:
    """The flags of the settings in ``groups`` (of ``only`` those, when given), as ``raycrawl crawl`` has them."""
    for title in groups:
        group = parser.add_argument_group(title)
        for name in GROUPS[title]:
            if only is not None and name not in only:
                continue
            flag = "--" + name.replace("_", "-")
            tp = FIELD_TYPES[name]
            help_text = HELP.get(name, "")
            default = getattr(CrawlConfig(), name)
            if tp is bool and default:  # (on by default: only the way to turn it off is a flag)
                off = "--no-" + name.replace("_", "-")
                group.add_argument(off, dest=name, action="store_false", default=None, help=help_text)
            elif tp is bool:
                group.add_argument(flag, dest=name, action="store_true", default=None, help=help_text)
            elif typing.get_origin(tp) is tuple and name != "tracking_params":
                more = f"{help_text} (repeatable)" if "repeatable" not in help_text else help_text
                group.add_argument(flag, action="append", default=None, metavar=_metavar(name, tp), help=more)
            else:
                shown = f"{help_text} (default: {_default_text(name)})"
                group.add_argument(flag, default=None, metavar=_metavar(name, tp), help=shown)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="raycrawl", description="A polite, durable, distributed web crawler")
    parser.add_argument("--version", action="version", version=f"raycrawl {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    crawl = sub.add_parser(
        "crawl",
        help="crawl from seed URLs",
        description="Crawl from seed URLs, politely, with checkpoints you can --resume from.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    crawl.add_argument("seeds", nargs="*", metavar="URL", help="seed URLs (or --seeds-file)")
    crawl.add_argument("--config", metavar="FILE", help="TOML file with settings (flags and RAYCRAWL_* win over it)")
    _add_config_flags(crawl)
    operate.add_commands(sub)
    reextract.add_command(sub, add_flags)
    demo = sub.add_parser("demo", help="start the built-in test web on 127.0.0.x and crawl it")
    demo.add_argument("--hosts", type=int, default=8)
    demo.add_argument("--pages", type=int, default=60, help="pages per host")
    demo.add_argument("--out", default="raycrawl-demo")
    demo.add_argument("--delay", type=float, default=0.1)
    demo.add_argument("--quiet", action="store_true")
    return parser


def _cli_values(args: argparse.Namespace) -> dict[str, Any]:
    values = {k: v for k, v in vars(args).items() if k in FIELD_TYPES and v is not None}
    if args.seeds:
        values["seeds"] = tuple(args.seeds)
    for key, value in list(values.items()):
        if isinstance(value, list):
            values[key] = tuple(value)
    return values


def continue_command(cfg: CrawlConfig, out_dir: str) -> str:
    """The command that continues this crawl: the crawl's settings travel in its checkpoints, so only where to
    find them is needed (a Redis password is left for the user to put back, never printed)."""
    parts = ["raycrawl", "crawl", "--resume", "--out", shlex.quote(out_dir)]
    if cfg.redis_url:
        parts += ["--redis-url", shlex.quote(redis_url_for_messages(cfg.redis_url))]
    if cfg.crawl_id:
        parts += ["--crawl-id", shlex.quote(cfg.crawl_id)]
    return " ".join(parts)


def print_summary(summary: dict[str, Any], cfg: CrawlConfig | None = None) -> None:
    outcomes = ", ".join(f"{k} {v}" for k, v in sorted(summary.get("outcomes", {}).items())) or "none"
    print(
        f"raycrawl: {summary.get('stop_reason')} after {summary.get('elapsed_s')} s: "
        f"{summary.get('records')} records ({outcomes}); {summary.get('pages_per_s')} pages/s; "
        f"{summary.get('urls_per_task')} URLs per fetch task"
    )
    for host in summary.get("paused_hosts", []):
        print(f"raycrawl: paused host {host['host']}: {host['reason']} (its queued URLs are out_of_budget records)")
    for host in summary.get("closed_hosts", []):
        print(f"raycrawl: gave up on host {host['host']}: {host['reason']}")
    for host in summary.get("crawl_delay_capped_hosts", []):
        print(
            f"raycrawl: warning: {host['host']} asks Crawl-delay {host['crawl_delay']} s; capped to {host['delay']} s"
        )
    print(f"raycrawl: output in {summary.get('out_dir')} (pages/, warc/, committed.json, stats.json)")
    if summary.get("resumable"):
        resume = continue_command(cfg or CrawlConfig(), str(summary["out_dir"]))
        queued = summary.get("left_queued")
        what = f"{queued} URLs still queued" if queued is not None else "URLs still queued"
        scheduled = summary.get("frontier", {}).get("scheduled", 0)
        if scheduled:  # (a continuous crawl's schedule goes on with it)
            what += f" and {scheduled} revisits scheduled"
        if summary.get("stop_reason") == "time limit reached" and cfg is not None and cfg.time_limit:
            resume += f" --time-limit {2 * cfg.time_limit:g}"  # (the crawl's clock goes on where it stopped)
        print(f"raycrawl: stopped with {what}; continue with: {resume}")


def run_crawl(cfg: CrawlConfig, named: frozenset[str] | None = None) -> int:
    from raycrawl.api import Crawl

    crawl = Crawl(cfg, named).start()
    for problem in crawl.seed_problems:
        print(f"raycrawl: skipped seed {problem}", file=sys.stderr)
    progress = Progress(quiet=cfg.quiet, total=cfg.max_pages)
    interrupts = 0

    def on_signal(signum: int, frame: types.FrameType | None) -> None:
        nonlocal interrupts
        interrupts += 1
        if interrupts > 1:
            raise KeyboardInterrupt
        name = signal.Signals(signum).name
        print(f"\nraycrawl: {name}: stopping after a checkpoint (again to abort)", file=sys.stderr)
        crawl.stop(f"stopped by {name}")

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        summary = crawl.wait(progress=progress)
    except KeyboardInterrupt:
        progress.close()
        print("raycrawl: aborted", file=sys.stderr)
        return 130
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    progress.close(final=summary)
    print_summary(summary, crawl.config)
    if summary.get("disk_full"):
        print(
            f"raycrawl: error: a shard's disk is full -- {summary['disk_full']}. The crawl stopped with a checkpoint "
            "and lost nothing: free space there, or give --frontier-dir a larger disk, and --resume.",
            file=sys.stderr,
        )
        return DISK_FULL
    return 0


def run_demo(args: argparse.Namespace) -> int:
    from raycrawl.testing import TestWeb, WebSpec

    spec = WebSpec(hosts=args.hosts, pages_per_host=args.pages)
    with TestWeb(spec) as web:
        print(f"raycrawl demo: test web of {spec.hosts} hosts x {spec.pages_per_host} pages on 127.0.0.x:{web.port}")
        cfg = CrawlConfig(
            seeds=tuple(web.graph.seeds()[:2]),
            out=args.out,
            scope="any",
            delay=args.delay,
            allow_private_networks=True,
            fresh=True,
            quiet=args.quiet,
        )
        return run_crawl(cfg)


def main(argv: Sequence[str] | None = None, **python_only: Any) -> int:
    """``raycrawl`` with ``argv``; ``python_only``: settings no flag can carry (``score=``, ``filesystem=``), for a
    script that runs the CLI with them (``jobs/scored_crawl.py``)."""
    args = build_parser().parse_args(argv)
    try:
        if args.command == "demo":
            return run_demo(args)
        if args.command in operate.COMMANDS:
            return operate.run(args)
        if args.command == "extract":
            return reextract.run(args)
        cfg, named = load_named_config(_cli_values(args), config_file=args.config)
        return run_crawl(cfg.replace(**python_only) if python_only else cfg, named)
    except RaycrawlError as exc:
        print(f"raycrawl: error: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
