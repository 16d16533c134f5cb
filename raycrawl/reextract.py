"""Extraction again, from WARC, without fetching (issue 48): ``raycrawl extract OUT --extract SPEC --into DIR``.

A crawl's pages are in its WARC. A changed contract, a new field, a better extractor: ``extract_from_warc`` runs
the same extractor and contract a crawl runs (adapters/extraction.py) over ``read_warc``'s rows, as a Ray Data job
(on the cluster when there is one), and writes what a crawl writes -- ``items/`` and ``rejected/`` Parquet parts,
``committed.json`` listing them, ``stats.json`` with the verdicts -- so ``read_items(DIR)`` reads them. Nothing is
fetched. Which rows are pages is what the crawl said, when ``source`` is a crawl's output (its page records: not
robots.txt, not sitemaps, a 2xx whole); for other WARC, every whole 2xx response but robots.txt.

The extraction runs in parallel, in Ray tasks; the items' lines come back to this process, which types them by one
schema (core/items.py) and writes the parts: items are small beside the pages they came from.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Iterable
from datetime import datetime
from typing import Any

import pyarrow as pa

from raycrawl.adapters.extraction import Extraction
from raycrawl.adapters.items import item_parts, parquet_bytes
from raycrawl.adapters.output import (
    COMMITTED_FILE,
    ITEMS_DIR,
    REJECTED_DIR,
    has_output,
    read_pages,
    write_committed,
    write_stats,
)
from raycrawl.adapters.storage import open_storage
from raycrawl.config import load_config
from raycrawl.core.extract_settings import ExtractSettings
from raycrawl.core.fetch_settings import DEFAULT_TRACKING_PARAMS
from raycrawl.core.items import ColumnType, ItemLine
from raycrawl.core.page import Page
from raycrawl.core.pages import iso_utc
from raycrawl.core.urls import canonicalize
from raycrawl.errors import ConfigError
from raycrawl.warc_dataset import read_warc

PART_LINES = 20_000  # item lines per part written
ONLY = ("quarantined", "rejected")
LINES = pa.schema([("line", pa.binary()), ("verdict", pa.string()), ("rule", pa.string())])


def extract_from_warc(
    source: str | Iterable[str],
    into: str,
    settings: ExtractSettings,
    only: str | None = None,
    filesystem: Any = None,
    fresh: bool = False,
    progress: bool = False,
) -> dict[str, Any]:
    """Extract ``source``'s pages (a crawl's output, or WARC files) into ``into`` with ``settings``; ``only``:
    just the pages the crawl's records judged so ("quarantined", "rejected"). Returns the verdict counts."""
    target = open_storage(into, filesystem)
    if has_output(target) and not fresh:
        raise ConfigError(f"into: {target.show()} holds output already (give another, or --fresh to replace it)")
    pages = _crawl_pages(source, filesystem, only)
    rows = read_warc(source, filesystem)
    lines = rows.map_batches(_Judge, fn_constructor_args=(settings, pages), batch_format="pyarrow",
                             concurrency=(1, 64))  # fmt: skip
    started = time.monotonic()
    verdicts: Counter[str] = Counter()
    rules: Counter[str] = Counter()
    columns: dict[str, ColumnType] = {}
    buffered: list[bytes] = []
    parts: list[str] = []
    conflicts = 0
    for batch in lines.iter_batches(batch_format="pyarrow", batch_size=1000):
        for line, verdict, rule in zip(*(batch.column(n).to_pylist() for n in LINES.names), strict=True):
            if verdict is not None:
                verdicts[verdict] += 1
                if verdict != "accepted":
                    rules[f"{verdict}: {rule}"] += 1
            if line:
                buffered.append(line)
        if len(buffered) >= PART_LINES:
            columns, made = _write(target, buffered, columns, len(parts), parts)
            conflicts += made
            buffered = []
        if progress:
            print(f"\rraycrawl extract: {sum(verdicts.values())} pages judged", end="", file=sys.stderr, flush=True)
    if buffered:
        columns, made = _write(target, buffered, columns, len(parts), parts)
        conflicts += made
    if progress:
        print(file=sys.stderr)
    accepted = verdicts["accepted"]
    summary = {
        "source": source if isinstance(source, str) else list(source),
        "extractor": settings.extractor_name,
        "pages_judged": sum(verdicts.values()),
        "verdicts": dict(verdicts),
        "verdict_rules": dict(rules),
        "accepted": accepted,
        "events": {"item_type_conflicts": conflicts} if conflicts else {},
        "elapsed_s": round(time.monotonic() - started, 3),
        "finished": True,
    }
    write_committed(target, 0, parts)
    write_stats(target, summary)
    return summary


def _write(
    target: Any, lines: list[bytes], columns: dict[str, ColumnType], number: int, parts: list[str]
) -> tuple[dict[str, ColumnType], int]:
    made = item_parts(lines, columns)
    for directory, table in ((ITEMS_DIR, made.accepted), (REJECTED_DIR, made.rejected)):
        if table is not None:
            name = f"{directory}/extract-{number:05d}.parquet"
            target.put(name, parquet_bytes(table))
            parts.append(name)
    return made.columns, made.conflicts


