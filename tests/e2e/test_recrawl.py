"""Issue 17, acceptance 1: a crawl, then recrawls of its output (``--recrawl``) as the test web's pages stay, change,
go and appear; asserted on the server's own log (conditional requests, body bytes) and on the WARC read back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import assert_each_url_once, local_config, page_requests, run, warc_records

from raycrawl.adapters.output import read_pages
from raycrawl.config import DEFAULT_TRACKING_PARAMS
from raycrawl.core.revisits import IDENTICAL_PAYLOAD_PROFILE, NOT_MODIFIED_PROFILE
from raycrawl.core.urls import canonicalize
from raycrawl.testing import TestWeb, WebSpec
from raycrawl.testing.versioned import changed, gone, has_validators

pytestmark = pytest.mark.usefixtures("ray_local")
PAGES = 60
DELAY = 0.02


def page_of(path: str) -> int | None:
    path = path.split("?", 1)[0]  # (links spell some pages with a tracking parameter)
    return 0 if path == "/" else int(path[3:]) if path.startswith("/p/") else None


def test_recrawls_ask_conditionally_and_write_revisits_that_point_at_the_first_capture(tmp_path: Path) -> None:
    revision = tmp_path / "revision"
    revision.write_text("1")
    spec = WebSpec(hosts=1, pages_per_host=PAGES, page_bytes=3000, profiles=("versioned",),
                   revision_file=str(revision), private_links=False, cross_host_links=0.0)  # fmt: skip
    outs = [tmp_path / f"crawl{i}" for i in range(3)]
    with TestWeb(spec) as web:
        url = {p: str(canonicalize(web.graph.url(0, p))) for p in range(PAGES)}
        run(local_config(seeds=(web.graph.seeds()[0],), out=str(outs[0]), delay=DELAY))
        first = web.requests()
        # Nothing changed on the web: every page is asked for conditionally.
        _, again = run(local_config(out=str(outs[1]), recrawl=str(outs[0]), delay=DELAY))
        second = web.requests()[len(first) :]
        revision.write_text("2")  # some pages change, some go, new ones appear
        summary, records = run(local_config(out=str(outs[2]), recrawl=str(outs[1]), delay=DELAY))
        third = web.requests()[len(first) + len(second) :]

    # The second crawl: conditional requests where the first saw validators, and 5x fewer body bytes at least.
    pages_asked = [r for r in second if page_of(r["path"]) is not None]
    assert sorted(page_of(r["path"]) for r in pages_asked) == list(range(PAGES))
    for r in pages_asked:
        page = page_of(r["path"])
        assert page is not None
        assert ("if_none_match" in r and "if_modified_since" in r) == has_validators(page), r
    body_bytes = [sum(r["bytes"] for r in requests if page_of(r["path"]) is not None) for requests in (first, second)]
    assert body_bytes[0] >= 5 * body_bytes[1], body_bytes
    outcomes = {r["url"]: r["outcome"] for r in again}
    assert outcomes == {url[p]: "not_modified" if has_validators(p) else "unchanged" for p in range(PAGES)}

    # The third crawl, after the web changed: each page's outcome says what happened to it; new pages are crawled.
    assert_each_url_once(records)
    outcomes = {r["url"]: r["outcome"] for r in records}
    for p in range(PAGES):
        expected = "gone" if gone(p, 2) else "fetched" if changed(p, 2) else "not_modified"
        if expected == "not_modified" and not has_validators(p):
            expected = "unchanged"
        assert outcomes[url[p]] == expected, (p, outcomes[url[p]])
    new_pages = {u for u, o in outcomes.items() if "/new/" in u}
    assert new_pages == {url[0].rstrip("/") + f"/new/{p}" for p in range(PAGES) if changed(p, 2)}
    assert all(outcomes[u] == "fetched" for u in new_pages)
    assert summary["outcomes"]["gone"] == sum(gone(p, 2) for p in range(PAGES))
    assert len([r for r in third if r["path"] == "/robots.txt"]) == 1

    # WARC: revisits instead of bodies, each referring to the first crawl's capture (carried through the second).
    captured = warc_records(outs[0])
    latest = warc_records(outs[2])
    for p in range(PAGES):
        if gone(p, 2) or changed(p, 2):
            assert ("response", url[p]) in latest
            continue
        revisit = latest[("revisit", url[p])]
        original = captured[("response", url[p])]
        profile = NOT_MODIFIED_PROFILE if has_validators(p) else IDENTICAL_PAYLOAD_PROFILE
        assert revisit.get_header("WARC-Profile") == profile
        assert revisit.get_header("WARC-Refers-To") == original.get_header("WARC-Record-ID")
        assert revisit.get_header("WARC-Refers-To-Date") == original.get_header("WARC-Date")
        assert revisit.get_header("WARC-Refers-To-Target-URI") == original.get_header("WARC-Target-URI")
        if profile == IDENTICAL_PAYLOAD_PROFILE:
            assert revisit.get_header("WARC-Payload-Digest") == original.get_header("WARC-Payload-Digest")
        assert ("response", url[p]) not in latest


def test_retry_errors_fetches_exactly_the_dead_letters_again_and_keeps_one_record_per_url(tmp_path: Path) -> None:
    revision = tmp_path / "revision"
    revision.write_text("1")
    spec = WebSpec(hosts=2, pages_per_host=40, page_bytes=200, profiles=("recovering", "recovering"),
                   revision_file=str(revision), private_links=False)  # fmt: skip
    out = str(tmp_path / "out")
    fast = {"delay": DELAY, "max_attempts": 2, "backoff_base": 0.05, "max_backoff": 0.1}
    with TestWeb(spec) as web:
        _, before = run(local_config(seeds=tuple(web.graph.seeds()), out=out, **fast))
        first = web.requests()
        revision.write_text("2")  # the server is back
        summary, after = run(local_config(out=out, resume=True, retry_errors=True, **fast))
        second = web.requests()[len(first) :]

    dead = {r["url"] for r in before if r["outcome"] == "error"}
    assert dead and all("/p/" in u and int(u.rsplit("/", 1)[1]) % 4 == 3 for u in dead)
    assert summary["events"]["dead_letters_retried"] == len(dead)

    def asked(requests: list[dict[str, Any]]) -> set[str | None]:
        return {canonicalize(f"http://{r['host']}{r['path']}", DEFAULT_TRACKING_PARAMS) for r in requests}

    asked_before, asked_again = asked(page_requests(first)), asked(page_requests(second))
    assert asked_again & asked_before == dead  # exactly the dead letters, fetched again ...
    assert all(u not in asked_before for u in asked_again - dead)  # ... and what their pages led to, for the first time
    assert_each_url_once(after)  # the output: one record per URL, the old error records replaced
    outcomes = {r["url"]: r["outcome"] for r in after}
    assert {u: outcomes[u] for u in dead} == dict.fromkeys(dead, "fetched")
    assert "error" not in outcomes.values()
    assert summary["outcomes"].get("error", 0) == 0
    assert set(outcomes) >= {r["url"] for r in before}


def test_a_recrawl_skips_pages_whose_sitemap_lastmod_is_older_than_their_capture(tmp_path: Path) -> None:
    revision = tmp_path / "revision"
    revision.write_text("1")
    pages = 40
    spec = WebSpec(hosts=1, pages_per_host=pages, page_bytes=1000, profiles=("versioned-sitemap",),
                   revision_file=str(revision), private_links=False, cross_host_links=0.0)  # fmt: skip
    first_out, second_out = tmp_path / "first", tmp_path / "second"
    delay = 0.2  # (the sitemap is queued, a round after robots.txt names it, well before the host's next slot)
    with TestWeb(spec) as web:
        url = {p: str(canonicalize(web.graph.url(0, p))) for p in range(pages)}
        run(local_config(seeds=(web.graph.seeds()[0],), out=str(first_out), delay=delay))
        first = web.requests()
        revision.write_text("2")  # written after every capture: the changed pages' lastmod
        summary, records = run(local_config(out=str(second_out), recrawl=str(first_out), delay=delay))
        second = web.requests()[len(first) :]

    assert_each_url_once(records)
    outcomes = {r["url"]: r["outcome"] for r in records}
    asked = {page_of(r["path"]) for r in second} - {None}
    skipped = {p for p in range(pages) if outcomes[url[p]] == "skipped_unchanged"}
    kept = {p for p in range(pages) if not gone(p, 2) and not changed(p, 2)}
    # The site says these did not change since they were captured: not asked for at all, their capture carried on.
    assert skipped <= kept and not skipped & asked
    assert len(skipped) >= len(kept) - 2, (sorted(kept - skipped), sorted(asked))
    assert summary["outcomes"]["skipped_unchanged"] == len(skipped)
    earlier = {r["url"]: r for r in read_pages(str(first_out))}
    for p in skipped:
        record = {r["url"]: r for r in records}[url[p]]
        assert record["warc_id"] == earlier[url[p]]["warc_id"] and record["sha256"] == earlier[url[p]]["sha256"]
    # The changed pages (lastmod after their capture) and the gone ones (not listed) are asked for again.
    for p in range(pages):
        if changed(p, 2):
            assert p in asked and outcomes[url[p]] == "fetched"
        elif gone(p, 2):
            assert p in asked and outcomes[url[p]] == "gone"
    assert {u for u in outcomes if "/new/" in u} == {
        url[0].rstrip("/") + f"/new/{p}" for p in range(pages) if changed(p, 2)
    }
