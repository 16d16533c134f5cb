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
from raycrawl.config import (
    DURATIONS,
    FIELD_TYPES,
    HELP_GROUPS,
    PYTHON_ONLY,
    SETTINGS,
    CrawlConfig,
    load_named_config,
)
from raycrawl.core.revisit_schedule import format_duration
from raycrawl.errors import RaycrawlError
from raycrawl.progress import Progress
from raycrawl.version import __version__

DISK_FULL = 6  # the exit code of a crawl stopped cleanly because a disk holding queued URLs is full

# What --help says of each flag, made from the settings' own descriptions (config/setting.py ``setting(...)``).
HELP = {name: info.help for name, info in SETTINGS.items() if info.help}
# The flags of `raycrawl crawl`, grouped as an operator looks for them (every CrawlConfig field names its group).
GROUPS: dict[str, tuple[str, ...]] = {
    title: tuple(name for name, info in SETTINGS.items() if info.group == title) for title in HELP_GROUPS
}
# What to give, where the type alone does not say it.
METAVARS = {name: info.metavar for name, info in SETTINGS.items() if info.metavar is not None}
SECONDS = {name for name, info in SETTINGS.items() if info.unit == "seconds"}
NO_DEFAULT = {name: info.default_text for name, info in SETTINGS.items() if info.default_text is not None}

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


def print_detached(crawl_id: str, address: str | None) -> None:
    reach = shlex.quote(crawl_id) + (f" --ray-address {shlex.quote(address)}" if address else "")
    print(f"raycrawl: crawl {crawl_id} runs detached on the Ray cluster; this command may end.")
    for verb, what in (("status", "its progress"), ("wait", "wait for its end"), ("stop", "stop it")):
        print(f"raycrawl:   {what + ':':18} raycrawl {verb} --crawl-id {reach}")


def run_crawl(cfg: CrawlConfig, named: frozenset[str] | None = None) -> int:
    from raycrawl.api import Crawl

    crawl = Crawl(cfg, named).start()
    for problem in crawl.seed_problems:
        print(f"raycrawl: skipped seed {problem}", file=sys.stderr)
    if cfg.detach:
        print_detached(crawl.crawl_id, cfg.ray_address)
        return 0
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
