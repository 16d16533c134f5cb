"""Outlinks of an HTML page: ``a`` and ``area`` hrefs resolved against the page URL and ``<base href>``.

Parsing uses selectolax's Lexbor engine (a fast, well-kept HTML5 parser). Only http(s) links leave the page,
canonicalised and deduplicated within the page, in document order.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urljoin

import webencodings
from selectolax.lexbor import LexborHTMLParser
from selectolax.lexbor import LexborNode as Node

from raycrawl.core.media_types import media_type
from raycrawl.core.urls import C0_OR_SPACE, link_forms


def charset_of(content_type: str | None) -> str | None:
    """The charset parameter of a Content-Type that parses (one that does not is no header at all, as browsers
    have it: core/media_types.py)."""
    if not content_type or media_type(content_type) is None:
        return None
    for param in content_type.split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip("\"'") or None
    return None


_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16le"), (codecs.BOM_UTF16_BE, "utf-16be"))
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.IGNORECASE)


def _known(charset: str | None) -> str | None:
    """The WHATWG Encoding Standard's name for a label, or None for a label it does not know.

    Python's own codec registry would also accept 'zlib', 'base64', 'rot13', 'hex' ... (codecs that are not text
    encodings, and fail or mislead when a page names them): only the Standard's labels are honoured, as browsers
    do. Its "replacement" encoding (labels of ISO-2022-KR, HZ ...) decodes to nothing: treated as unknown too.
    """
    if not charset:
        return None
    encoding = webencodings.lookup(charset)
    if encoding is None or encoding.name == "replacement":
        return None
    return str(encoding.name)


def html_charset(body: bytes, content_type: str | None) -> tuple[str, int]:
    """(encoding, bytes to skip) as the HTML standard orders it: a BOM, the header's charset, a ``<meta>``
    charset in the first 1024 bytes, else UTF-8. Unknown names fall through to the next source."""
    for bom, name in _BOMS:
        if body.startswith(bom):
            return name, len(bom)
    from_header = _known(charset_of(content_type))
    if from_header:
        return from_header, 0
    match = _META_CHARSET.search(body[:1024])
    from_meta = _known(match.group(1).decode("ascii")) if match else None
    if from_meta and not from_meta.startswith("utf-16"):  # a meta tag readable as ASCII cannot be UTF-16
        return from_meta, 0
    return "utf-8", 0


def decode_html(body: bytes, content_type: str | None) -> str:
    """The page as text; bytes invalid in its encoding become U+FFFD rather than an error."""
    charset, skip = html_charset(body, content_type)
    text: str = webencodings.lookup(charset).codec_info.decode(body[skip:], "replace")[0]
    return text


SCAN_FACTOR = 4  # anchors looked at per link kept, at most: a page of a million anchors costs what 4 x max_links do


@dataclass(slots=True)
class PageLinks:
    urls: list[str] = field(default_factory=list)  # canonical, first occurrence, in document order
    spellings: dict[str, str] = field(default_factory=dict)  # url -> its request form, where that differs
    capped: bool = False  # the page had more than max_links links, or more anchors than were looked at


def extract_links(
    html: str,
    page_url: str,
    tracking_params: Iterable[str] = (),
    max_links: int = 5000,
) -> PageLinks:
    """The page's links: each as its canonical URL (the dedup key) and, where it differs, the spelling it will be
    requested in (``urls.request_form``: as written, resolved against the page). At most ``max_links`` are kept
    and at most ``SCAN_FACTOR x max_links`` anchors looked at, so the work is bounded however many there are."""
    tree = LexborHTMLParser(html)
    base = page_url
    href = _base_href(tree)
    if href:
        base = urljoin(page_url, href.strip(C0_OR_SPACE))
    tracking = tuple(tracking_params)
    origin_match = _HTTP_ORIGIN.match(base)
    base_origin = origin_match.group() if origin_match else None
    hrefs: set[str] = set()  # (a page repeats its links: each distinct href is resolved once)
    out = PageLinks()
    links, spellings = out.urls, out.spellings
    seen: set[str] = set()
    anchors = _anchors(tree)
    if len(anchors) > SCAN_FACTOR * max_links:
        out.capped = True
        anchors = anchors[: SCAN_FACTOR * max_links]
    for node in anchors:
        href = node.attrs.get("href")
        if not href or href in hrefs:
            continue
        hrefs.add(href)
        absolute = resolve_href(base, base_origin, href.strip(C0_OR_SPACE))
        canonical, requested = link_forms(absolute, tracking) if absolute is not None else (None, None)
        if canonical is not None and canonical not in seen:
            seen.add(canonical)
            links.append(canonical)
            if requested is not None:
                spellings[canonical] = requested
            if len(links) >= max_links:
                out.capped = out.capped or len(hrefs) < len(anchors)
                break
    return out


# Elements are found by tag, not by CSS selector: lexbor compiles a selector on every query (the two queries cost
# ~13 us on a light page whose parse costs ~25; benchmarks/README.md, issue 32).


def _base_href(tree: LexborHTMLParser) -> str | None:
    """The first ``base`` element with an ``href``: its value (what ``base[href]`` selects)."""
    node = next((node for node in tree.tags("base") if "href" in node.attrs), None)
    return None if node is None else node.attrs.get("href")


def _anchors(tree: LexborHTMLParser) -> list[Node]:
    """The ``a`` and ``area`` elements with an ``href``, in document order (what ``a[href], area[href]`` selects)."""
    if tree.tags("area"):  # (rare: both kinds, in document order, are the selector engine's walk)
        return list(tree.css("a[href], area[href]"))
    return [node for node in tree.tags("a") if "href" in node.attrs]


_HTTP_ORIGIN = re.compile(r"https?://[^/?#]*")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")  # (as urlsplit reads one)


def resolve_href(base: str, base_origin: str | None, href: str) -> str | None:
    """``href`` made absolute against ``base`` (whose ``scheme://host`` is ``base_origin``): ``urljoin``, with
    the two usual shapes -- a full http(s) URL and a root-relative path -- done without parsing either URL
    (canonicalisation parses the result anyway, and removes dot segments and fragments). None: nothing to fetch
    (another scheme, such as mailto: or javascript:, is known as such without a parse)."""
    if href.startswith(("http://", "https://")):
        host_at = href.index("//") + 2
        if href[host_at : host_at + 1].isalnum():  # (with no host, urljoin keeps the base's: left to it)
            return href
    scheme = _SCHEME.match(href)
    if scheme is not None and scheme.group().lower() not in ("http:", "https:"):
        return None
    if base_origin is not None and href.startswith("/") and not href.startswith("//"):
        return base_origin + href
    try:
        return urljoin(base, href)
    except ValueError:
        return None
