"""The ``raycrawl`` command line.

Exit codes: 0 the crawl finished (or was stopped cleanly); 1 the crawl failed; 2 bad configuration, flags or
seeds; 3 a service (Ray) could not be reached; 130 interrupted twice (hard stop).
"""

from __future__ import annotations

import argparse
import dataclasses
import signal
import sys
import types
import typing
from collections.abc import Sequence
from typing import Any

from raycrawl.config import FIELD_TYPES, CrawlConfig, load_config
from raycrawl.errors import RaycrawlError
from raycrawl.progress import Progress

HELP = {
    "seeds_file": "file with one seed URL per line (# comments allowed)",
    "out": "output directory: pages.jsonl, warc/, stats.json (default: crawl-out)",
    "max_pages": "stop after this many pages were fetched",
    "max_depth": "do not follow links more than this many hops from a seed",
    "time_limit": "stop after this many seconds of crawling (worker start-up excluded)",
    "scope": "which links to follow: host (the seeds' hosts), domain (their registered domains), any",
    "allow": "only follow URLs matching this regex (repeatable)",
    "deny": "never follow URLs matching this regex (repeatable; wins over --allow)",
    "tracking_params": "query parameters dropped from URLs, comma-separated fnmatch patterns",
    "delay": "minimum seconds between two requests to one host (default 1.0)",
    "delay_factor": "a host's delay is at least this many times its last response time (default 1; 0: off)",
    "min_delay": "floor of any host's delay (default 0)",
    "max_delay": "ceiling of any host's delay (default 60)",
    "max_crawl_delay": "largest robots.txt Crawl-delay honoured (default 30)",
    "crawl_delay_policy": "a Crawl-delay over the cap: cap it (and count it) or skip the host",
    "max_retry_after": "longest Retry-After honoured, seconds (default 3600)",
    "backoff_base": "first backoff after a transient failure, doubling per failure in a row (default 2)",
    "max_backoff": "longest backoff, seconds (default 600)",
    "pause_after": "pause a host after this many 403/451 in a row (default 3; 0: never)",
    "per_host_concurrency": "requests in flight per host (default 1)",
    "shards": "number of frontier shards (default: one per CPU, at least 2)",
    "dedup": "seen-set: exact (64-bit fingerprints, ~9.6 B/URL) or bloom (smaller, may drop a few URLs)",
    "bloom_capacity": "URLs the Bloom filter is sized for (default 10,000,000)",
    "bloom_error_rate": "the Bloom filter's false-positive rate at capacity (default 0.001)",
    "user_agent": "User-Agent header; its product token picks robots.txt groups (default raycrawl/0.1)",
    "allow_private_networks": "allow connecting to private, loopback and link-local addresses (off by default)",
    "allow_network": "allow connecting to this CIDR even if private, e.g. 10.0.0.0/8 (repeatable)",
    "resolve": "pin a host name to an address, HOST=IP (repeatable), like curl --resolve",
    "ray_address": "address of a running Ray cluster (default: start a local one, or RAY_ADDRESS)",
    "fetch_batch_size": "URLs per fetch task when enough are due (default 32)",
    "max_tasks_in_flight": "fetch tasks running at once (default 4)",
    "fetch_task_cpus": "CPUs a fetch task reserves (default 0.5: fetching is mostly waiting)",
    "timeout": "connect/read timeout per request, seconds (default 30)",
    "fetch_deadline": "total seconds one fetch may take, on top of --timeout: cuts off slow drips (default 60)",
    "max_body_bytes": "largest decoded body read, in bytes; larger ends as too_large (default 10 MiB)",
    "keep_truncated": "keep the first max-body-bytes of a too_large body in the WARC (default off)",
    "max_redirects": "redirect hops followed from one URL; more ends as an error with the chain (default 10)",
    "max_path_depth": "URLs with more path segments are rejected as a likely trap (default 20)",
    "max_repeated_segments": "a path segment repeated more times in a row is rejected as a trap (default 2)",
    "max_outlinks": "links taken from one page (default 5000)",
    "max_pages_per_host": "requests per host at most; further URLs of the host are rejected (default: no limit)",
    "max_attempts": "attempts per URL for transient failures (default 3)",
    "max_queue_per_host": "queued URLs per host before new ones are shed as out_of_budget",
    "max_queue_total": "queued URLs per shard before new ones are shed as out_of_budget",
    "lease_horizon": "how far ahead (s) a URL may be leased before its host is due (default 0.3)",
    "robots_ttl": "seconds a robots.txt is cached (default 86400)",
    "warc": "write WARC files (default true; --no-warc to skip)",
    "checkpoint_interval": "seconds between checkpoints (default 30; 0: only at the end and on a stop)",
    "redis_url": "keep checkpoints in Redis (redis://[:password@]host:port/db) instead of OUT/checkpoints",
    "crawl_id": "name of the crawl in the checkpoint store (default: the --out directory's name)",
    "resume": "continue the crawl from its last checkpoint",
    "strict": "a malformed seed is an error instead of a warning",
    "fresh": "replace an earlier crawl's output in --out",
    "quiet": "no progress bar or progress lines",
}


def _add_config_flags(parser: argparse.ArgumentParser) -> None:
    for f in dataclasses.fields(CrawlConfig):
        if f.name == "seeds":
            continue
        flag = "--" + f.name.replace("_", "-")
        tp = FIELD_TYPES[f.name]
        origin = typing.get_origin(tp)
        help_text = HELP.get(f.name, "")
        if tp is bool:
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=None, help=help_text)
        elif origin is tuple and f.name != "tracking_params":
            parser.add_argument(flag, action="append", default=None, metavar="VALUE", help=help_text)
        else:
            metavar = "|".join(typing.get_args(tp)) if origin is typing.Literal else None
            if origin in (types.UnionType, typing.Union):
                metavar = None
            parser.add_argument(flag, default=None, metavar=metavar, help=help_text)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="raycrawl", description="A polite, durable, distributed web crawler")
    sub = parser.add_subparsers(dest="command", required=True)
    crawl = sub.add_parser("crawl", help="crawl from seed URLs")
    crawl.add_argument("seeds", nargs="*", metavar="SEED", help="seed URLs")
    crawl.add_argument("--config", help="TOML file with settings (see README for precedence)")
    _add_config_flags(crawl)
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


def print_summary(summary: dict[str, Any]) -> None:
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
    print(f"raycrawl: output in {summary.get('out_dir')} (pages.jsonl, warc/, stats.json)")
    if summary.get("resumable"):
        resume = f"raycrawl crawl --resume --out {summary['out_dir']}"
        print(f"raycrawl: stopped with URLs still queued; continue with: {resume}")


def run_crawl(cfg: CrawlConfig) -> int:
    from raycrawl.api import Crawl

    crawl = Crawl(cfg).start()
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
    progress.close()
    print_summary(summary)
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


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "demo":
            return run_demo(args)
        cfg = load_config(_cli_values(args), config_file=args.config)
        return run_crawl(cfg)
    except RaycrawlError as exc:
        print(f"raycrawl: error: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
