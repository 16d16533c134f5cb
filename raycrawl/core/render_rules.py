"""Which pages go to a browser (issue 35, the first part: the decision, pure; the render actors come next).

- ``--render always|never|auto`` for the crawl, and ``[[render]]`` rules (a URL regular expression -> a mode; the
  first that matches decides) on top.
- ``auto``: a page fetched normally is rendered when it looks like a shell that scripts fill in -- little visible
  text and few links, with a sign that a script builds the page: an empty app root (``<div id="root">``,
  ``id="app"``, ``__next``, ``ng-app``, ...) or a ``<noscript>`` that asks for JavaScript; or a script bundle
  (``<script src>``) and next to nothing else. Each reason is named, for the record.

Measured on nothing yet: the thresholds are Crawlee's and Heritrix's kind of rule of thumb, to be checked against
the render benchmark when the pool exists.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from selectolax.lexbor import LexborHTMLParser as HTMLParser

from raycrawl.core.rules import split_rule, url_pattern

RenderMode = Literal["always", "never", "auto"]
MODES: tuple[RenderMode, ...] = ("always", "never", "auto")
MAX_SHELL_TEXT = 200  # visible characters (whitespace collapsed) a shell has at most
MAX_SHELL_LINKS = 2  # ... and links
MAX_BARE_TEXT = 20  # characters of a page whose only sign is a script bundle
APP_ROOT_IDS = frozenset({"root", "app", "__next", "__nuxt", "___gatsby", "svelte", "main-app", "application"})
APP_ROOT_ATTRIBUTES = ("ng-app", "data-reactroot", "data-v-app", "data-server-rendered")
NOSCRIPT_HINT = re.compile(
    r"\b(enable|requires?|need|turn on)\b.{0,40}\bjavascript\b|\bjavascript\b.{0,40}\b(enable|required|disabled)\b",
    re.IGNORECASE | re.DOTALL,
)
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class RenderRules:
    """The crawl's mode and its per-pattern rules (compiled)."""

    mode: RenderMode = "never"
    rules: tuple[tuple[re.Pattern[str], RenderMode], ...] = ()

    @classmethod
    def of(cls, mode: RenderMode, rules: Sequence[str] = ()) -> RenderRules:
        return cls(mode, tuple(parse_rule(rule) for rule in rules))

    def mode_for(self, url: str) -> RenderMode:
        for pattern, mode in self.rules:
            if pattern.search(url):
                return mode
        return self.mode

    @property
    def ever(self) -> bool:
        """Some page may be rendered (else no browser is needed at all)."""
        return self.mode != "never" or any(mode != "never" for _, mode in self.rules)


def parse_rule(rule: str) -> tuple[re.Pattern[str], RenderMode]:
    """``PATTERN=MODE`` (the last ``=`` splits: a URL pattern may hold one)."""
    form = "URL_PATTERN=always|never|auto"
    pattern, mode = split_rule(rule, form, "/app/=always")
    if mode not in MODES:
        raise ValueError(f"{rule!r}: expected {form}, e.g. /app/=always")
    return url_pattern(rule, pattern), mode


@dataclass(frozen=True, slots=True)
class ShellVerdict:
    shell: bool
    reason: str  # why (or why not), for the record
    text_chars: int
    links: int


def looks_like_shell(html: str) -> ShellVerdict:
    """Whether a page's HTML is a shell its scripts fill in (``auto``'s rule). An empty app root or a
    ``<noscript>`` asking for JavaScript says so with up to ``MAX_SHELL_TEXT`` characters and ``MAX_SHELL_LINKS``
    links; a script bundle alone (most pages have one) only with almost nothing else (``MAX_BARE_TEXT``, no link)."""
    tree = HTMLParser(html)
    links = len(tree.css("a[href]"))
    bundle = tree.css_first("script[src]") is not None
    asks = any(NOSCRIPT_HINT.search(node.text(deep=True) or "") for node in tree.css("noscript"))
    for node in tree.css("script, style, noscript, template"):
        node.decompose()
    root = _empty_app_root(tree)
    body = tree.body
    chars = len(_SPACE.sub(" ", body.text(deep=True) if body is not None else "").strip())
    strong = [s for s in (root and f"an empty app root ({root})", asks and "a <noscript> asking for JavaScript") if s]
    signs = strong + (["a script bundle"] if bundle else [])
    seen = f"{chars} characters of text, {links} links"
    if strong and chars <= MAX_SHELL_TEXT and links <= MAX_SHELL_LINKS:
        return ShellVerdict(True, f"{seen}, " + ", ".join(signs), chars, links)
    if bundle and chars <= MAX_BARE_TEXT and links == 0:
        return ShellVerdict(True, f"{seen}, a script bundle", chars, links)
    if not signs:
        return ShellVerdict(False, "no sign of a page built by scripts", chars, links)
    return ShellVerdict(False, f"{seen} already", chars, links)


def _empty_app_root(tree: HTMLParser) -> str | None:
    for node in tree.css("[id], " + ", ".join(f"[{a}]" for a in APP_ROOT_ATTRIBUTES)):
        attributes = node.attributes
        name = next((a for a in APP_ROOT_ATTRIBUTES if a in attributes), None)
        if name is None and (attributes.get("id") or "").lower() not in APP_ROOT_IDS:
            continue
        if not _SPACE.sub("", node.text(deep=True) or ""):
            return f"{name}" if name else f"#{attributes.get('id')}"
    return None