def _crawl_pages(source: str | Iterable[str], filesystem: Any, only: str | None) -> dict[str, str] | None:
    """For a crawl's output: its page records' URLs as requested (WARC-Target-URI) -> canonical (with ``only``, just
    those judged so); None for other WARC (every 2xx response but robots.txt is a page then)."""
    if not isinstance(source, str) or not open_storage(source, filesystem).exists(COMMITTED_FILE):
        if only is not None:
            raise ConfigError("only: needs a crawl's output as the source (its records say which pages were judged so)")
        return None
    wanted: dict[str, str] = {}
    for record in read_pages(source, filesystem):
        if record.get("kind") == "sitemap" or record.get("status") is None:
            continue
        if only is not None and record.get("verdict") != only:
            continue
        wanted[record.get("requested_url") or record["url"]] = record["url"]
    return wanted


class _Judge:
    """A Ray Data worker: the crawl's extractor and contract, made once, run on each row."""

    def __init__(self, settings: ExtractSettings, pages: dict[str, str] | None) -> None:
        self.extraction = Extraction(settings)
        self.settings = settings
        self.pages = pages

    def __call__(self, batch: pa.Table) -> pa.Table:
        out: dict[str, list[Any]] = {"line": [], "verdict": [], "rule": []}
        for row in batch.to_pylist():
            url = self._page_url(row)
            if url is None:
                continue
            page = Page(
                url=url, status=row["status"], body=row["body"], requested_url=row["url"],
                headers=tuple((k, v) for k, v in row["headers"]), content_type=row["content_type"],
            )  # fmt: skip
            judged = self.extraction.judge(page)
            line = b""
            if judged.item is not None or judged.verdict == "quarantined":
                capture = row["refers_to"] if row["record_type"] == "revisit" else row["warc_id"]
                line = ItemLine(
                    url, _iso(row["fetched_at"]), capture, self.extraction.name, self.settings.schema_version,
                    judged.verdict, judged.reason, judged.item,
                ).to_json()  # fmt: skip
            out["line"].append(line)
            out["verdict"].append(judged.verdict)
            out["rule"].append(judged.rule)
        return pa.table(out, schema=LINES)

    def _page_url(self, row: dict[str, Any]) -> str | None:
        """The page's canonical URL, or None when the row is not a page the crawl extracted."""
        status = row["status"]
        if status is None or not 200 <= status < 300 or row["truncated"] or not row["resolved"]:
            return None
        if self.pages is not None:
            return self.pages.get(row["url"])
        if row["url"].split("?", 1)[0].endswith("/robots.txt"):
            return None
        return canonicalize(row["url"], DEFAULT_TRACKING_PARAMS) or row["url"]


def _iso(warc_date: str | None) -> str:
    """A WARC-Date as a crawl's items have fetched_at (UTC, milliseconds)."""
    if not warc_date:
        return ""
    try:
        when = datetime.fromisoformat(warc_date.replace("Z", "+00:00"))
    except ValueError:
        return warc_date
    return iso_utc(when.timestamp())


# --- the command line ----------------------------------------------------------------------------------

SETTINGS = ("extract", "extract_fields", "extract_timeout", "schema_version", "require", "min_chars", "languages",
            "content_types", "accept")  # fmt: skip


def add_command(sub: Any, add_flags: Any) -> None:
    cmd = sub.add_parser(
        "extract",
        help="extract items from a crawl's WARC again, without fetching",
        description="Run an extractor and a content contract over a crawl's WARC (or any WARC files) as a Ray Data"
        " job, writing items/, rejected/ and stats.json to --into as a crawl does. Nothing is fetched.",
    )
    cmd.add_argument("source", nargs="+", metavar="OUT_OR_WARC", help="a crawl's --out, or WARC files/globs")
    cmd.add_argument("--into", required=True, metavar="DIR", help="where the items go (a directory or a URI)")
    cmd.add_argument("--only", choices=ONLY, help="just the pages the crawl's records judged so")
    cmd.add_argument("--fresh", action="store_true", help="replace what --into holds")
    cmd.add_argument("--ray-address", metavar="ADDRESS", help="a running Ray cluster (default: a local Ray)")
    cmd.add_argument("--quiet", action="store_true")
    add_flags(cmd, ("pages into data",), SETTINGS)


def run(args: argparse.Namespace) -> int:
    from raycrawl.ray_runtime import ensure_ray

    given = {name: getattr(args, name) for name in SETTINGS if getattr(args, name, None) is not None}
    given = {k: tuple(v) if isinstance(v, list) else v for k, v in given.items()}
    settings = load_config(given, None, {}).extract_settings()
    if settings is None:
        raise ConfigError("extract: give --extract builtin:article, builtin:meta or module:function (or CSS fields)")
    ensure_ray(args.ray_address)
    sources: str | list[str] = args.source[0] if len(args.source) == 1 else list(args.source)
    summary = extract_from_warc(sources, args.into, settings, args.only, fresh=args.fresh, progress=not args.quiet)
    verdicts = ", ".join(f"{k} {v}" for k, v in sorted(summary["verdicts"].items())) or "none"
    print(f"raycrawl extract: {summary['pages_judged']} pages judged ({verdicts}) in {summary['elapsed_s']} s;"
          f" items in {args.into}")  # fmt: skip
    return 0
