"""``raycrawl status|hosts|pause|resume|stop|wait|add-seeds|pause-host|resume-host|set-delay|list``: a running crawl,
operated from any machine that reaches its Ray cluster, by its crawl id (``Crawl.attach``).

Output is for people, or with ``--json`` one JSON document for scripts. Exit codes: 0 done; 2 a bad argument;
3 the Ray cluster cannot be reached; 4 no running crawl of that id; 5 the crawl has no such host.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from raycrawl.core.revisit_schedule import format_duration
from raycrawl.errors import ConfigError, RaycrawlError, UnknownHost
from raycrawl.progress import tasks_text

COMMANDS = {
    "list": "the crawls running on the cluster",
    "status": "a running crawl's progress (an ended one: its final summary)",
    "hosts": "a running crawl's hosts: queue, in flight, delay, requests",
    "pause": "start no new requests (fetches under way finish); queued URLs wait",
    "resume": "undo pause",
    "stop": "stop after a checkpoint (queued URLs stay for --resume), and wait for the crawl to end",
    "wait": "wait for a crawl to end (a detached one too, after its end) and print its summary",
    "add-seeds": "crawl these URLs too, as seeds",
    "pause-host": "send no more requests to a host (its URLs stay queued)",
    "resume-host": "undo pause-host",
    "set-delay": "fix a host's delay in seconds ('auto': back to the configured / robots / latency delay)",
}
HOST_COMMANDS = ("pause-host", "resume-host", "set-delay")


def add_commands(sub: Any) -> None:
    for name, help_text in COMMANDS.items():
        command = sub.add_parser(name, help=help_text, description=help_text[:1].upper() + help_text[1:] + ".")
        if name != "list":
            command.add_argument("--crawl-id", required=True, metavar="ID", help="the crawl's id (its --crawl-id)")
        command.add_argument(
            "--ray-address", metavar="ADDRESS", help="the Ray cluster (default: RAY_ADDRESS, else this machine's)"
        )
        command.add_argument("--json", action="store_true", help="print JSON (for scripts)")
        if name in HOST_COMMANDS:
            command.add_argument("host", metavar="HOST", help="the host as hosts shows it (e.g. example.com:8080)")
        if name == "set-delay":
            command.add_argument("seconds", metavar="SECONDS", help="seconds >= 0, or 'auto'")
        if name == "add-seeds":
            command.add_argument("urls", nargs="+", metavar="URL")
        if name == "hosts":
            command.add_argument("--top", type=int, default=20, metavar="N", help="the N busiest (default 20)")
        if name == "wait":
            command.add_argument("--timeout", type=float, metavar="SECONDS", help="give up after SECONDS (exit 1)")
        if name == "stop":
            command.add_argument("--no-wait", action="store_true", help="ask it to stop, and return at once")


def run(args: argparse.Namespace) -> int:
    from raycrawl.api import Crawl

    if args.command == "list":
        crawls = Crawl.list(args.ray_address)
        _print(args, crawls, lambda: _crawl_lines(crawls))
        return 0
    seconds = _seconds(args.seconds) if args.command == "set-delay" else None
    crawl = Crawl.attach(args.crawl_id, args.ray_address)
    command = args.command
    if command == "status":
        status = crawl.status()
        _print(args, status, lambda: [_status_line(args.crawl_id, status)])
    elif command == "hosts":
        rows = sorted(crawl.host_rows(), key=lambda h: (-h.get("requests", 0), -h.get("queued", 0)))[: args.top]
        _print(args, rows, lambda: _host_lines(rows))
    elif command in ("pause", "resume"):
        crawl.pause() if command == "pause" else crawl.unpause()
        _done(args, f"{'paused' if command == 'pause' else 'resumed'} crawl {args.crawl_id}")
    elif command == "stop":
        crawl.stop("stopped by raycrawl stop")
        summary = None if args.no_wait else crawl.wait()
        what = "stopping" if summary is None else f"stopped: {summary.get('records')} records"
        _print(args, {"ok": True, "crawl_id": args.crawl_id, "summary": summary}, lambda: [f"raycrawl: {what}"])
    elif command == "wait":
        return _wait(args, crawl)
    elif command == "add-seeds":
        try:
            added = crawl.add_seeds(args.urls)
        except ValueError as exc:
            raise ConfigError(f"add-seeds: {exc}") from None
        _done(args, f"added {added} seeds to crawl {args.crawl_id}", added=added)
    else:
        known = {
            "pause-host": lambda: crawl.pause_host(args.host, "paused by raycrawl pause-host"),
            "resume-host": lambda: crawl.resume_host(args.host),
            "set-delay": lambda: crawl.set_delay(args.host, seconds),
        }[command]()
        if not known:
            raise UnknownHost(f"crawl {args.crawl_id} has no host {args.host!r} (see `raycrawl hosts`)")
        _done(args, f"{command} {args.host} in crawl {args.crawl_id}")
    return 0


def _wait(args: argparse.Namespace, crawl: Any) -> int:
    """The crawl's summary once it ends, as ``raycrawl crawl`` prints it; 1 if it failed (or did not end in time)."""
    from raycrawl.cli import print_summary

    try:
        summary = crawl.wait(timeout=args.timeout)
    except TimeoutError as exc:
        raise RaycrawlError(f"wait: {exc}") from None
    if summary.get("state") == "failed":
        raise RaycrawlError(f"the crawl {args.crawl_id} failed: {summary.get('error')}")
    if args.json:
        print(json.dumps(summary, default=str))
    else:
        print_summary(summary)
    return 0


