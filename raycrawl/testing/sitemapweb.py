"""The ``sitemap`` host of the test web: its pages link nowhere, so only its sitemaps can lead a crawl to them.

- ``/robots.txt`` names ``/sitemaps/index.xml`` and a sitemap on an address outside the crawl's scope (the
  canary's, when the web has one: it must never be asked);
- the index lists ``pages.xml.gz`` (gzip: the odd pages, and a page of the out-of-scope address; ``<priority>`` 0.9
  for the pages ``p % 4 == 1``, 0.1 for the others), ``pages.txt``
  (a text sitemap: the even pages), ``broken.xml`` (cut off mid-file) and ``bomb.xml.gz`` (a gzip stream that
  inflates far past the protocol's 50 MB).
"""

from __future__ import annotations

import gzip
from functools import lru_cache

from raycrawl.testing.bombs import gzip_bomb

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
FILES = ("pages.xml.gz", "pages.txt", "broken.xml", "bomb.xml.gz")
BOMB_BYTES = 64 << 20  # inflated: over sitemaps.org's 50 MB


def page_path(page: int) -> str:
    return "/" if page == 0 else f"/p/{page}"


def robots_txt(netloc: str, outside: str) -> bytes:
    return (
        f"User-agent: *\nDisallow: /private/\nSitemap: http://{netloc}/sitemaps/index.xml\n"
        f"Sitemap: http://{outside}/sitemap.xml\n"
    ).encode()


def route(path: str, netloc: str, pages: int, outside: str) -> tuple[int, list[tuple[str, str]], bytes] | None:
    """The answer to a sitemap path, or None for any other path."""
    if path == "/sitemaps/index.xml":
        items = "".join(f"<sitemap><loc>http://{netloc}/sitemaps/{name}</loc></sitemap>" for name in FILES)
        body = f'<?xml version="1.0" encoding="UTF-8"?><sitemapindex xmlns="{NS}">{items}</sitemapindex>'
        return 200, [("Content-Type", "application/xml")], body.encode()
    if path == "/sitemaps/pages.xml.gz":
        locs = [(f"http://{netloc}{page_path(p)}", priority(p)) for p in range(1, pages, 2)]
        return (
            200,
            [("Content-Type", "application/x-gzip")],
            gzip.compress(_urlset([*locs, (f"http://{outside}/p/1", 0.5)])),
        )
    if path == "/sitemaps/pages.txt":
        lines = "".join(f"http://{netloc}{page_path(p)}\n" for p in range(0, pages, 2))
        return 200, [("Content-Type", "text/plain")], lines.encode()
    if path == "/sitemaps/broken.xml":
        return 200, [("Content-Type", "application/xml")], _urlset([(f"http://{netloc}/p/1", 0.5)])[:-30]
    if path == "/sitemaps/bomb.xml.gz":
        return 200, [("Content-Type", "application/x-gzip")], _bomb()
    return None


def priority(page: int) -> float | None:
    """The ``<priority>`` the gzip sitemap gives an odd page (even pages are in the text sitemap: none)."""
    return None if page % 2 == 0 else 0.9 if page % 4 == 1 else 0.1


def _urlset(locs: list[tuple[str, float | None]]) -> bytes:
    items = "".join(f"<url><loc>{loc}</loc><priority>{p}</priority></url>" for loc, p in locs)
    return f'<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="{NS}">{items}</urlset>'.encode()


@lru_cache(maxsize=1)
def _bomb() -> bytes:
    return gzip.compress(f'<urlset xmlns="{NS}">'.encode()) + gzip_bomb(BOMB_BYTES)
