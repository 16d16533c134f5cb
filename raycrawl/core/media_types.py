"""What kind of document a response is: its ``Content-Type`` parsed as the WHATWG MIME Sniffing Standard parses
one, and, when there is none that parses, the body's first bytes sniffed for HTML as browsers sniff them.

A header that does not parse (``text/html`` followed by a stray byte, say) is treated as absent, as browsers
treat it: the body decides. The record keeps the header as it was sent; only the decision is made here.
"""

from __future__ import annotations

import re

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
SNIFF_BYTES = 512  # how much of a body the sniffing looks at (the Standard's resource header is 1445 bytes)

# HTTP token code points (RFC 9110 tchar): what a type and a subtype must be made of.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HTTP_WHITESPACE = " \t\r\n"
# The Standard's HTML patterns: one of these tag openings, then a space or '>' (its "tag-terminating byte").
_HTML_TAGS = (
    b"<!doctype html", b"<html", b"<head", b"<script", b"<iframe", b"<h1", b"<div", b"<font", b"<table", b"<a",
    b"<style", b"<title", b"<b", b"<body", b"<br", b"<p", b"<!--",
)  # fmt: skip
_TAG_END = b" \t\n\x0c\r>"


def media_type(content_type: str | None) -> str | None:
    """``type/subtype`` of a Content-Type header, lower case, or None when there is no header or it does not
    parse (an empty or non-token type or subtype)."""
    if not content_type:
        return None
    essence = content_type.split(";", 1)[0].strip(_HTTP_WHITESPACE)
    kind, slash, subtype = essence.partition("/")
    subtype = subtype.rstrip(_HTTP_WHITESPACE)
    if not slash or not _TOKEN.fullmatch(kind) or not _TOKEN.fullmatch(subtype):
        return None
    return f"{kind}/{subtype}".lower()


def sniffs_as_html(body_prefix: bytes) -> bool:
    """Whether a body with no usable Content-Type is HTML: past leading whitespace, it opens with one of the
    Standard's HTML tags; or, as this crawler has always allowed, it has a link (``<a ``) near the top."""
    head = body_prefix[:SNIFF_BYTES].lstrip(b" \t\n\x0c\r").lower()
    for tag in _HTML_TAGS:
        if head.startswith(tag) and (tag == b"<!--" or head[len(tag) : len(tag) + 1] in _TAG_END_BYTES):
            return True
    return b"<a " in head


_TAG_END_BYTES = frozenset(_TAG_END[i : i + 1] for i in range(len(_TAG_END)))


def is_html(content_type: str | None, body_prefix: bytes) -> bool:
    """HTML by a Content-Type that parses; by sniffing the first bytes when there is none that does."""
    kind = media_type(content_type)
    if kind is not None:
        return kind in HTML_TYPES
    return sniffs_as_html(body_prefix)