def _seconds(text: str) -> float | None:
    if text == "auto":
        return None
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise ConfigError(f"set-delay: SECONDS must be a number >= 0 or 'auto', not {text!r}")
    return value


def _print(args: argparse.Namespace, data: Any, lines: Any) -> None:
    if args.json:
        print(json.dumps(data, default=str))
    else:
        for line in lines():
            print(line)


def _done(args: argparse.Namespace, message: str, **more: Any) -> None:
    _print(args, {"ok": True, "crawl_id": args.crawl_id, **more}, lambda: [f"raycrawl: {message}"])


def _status_line(crawl_id: str, status: dict[str, Any]) -> str:
    state = status.get("state", "?")
    if state == "finished":
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(status.get("outcomes", {}).items())) or "none"
        why = status.get("stop_reason")
        return f"raycrawl: {crawl_id}: finished ({why}): {status.get('records')} records ({outcomes})"
    keys = ("pages", "pages_per_s", "queued", "leased", "hosts_ready", "hosts_paused",
            "scheduled", "due_within_hour", "freshness_lag_s")  # (the last three: a continuous crawl's)  # fmt: skip
    parts = [f"{key.replace('_', ' ')} {status[key]}" for key in keys if key in status]
    parts.append(f"tasks running/wanted/ceiling {tasks_text(status)}")
    return f"raycrawl: {crawl_id}: {state}" + (f": {', '.join(parts)}" if parts else "")


def _host_lines(rows: list[dict[str, Any]]) -> list[str]:
    revisits = any(h.get("revisits") for h in rows)  # (a continuous crawl: its change rates and intervals too)
    more = f" {'revisits':>8} {'changed':>7} {'interval':>9}" if revisits else ""
    lines = [f"{'host':40} {'queued':>8} {'in flight':>9} {'requests':>9} {'delay':>7}{more}  state"]
    for h in rows:
        state = f"paused: {h['paused']}" if h.get("paused") else h.get("closed") or "ok"
        if revisits:
            rate, interval = h.get("change_rate"), h.get("interval")
            more = (f" {h.get('revisits', 0):>8} {'' if rate is None else f'{rate:.0%}':>7}"
                    f" {'' if interval is None else format_duration(interval):>9}")  # fmt: skip
        lines.append(
            f"{str(h.get('host'))[:40]:40} {h.get('queued', 0):>8} {h.get('in_flight', 0):>9} "
            f"{h.get('requests', 0):>9} {h.get('delay', 0):>7.2f}{more}  {state}"
        )
    return lines


def _crawl_lines(crawls: list[dict[str, Any]]) -> list[str]:
    if not crawls:
        return ["raycrawl: no crawl is running on this cluster"]
    return [_status_line(c["crawl_id"], c) for c in crawls]
