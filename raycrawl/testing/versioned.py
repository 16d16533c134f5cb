"""The ``versioned`` profile of the test web: pages that change between crawls, for recrawl tests.

The web's revision is read from ``WebSpec.revision_file`` at each request (a test writes 2 there between two
crawls; missing or empty: 1). From revision 2 on, page ``p`` of the host:

- is gone (404) when ``p % 7 == 3``;
- has changed when ``p % 5 == 1``: a line of text and a link to a new page, ``/new/{p}``, that exists from then on;
- is as it was otherwise.

The ``recovering`` profile: pages with ``p % 4 == 3`` answer 503 up to revision 1, and as usual from revision 2
(a server that was down for a while: dead letters to retry).

Validators: ``ETag`` (from the body) and ``Last-Modified`` (the day of the page's revision), honoured as RFC 9110
says (If-None-Match first); pages with ``p % 10 == 2`` send none and ignore conditions, as many servers do.

The ``versioned-sitemap`` profile adds ``/sitemap.xml``, named by robots.txt: every page there is, with its
``lastmod``: when the revision file was written for a page that changed (and the new pages), its Last-Modified day
for the others. Pages that are gone are not listed.
"""

from __future__ import annotations

import hashlib
import os
from datetime import UTC, datetime
from email.utils import formatdate
from pathlib import Path

from raycrawl.testing.graph import WebGraph

EPOCH = 1_700_000_000  # Last-Modified of revision r: this plus r days


def revision(path: str) -> int:
    try:
        text = Path(path).read_text().strip() if path else ""
    except OSError:
        return 1
    return int(text) if text.isdigit() else 1


def gone(page: int, rev: int) -> bool:
    return rev >= 2 and page % 7 == 3


def changed(page: int, rev: int) -> bool:
    return rev >= 2 and page % 5 == 1 and not gone(page, rev)


def has_validators(page: int) -> bool:
    return page % 10 != 2


def answer(
    graph: WebGraph, host: int, path: str, rev: int, request: dict[str, str]
) -> tuple[int, list[tuple[str, str]], bytes] | None:
    """(status, headers, body) for a page path of the host, or None for paths it does not serve this way."""
    html = [("Content-Type", "text/html; charset=utf-8")]
    if path.startswith("/new/") and path[5:].isdigit():
        page = int(path[5:])
        if changed(page, rev):
            return 200, html, f"<html><body>new page {page} of revision {rev}</body></html>".encode()
        return 404, [], b"not found\n"
    if path == "/":
        page = 0
    elif path.startswith("/p/") and path[3:].isdigit():
        page = int(path[3:])
    else:
        return None
    if page >= graph.spec.pages_per_host or gone(page, rev):
        return 404, [], b"not found\n"
    body = graph.html(host, page)
    if changed(page, rev):
        body = body.replace(b"</body>", f'<p>revised</p><a href="/new/{page}">new</a></body>'.encode())
    if not has_validators(page):
        return 200, html, body
    modified = formatdate(EPOCH + (rev if changed(page, rev) else 1) * 86400, usegmt=True)
    return conditional_answer(body, modified, html, request)


def conditional_answer(
    body: bytes, modified: str, headers: list[tuple[str, str]], request: dict[str, str]
) -> tuple[int, list[tuple[str, str]], bytes]:
    """A page with validators -- ``ETag`` (from the body) and ``Last-Modified`` -- answered as RFC 9110 says: 304
    when the request's If-None-Match names the ETag, or (without one) its If-Modified-Since is the date."""
    etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
    validators = [("ETag", etag), ("Last-Modified", modified)]
    if "if-none-match" in request:
        if etag in (tag.strip() for tag in request["if-none-match"].split(",")):
            return 304, validators, b""
    elif request.get("if-modified-since") == modified:
        return 304, validators, b""
    return 200, headers + validators, body


def recovering(path: str, rev: int) -> tuple[int, list[tuple[str, str]], bytes] | None:
    """The ``recovering`` profile's answer where it differs from an ordinary host's, else None."""
    if rev <= 1 and path.startswith("/p/") and path[3:].isdigit() and int(path[3:]) % 4 == 3:
        return 503, [], b"down for maintenance\n"
    return None


def sitemap_answer(
    graph: WebGraph, host: int, path: str, rev: int, revision_file: str
) -> tuple[int, list[tuple[str, str]], bytes] | None:
    """robots.txt naming the sitemap, and the sitemap (``versioned-sitemap``); None for any other path."""
    netloc = graph.netloc(host)
    if path == "/robots.txt":
        return (
            200,
            [("Content-Type", "text/plain")],
            graph.robots_txt(host) + f"Sitemap: http://{netloc}/sitemap.xml\n".encode(),
        )
    if path != "/sitemap.xml":
        return None
    try:
        written = os.stat(revision_file).st_mtime if revision_file else EPOCH
    except OSError:
        written = EPOCH

    def w3c(ts: float) -> str:
        return datetime.fromtimestamp(ts, UTC).isoformat()  # (to the microsecond: a capture may share its second)

    items = []
    for page in range(graph.spec.pages_per_host):
        if gone(page, rev):
            continue
        lastmod = written if changed(page, rev) else EPOCH + 86400
        loc = "/" if page == 0 else f"/p/{page}"
        items.append(f"<url><loc>http://{netloc}{loc}</loc><lastmod>{w3c(lastmod)}</lastmod></url>")
        if changed(page, rev):
            items.append(f"<url><loc>http://{netloc}/new/{page}</loc><lastmod>{w3c(written)}</lastmod></url>")
    body = '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">' + "".join(items)
    return 200, [("Content-Type", "application/xml")], (body + "</urlset>").encode()
