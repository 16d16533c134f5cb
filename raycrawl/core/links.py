"""Outlinks of an HTML page: ``a`` and ``area`` hrefs resolved against the page URL and ``<base href>``.

Parsing uses selectolax's Lexbor engine (a fast, well-kept HTML5 parser). Only http(s) links leave the page,
canonicalised and deduplicated within the page, in document order.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urljoin

from selectolax.lexbor import LexborHTMLParser

from raycrawl.core.urls import canonicalize

HTML_TYPES = ("text/html", "application/xhtml+xml")


def is_html(content_type: str | None, body_prefix: bytes) -> bool:
    """HTML by the Content-Type header, or, when there is none, by sniffing the first bytes."""
    if content_type:
        return content_type.split(";", 1)[0].strip().lower() in HTML_TYPES
    head = body_prefix[:512].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html")) or b"<a " in head


def charset_of(content_type: str | None) -> str | None:
    if not content_type:
        return None
    for param in content_type.split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip("\"'") or None
    return None


def decode_html(body: bytes, content_type: str | None) -> str:
    charset = charset_of(content_type) or "utf-8"
    try:
        return body.decode(charset, errors="replace")
    except LookupError:  # an unknown charset name from the server
        return body.decode("utf-8", errors="replace")


def extract_links(
    html: str,
    page_url: str,
    tracking_params: Iterable[str] = (),
    max_links: int = 5000,
) -> list[str]:
    tree = LexborHTMLParser(html)
    base = page_url
    base_node = tree.css_first("base[href]")
    if base_node is not None:
        href = base_node.attributes.get("href")
        if href:
            base = urljoin(page_url, href.strip())
    tracking = tuple(tracking_params)
    seen: set[str] = set()
    links: list[str] = []
    for node in tree.css("a[href], area[href]"):
        href = node.attributes.get("href")
        if not href:
            continue
        try:
            absolute = urljoin(base, href.strip())
        except ValueError:
            continue
        canonical = canonicalize(absolute, tracking)
        if canonical is not None and canonical not in seen:
            seen.add(canonical)
            links.append(canonical)
            if len(links) >= max_links:
                break
    return links
