"""A fetched page handed to the render pool (issue 35), from the fetch worker's side: whether its lease may take a
render's time, whether the rules send it to a browser (``auto``: when it looks like a script's shell), and the
rendered DOM's links added after the page's own. The pool is actors/render.py; the browser adapters/browser.py.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from raycrawl.adapters.exchange import Exchange
from raycrawl.core.clean import describe_exception
from raycrawl.core.decoding import TRANSFER_HEADERS
from raycrawl.core.fetch_settings import FetchSettings
from raycrawl.core.links import decode_html, extract_links
from raycrawl.core.media_types import is_html
from raycrawl.core.records import Lease
from raycrawl.core.render_jobs import RenderJob, RenderOutcome, render_bound
from raycrawl.core.render_rules import RenderRules, looks_like_shell
from raycrawl.core.runs import gap_after


def render_budget(lease: Lease, settings: FetchSettings, rules: RenderRules) -> float:
    """How much longer than a fetch this lease may take (with a render pool): a render's bound, when its page may
    be rendered."""
    if lease.kind != "page" or rules.mode_for(lease.request_url) == "never":
        return 0.0
    return render_bound(settings.render_timeout)


async def maybe_render(
    ex: Exchange, s: FetchSettings, rules: RenderRules, renderer: Callable[[RenderJob], Awaitable[RenderOutcome]]
) -> None:
    """Hand the page to the render pool if the rules say so (``auto``: if it looks like a script's shell),
    with the response as fetched; the host's clock then counts from when the render ended (its scripts'
    requests went to the host, each after the delay: core/render_jobs.py)."""
    r = ex.result
    if r.error is not None or r.status is None or not 200 <= r.status < 300 or r.truncated:
        return
    lease = r.lease
    mode = rules.mode_for(lease.request_url)
    if mode == "never" or not is_html(r.content_type, ex.body[:512]):
        return
    because = "render: always"
    if mode == "auto":
        ex.html = decode_html(ex.body, r.content_type)
        verdict = looks_like_shell(ex.html)
        if not verdict.shell:
            return
        because = f"looks like a shell: {verdict.reason}"
    headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in ex.raw_headers]
    job = RenderJob(
        lease.request_url, r.status, ex.reason, [(k, v) for k, v in headers if k.lower() not in TRANSFER_HEADERS],
        ex.body, r.ended_at + gap_after(lease.gap, s.delay_factor, s.max_delay, r.ended_at - r.sent_at),
        lease.gap, s.delay_factor, s.max_delay, lease.proxy,  # (its scripts' requests go the page's way)
    )  # fmt: skip
    try:
        async with asyncio.timeout(render_bound(s.render_timeout)):
            outcome = await renderer(job)
    except TimeoutError:
        outcome = RenderOutcome(reason=f"no render within {render_bound(s.render_timeout):g} s")
    except Exception as exc:  # (the pool's own failure: the page stays as fetched)
        outcome = RenderOutcome(reason=f"render failed: {describe_exception(exc)}")
    outcome.because = because
    ex.render = outcome
    # The host's clock counts from the render's end: whatever its scripts sent was before.
    r.held_until = time.time()


def add_rendered_links(ex: Exchange, s: FetchSettings) -> None:
    """The rendered DOM's links after the fetched page's own (those first, as they were), and the record's
    account of the render."""
    r, render = ex.result, ex.render
    assert render is not None
    r.render = render.summary()
    if render.html is None:
        return
    links = extract_links(render.html, r.lease.request_url, s.tracking_params, s.max_outlinks)
    known = set(r.outlinks)
    for url in links.urls:
        if url not in known and len(r.outlinks) < s.max_outlinks:
            known.add(url)
            r.outlinks.append(url)
            if url in links.spellings:
                r.spellings[url] = links.spellings[url]
    r.links_capped = r.links_capped or links.capped
    r.render["outlinks"] = len(links.urls)
