"""The output record of each terminal URL (one line of a pages part)."""

from __future__ import annotations

from typing import Any

from raycrawl.core.clean import describe_exception
from raycrawl.core.records import FetchResult, Outcome, Terminal
from raycrawl.core.revisits import recrawl_outcome
from raycrawl.core.utc_text import utc_second_and_micros


def iso_utc(ts: float) -> str:
    """A record's time: UTC to the millisecond (``datetime.isoformat(timespec="milliseconds")``: truncated)."""
    text, micros = utc_second_and_micros(ts)
    return f"{text}.{micros // 1000:03d}Z"


def fetch_record(result: FetchResult) -> dict[str, Any]:
    lease = result.lease
    # A response counts as fetched unless it was a transient failure on the last attempt (a 503 that stayed).
    fetched = result.status is not None and result.error is None and not result.transient
    outcome: Outcome = "fetched" if fetched else "error"
    if fetched and result.truncated and lease.kind == "page":
        outcome = "too_large"
    known = lease.entry.known
    again = recrawl_outcome(result.status, known, result.sha256) if outcome == "fetched" else None
    outcome = again or outcome
    record: dict[str, Any] = {
        "url": lease.url,
        "requested_url": lease.request_url,
        "final_url": result.final_url or lease.url,
        "status": result.status,
        "outcome": outcome,
        "depth": lease.depth,
        "parent": lease.parent,
        "fetched_at": iso_utc(result.responded_at or result.sent_at),
        "elapsed_ms": result.elapsed_ms,
        "content_type": result.content_type,
        "bytes": result.size,
        "sha256": result.sha256,
        "outlinks": result.outlinks,
        "attempts": lease.attempts + 1,
        "error": result.error or ("body over max_body_bytes, not parsed" if outcome == "too_large" else None),
    }
    # What a later recrawl asks with, and refers its revisit records to. A revisit stands for the earlier
    # capture (a 304 has no body of its own): it carries that capture on, so revisits all point at a full one.
    revisited = known if again in ("not_modified", "unchanged") else None
    if result.etag or result.last_modified or revisited is not None:
        record["etag"] = result.etag or (revisited.etag if revisited else None)
        record["last_modified"] = result.last_modified or (revisited.last_modified if revisited else None)
    if revisited is not None:
        record["sha256"] = revisited.sha256
        record["warc_id"], record["warc_date"] = revisited.warc_id, revisited.warc_date
        if revisited.warc_uri:
            record["duplicate_of"] = revisited.warc_uri
    elif result.warc_id is not None:
        # (a duplicate's are its payload's first capture, under the URL ``duplicate_of`` names: core/captures.py)
        record["warc_id"], record["warc_date"] = result.warc_id, result.warc_date
    if result.duplicate_of is not None:
        record["duplicate_of"] = result.duplicate_of
    if result.render is not None:  # (handed to a browser: what it gave, core/render_jobs.py)
        record["render"] = result.render
    if lease.kind == "sitemap":
        record["kind"] = "sitemap"
        read = result.sitemap
        if read is not None:  # (a response that was not a 2xx has no file to read)
            record["sitemap"] = {"format": read.kind, "entries": read.entries, "urls": len(result.outlinks),
                                 "over_limit": read.over_limit, "error": read.error}  # fmt: skip
    return record


def terminal_record(terminal: Terminal, now: float) -> dict[str, Any]:
    entry = terminal.entry
    record: dict[str, Any] = {
        "url": entry.url,
        "requested_url": entry.request_url,
        "final_url": None,
        "status": None,
        "outcome": terminal.outcome,
        "depth": entry.depth,
        "parent": entry.parent,
        "fetched_at": iso_utc(now),
        "elapsed_ms": None,
        "content_type": None,
        "bytes": 0,
        "sha256": None,
        "outlinks": [],
        "attempts": entry.attempts,
        "error": terminal.detail,
    }
    known = entry.known
    if terminal.outcome == "skipped_unchanged" and known is not None:
        # Not fetched: the earlier capture stands, and is carried on for the next recrawl (as a revisit's is).
        record.update(etag=known.etag, last_modified=known.last_modified, sha256=known.sha256,
                      warc_id=known.warc_id, warc_date=known.warc_date, error=None)  # fmt: skip
        if known.warc_uri:
            record["duplicate_of"] = known.warc_uri
    return record


def fault_record(result: FetchResult, exc: BaseException, now: float) -> dict[str, Any]:
    """The record of a URL whose result could not be turned into one (the per-URL fault boundary's last resort):
    an ``error`` that names the exception, with only what is certain about the URL."""
    record = terminal_record(Terminal(result.lease.entry, "error", describe_exception(exc)), now)
    record["status"] = result.status if isinstance(result.status, int) else None
    record["attempts"] = result.lease.attempts + 1  # (the fetch that came back was an attempt)
    return record


def error_kind(error: str | None) -> str:
    """What ``stats.json`` counts an error under: its kind (the text before the first ``:``), so that messages
    carrying details never make the table grow with every URL."""
    return (error or "unknown").split(":", 1)[0]
