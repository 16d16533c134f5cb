"""From a fetched page to the links that may join the frontier: redirects, depth, traps and scope.

Pure, and run by the shard that settles each result (core/shard_work.py); what passes is then deduplicated in
one call per seen-set partition for the round and sent to the shards that own the hosts. Every link turned away
is counted in ``dropped`` under the rule that turned it away (``stats.json``'s ``dropped_links``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from raycrawl.core.link_scores import score_of
from raycrawl.core.records import EntryKind, FetchResult, Link
from raycrawl.core.redirects import redirect_problem
from raycrawl.core.scope import ScopePolicy
from raycrawl.core.traps import TrapRules
from raycrawl.core.urls import canonicalize

# url -> (depth, parent, redirect chain, spelling as written, kind, link score) of the first link found to it
Candidates = dict[str, tuple[int, str | None, tuple[str, ...], str | None, EntryKind, float]]
MAX_SITEMAP_NESTING = 2  # robots.txt -> index -> sitemap is 1; an index in an index is 2; deeper is not followed


def seed_links(seeds: Iterable[str], tracking_params: tuple[str, ...]) -> list[Link]:
    """Seeds (spelt as they will be requested: ``api.seed_urls``) as depth-0 links under their canonical URL."""
    links: list[Link] = []
    for requested in seeds:
        url = canonicalize(requested, tracking_params)
        if url is not None:
            links.append((url, 0, None, (), requested if requested != url else None, "page", 0.0))
    return links


def unfollowed_redirect(result: FetchResult, max_redirects: int) -> tuple[str, str] | None:
    """(rule, message) when ``result`` is a redirect that must not be followed (a loop, too long a chain)."""
    if not (result.outlinks and result.status is not None and 300 <= result.status < 400):
        return None
    lease = result.lease
    return redirect_problem(lease.redirects, lease.url, result.outlinks[0], max_redirects)


def children(result: FetchResult, max_depth: int | None, dropped: Counter[str]) -> list[Link]:
    """The links a fetched page (or a redirect's target) adds, at their depth and with the chain that led there."""
    if not result.outlinks or result.status is None or result.status >= 400:
        return []
    parent = result.lease.url
    is_redirect = 300 <= result.status < 400
    kind: EntryKind = "page"
    if result.lease.kind == "sitemap":
        if is_redirect:  # (a redirected sitemap is still a sitemap, at its own level)
            kind, depth = "sitemap", result.lease.depth
        elif result.sitemap is not None and result.sitemap.kind == "index":
            kind, depth = "sitemap", result.lease.depth + 1
            if depth > MAX_SITEMAP_NESTING:
                dropped["sitemap_nesting"] += len(result.outlinks)
                return []
        else:
            depth = 1  # the pages a sitemap lists: one hop from the site's root, wherever the file was found
    else:
        depth = result.lease.depth + (0 if is_redirect else 1)  # a redirect is not a hop away from its page
    if kind == "page" and max_depth is not None and depth > max_depth:
        dropped["max_depth"] += len(result.outlinks)
        return []
    chain = (*result.lease.redirects, parent) if is_redirect else ()
    spelt, scores = result.spellings.get, result.link_scores
    if is_redirect:  # (a redirect's target keeps the score its own link had: the hop is not a page that spoke)
        scores = result.lease.entry.link_score
    if scores is None:
        return [(url, depth, parent, chain, spelt(url), kind, 0.0) for url in result.outlinks]
    return [(url, depth, parent, chain, spelt(url), kind, score_of(scores, url)) for url in result.outlinks]


def screen(links: Iterable[Link], traps: TrapRules, scope: ScopePolicy, dropped: Counter[str]) -> Candidates:
    """The links no trap rule rejects and the scope allows, the first one found for each URL."""
    candidates: Candidates = {}
    for url, depth, parent, chain, requested, kind, link_score in links:
        if url in candidates:
            continue
        trap = traps.rejects(url)
        if trap is not None:
            dropped[trap] += 1
        elif not scope.allows(url):
            dropped["out_of_scope"] += 1
        else:
            candidates[url] = (depth, parent, chain, requested, kind, link_score)
    return candidates
