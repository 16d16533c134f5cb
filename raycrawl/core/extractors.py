"""Extractors that need no Python from the operator (issue 47): a page's metadata, and fields named by CSS selectors.

``meta(page)`` reads what a page says of itself: its title, meta description, language, canonical URL, hreflang
alternates, OpenGraph properties and JSON-LD blocks. ``CssFields`` are declared in TOML (``[extract.fields]
price = "css:.price::text"``): a selector and what to take of the first element it matches -- its text, or an
attribute (``::attr(href)``); ``css-all:`` takes it of every match, as a list. Both read the page's one parsed tree
(core/page.py). Each returns a dict, or None for a page that is not HTML (not a data page: its links are followed).
What a hostile page can cost is bounded: JSON-LD blocks, their size, and the lists kept.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urljoin

from selectolax.lexbor import LexborHTMLParser, LexborNode, SelectolaxError

from raycrawl.core.page import Page

MAX_JSON_LD = 16  # JSON-LD blocks read from a page
MAX_JSON_LD_CHARS = 256 * 1024  # ... each at most this long (a bigger one is skipped)
MAX_LIST = 100  # hreflang alternates, OpenGraph values, css-all matches kept
MAX_FIELD_CHARS = 100_000  # characters of one text field
_SPACES = re.compile(r"\s+")
_FIELD = re.compile(r"(css|css-all):(.+?)(?:::(text|attr\(([A-Za-z_:][-A-Za-z0-9_:.]*)\)))?\s*$", re.DOTALL)

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})


def is_html_page(page: Page) -> bool:
    """HTML as its header says, or with no usable header, as its first bytes look (core/media_types.py)."""
    kind = page.media_type
    if kind is not None:
        return kind in HTML_TYPES
    return page.body[:512].lstrip().lower().startswith((b"<!doctype html", b"<html"))


def squeeze(text: str | None) -> str | None:
    """Text with its runs of whitespace made one space, stripped, bounded; None for none."""
    if text is None:
        return None
    out = _SPACES.sub(" ", text).strip()
    return out[:MAX_FIELD_CHARS] if out else None


def meta(page: Page) -> dict[str, Any] | None:
    """``builtin:meta``: title, description, language, canonical, hreflang, OpenGraph and JSON-LD of an HTML page."""
    if not is_html_page(page):
        return None
    tree = page.tree
    base = page.final_url
    metas = [node.attrs for node in tree.tags("meta")]
    named = {str(a.get("name", "")).lower(): a.get("content") for a in metas if a.get("name")}
    og: dict[str, str] = {}
    for attrs in metas:
        prop = str(attrs.get("property") or "").lower()
        content = attrs.get("content")
        if prop.startswith("og:") and content and prop[3:] not in og and len(og) < MAX_LIST:
            og[prop[3:]] = squeeze(content) or ""
    canonical: str | None = None
    hreflang: list[dict[str, str]] = []
    for node in tree.tags("link"):
        rel = str(node.attrs.get("rel") or "").lower().split()
        href = node.attrs.get("href")
        if not href:
            continue
        if "canonical" in rel and canonical is None:
            canonical = urljoin(base, href.strip())
        elif "alternate" in rel and node.attrs.get("hreflang") and len(hreflang) < MAX_LIST:
            hreflang.append({"lang": str(node.attrs.get("hreflang")), "href": urljoin(base, href.strip())})
    title_node = next(iter(tree.tags("title")), None)
    html_node = next(iter(tree.tags("html")), None)
    return {
        "title": squeeze(title_node.text() if title_node is not None else None) or og.get("title"),
        "description": squeeze(named.get("description")) or og.get("description"),
        "language": squeeze(html_node.attrs.get("lang") if html_node is not None else None),
        "canonical": canonical,
        "hreflang": hreflang,
        "opengraph": og,
        "json_ld": json_ld(tree),
    }


def json_ld(tree: LexborHTMLParser) -> list[Any]:
    """The page's JSON-LD blocks that parse (at most MAX_JSON_LD, each at most MAX_JSON_LD_CHARS long)."""
    out: list[Any] = []
    for node in tree.tags("script"):
        if str(node.attrs.get("type") or "").split(";")[0].strip().lower() != "application/ld+json":
            continue
        text = node.text(deep=True)
        if len(text) > MAX_JSON_LD_CHARS:
            continue
        try:
            out.append(json.loads(text))
        except (ValueError, RecursionError):
            continue
        if len(out) >= MAX_JSON_LD:
            break
    return out


@dataclass(frozen=True, slots=True)
class CssField:
    """One declared field: ``css:SELECTOR`` (the first match's text), ``css:SELECTOR::text``,
    ``css:SELECTOR::attr(NAME)``; ``css-all:`` for every match's, as a list."""

    name: str
    selector: str
    take: Literal["text", "attr"] = "text"
    attribute: str = ""
    every: bool = False

    @staticmethod
    def parse(name: str, spec: str) -> CssField:
        """The field ``spec`` declares (ValueError saying what is wrong)."""
        match = _FIELD.fullmatch(spec.strip())
        if match is None or not match.group(2).strip():
            raise ValueError(
                f"{name} = {spec!r}: expected css:SELECTOR, css:SELECTOR::text, css:SELECTOR::attr(NAME) "
                "or css-all:... (every match, as a list)"
            )
        kind, selector, _, attribute = match.groups()
        try:
            LexborHTMLParser("<p></p>").css(selector.strip())
        except (SelectolaxError, ValueError) as exc:
            raise ValueError(f"{name} = {spec!r}: not a CSS selector ({exc})") from None
        return CssField(name, selector.strip(), "attr" if attribute else "text", attribute or "", kind == "css-all")

    def value(self, tree: LexborHTMLParser) -> Any:
        if not self.every:
            node = tree.css_first(self.selector)
            return None if node is None else self._of(node)
        values = (self._of(node) for node in tree.css(self.selector))
        return [v for v in values if v is not None][:MAX_LIST]

    def _of(self, node: LexborNode) -> str | None:
        if self.take == "attr":
            raw = node.attrs.get(self.attribute)
            return None if raw is None else str(raw)[:MAX_FIELD_CHARS]
        return squeeze(node.text(deep=True, separator=" "))


@dataclass(frozen=True, slots=True)
class CssFields:
    """The ``[extract.fields]`` table as an extractor: a dict of every field (None where nothing matched)."""

    fields: tuple[CssField, ...]

    @staticmethod
    def parse(table: dict[str, str]) -> CssFields:
        return CssFields(tuple(CssField.parse(name, spec) for name, spec in table.items()))

    def __call__(self, page: Page) -> dict[str, Any] | None:
        if not is_html_page(page):
            return None
        tree = page.tree
        return {field.name: field.value(tree) for field in self.fields}
