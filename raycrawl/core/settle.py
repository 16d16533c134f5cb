"""What a shard makes of the results a fetch task hands it (pure: no Ray, no I/O).

A fetch task sends each result straight to the shard that leased its URL. The shard acks it (its host's clock
moves, a transient failure may be retried, a lease that expired and was handed out again is stale) and then,
for a result that counts, makes the URL's record and the links it adds. ``settle`` is that second step, with
the per-URL fault boundary: whatever goes wrong with one result becomes that URL's error record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from raycrawl.core.frontier import AckReply
from raycrawl.core.frontier_settings import HOST_BUDGET
from raycrawl.core.outlinks import children, unfollowed_redirect
from raycrawl.core.pages import error_kind, fault_record, fetch_record, terminal_record
from raycrawl.core.records import FETCH_OUTCOMES, FetchResult, Link, Terminal, WarcSpan
from raycrawl.core.stats import CrawlStats


@dataclass(frozen=True, slots=True)
class RecordRules:
    """The settings that shape records and links (config's ``max_redirects`` and ``max_depth``)."""

    max_redirects: int = 10
    max_depth: int | None = None
    extracting: bool = False  # the crawl has an extractor: every record has a verdict (core/contract.py)
    follow_rejected: bool = False  # the links of a page the contract rejected are followed too


@dataclass(slots=True)
class Settled:
    records: list[dict[str, Any]] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    kept: list[WarcSpan] = field(default_factory=list)  # WARC (and item) spans of results that became output
    seen_nodes: set[str] = field(default_factory=set)  # nodes whose buffers hold WARC of this interval
    latencies: list[float] = field(default_factory=list)  # seconds, request to response headers
    visits: list[tuple[FetchResult, dict[str, Any]]] = field(default_factory=list)  # page results and their records


def settle(
    results: list[FetchResult], reply: AckReply, rules: RecordRules, stats: CrawlStats, out: Settled, now: float
) -> None:
    """Records and links of the results the shard's ack ``reply`` accepted, counted in ``stats``, into ``out``
    (``now``: the shard's clock, the time of a record the fault boundary has to make)."""
    stale, retried = set(reply.stale), set(reply.retried)
    for result in results:
        lease_id = result.lease.lease_id
        kept = lease_id not in stale and lease_id not in retried
        span = result.warc
        if span is not None:
            # Its WARC records (and item) stay when the result counts: a page record, or the robots.txt obeyed.
            if kept:
                out.kept.append(span)
            out.seen_nodes.add(span.node)
        item = result.item
        if item is not None:
            if kept:
                out.kept.append(item)
            out.seen_nodes.add(item.node)
        if lease_id in stale:
            stats.events["stale_results"] += 1
        elif lease_id in retried:
            stats.events["retries"] += 1
        elif result.lease.kind == "robots":
            stats.robots_fetches += 1
        else:
            record = page_record(result, rules, stats, out.links, now)
            out.records.append(record)
            out.visits.append((result, record))
            if result.status is not None and result.elapsed_ms:
                out.latencies.append(result.elapsed_ms / 1000)


def page_record(
    result: FetchResult, rules: RecordRules, stats: CrawlStats, links: list[Link], now: float
) -> dict[str, Any]:
    """A fetched URL's record, its counters, and its links added to ``links``."""
    try:
        record = fetch_record(result)
        problem = unfollowed_redirect(result, rules.max_redirects)
        if problem is not None:
            rule, record["error"] = problem
            record["outcome"], result.outlinks = "error", []
            stats.dropped[rule] += 1
        if rules.extracting:
            _judged(result, record, rules, stats)
        page_links = children(result, rules.max_depth, stats.dropped)
    except Exception as exc:
        record = fault_record(result, exc, now)
        result.fault, page_links = type(exc).__name__, []
    links.extend(page_links)
    stats.outcomes[record["outcome"]] += 1
    if rules.extracting and record["outcome"] in FETCH_OUTCOMES:
        stats.note_page(result.verdict == "accepted")
    stats.statuses[str(result.status) if result.status is not None else error_kind(record["error"])] += 1
    stats.bytes += result.size
    stats.fetch_nodes[result.node] += 1
    _count_events(result, stats)
    return record


def _judged(result: FetchResult, record: dict[str, Any], rules: RecordRules, stats: CrawlStats) -> None:
    """The extraction's verdict on the record and in the counters; a rejected page's links dropped (unless
    --follow-rejected)."""
    record["verdict"], record["verdict_reason"] = result.verdict, result.verdict_reason
    if result.verdict is not None:
        stats.verdicts[result.verdict] += 1
        if result.verdict != "accepted":
            stats.verdict_rules[f"{result.verdict}: {result.verdict_rule}"] += 1
    if result.verdict == "rejected" and not rules.follow_rejected and result.outlinks:
        stats.dropped["rejected_page"] += len(result.outlinks)
        result.outlinks = []


def _count_events(result: FetchResult, stats: CrawlStats) -> None:
    """What else the fetch met: a fault caught, a duplicate payload, links capped, a render, a sitemap read."""
    if result.fault is not None:
        stats.faults[result.fault] += 1
    if result.duplicate_of is not None:
        stats.events["duplicate_payloads"] += 1
    if result.links_capped:
        stats.events["outlinks_capped"] += 1
    if result.render is not None:  # (a page handed to a browser: core/render_jobs.py)
        render = result.render
        stats.events["pages_rendered" if render.get("rendered") else "pages_not_rendered"] += 1
        if render.get("rendered") and not render.get("settled"):
            stats.events["renders_unsettled"] += 1
        stats.events["render_requests"] += int(render.get("requests", 0))
        stats.events["render_requests_blocked"] += sum(render.get("blocked", {}).values())
    if result.sitemap is not None:
        stats.events["sitemaps_read"] += 1
        if result.sitemap.over_limit:
            stats.events["sitemaps_over_limit"] += 1
        if result.sitemap.error is not None:
            stats.events["sitemaps_malformed"] += 1


def terminal_records(
    terminals: list[Terminal], now: float, stats: CrawlStats, rules: RecordRules | None = None
) -> list[dict[str, Any]]:
    """Records of URLs that ended inside the shard (robots.txt, a closed host, a budget, a queue bound)."""
    for t in terminals:
        stats.outcomes[t.outcome] += 1
        if t.detail == HOST_BUDGET:
            stats.dropped[HOST_BUDGET] += 1
    records = [terminal_record(t, now) for t in terminals]
    if rules is not None and rules.extracting:
        for record in records:
            record["verdict"] = record["verdict_reason"] = None
    return records
