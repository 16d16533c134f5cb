"""``builtin:article`` (issue 47): a page's main text without its boilerplate, as text and markdown, with the title,
description, language, author and date the page gives.

The main text is trafilatura's, chosen by measurement (``benchmarks/extractors.py``, benchmarks/README.md): on the
test web's articles (raycrawl/testing/articles.py: navigation, cookie notice, related stories, an ad, a comment box
and a footer around articles in four layouts) it kept every article sentence and no boilerplate sentence on 100% of
pages; resiliparse's ``main_content`` was ~19x cheaper (77-81 us a page against ~1.5 ms) but kept the comment box on
every page. trafilatura parses with lxml, and is given the page as text: it never fetches anything.
"""

from __future__ import annotations

import re
from typing import Any

from raycrawl.core.extractors import MAX_FIELD_CHARS, is_html_page, squeeze
from raycrawl.core.page import Page


def article(page: Page) -> dict[str, Any] | None:
    """``builtin:article``: title, description, language, text, markdown, author, date of an HTML page; text and
    markdown None where no main text was found (a contract's ``--require text`` rejects the page then)."""
    if not is_html_page(page):
        return None
    import trafilatura  # (here: a worker that extracts no articles never pays for importing it)
    from trafilatura.settings import Document
    from trafilatura.xml import xmltotxt

    # fast: without trafilatura's fallback extractors (readability, jusText) -- as complete and as clean on the test
    # web's articles, ~0.4 ms a page less (benchmarks/README.md)
    text = page.text
    doc = trafilatura.bare_extraction(text, url=page.final_url, include_comments=False, with_metadata=True, fast=True)
    language = _html_lang(text)
    if not isinstance(doc, Document):  # (None: no main text; a dict only when as_dict is asked for)
        title = next(iter(page.tree.tags("title")), None)
        return {"title": squeeze(title.text()) if title is not None else None, "description": None,
                "language": language, "text": None, "markdown": None, "author": None, "date": None}  # fmt: skip
    main = doc.text.strip() if doc.text else None
    markdown = xmltotxt(doc.body, include_formatting=True).strip() if doc.body is not None else None
    return {
        "title": squeeze(doc.title),
        "description": squeeze(doc.description),
        "language": language or squeeze(doc.language),
        "text": main[:MAX_FIELD_CHARS] if main else None,
        "markdown": markdown[:MAX_FIELD_CHARS] if markdown else None,
        "author": squeeze(doc.author),
        "date": squeeze(doc.date),
    }


_HTML_LANG = re.compile(r"<html\b[^>]*?\blang\s*=\s*[\"']?([A-Za-z]{1,8}(?:[-_][A-Za-z0-9]{1,8})*)", re.IGNORECASE)


def _html_lang(text: str) -> str | None:
    """The ``<html lang>`` of a page (what its author says it is in), read from its start without a parse."""
    match = _HTML_LANG.search(text, 0, 4096)
    return match.group(1) if match else None
