"""``builtin:article`` (issue 47): a page's main text without its boilerplate, as text and markdown, with the title,
description, language, author and date the page gives.

The main text is trafilatura's, chosen by measurement (``benchmarks/extractors.py``, benchmarks/README.md): on the
test web's articles (raycrawl/testing/articles.py: navigation, cookie notice, related stories, an ad, a comment box
and a footer around articles in four layouts) it kept every article sentence and no boilerplate sentence on 100% of
pages; resiliparse's ``main_content`` was ~19x cheaper (77-81 us a page against ~1.5 ms) but kept the comment box on
every page. trafilatura parses with lxml, and is given the page as text: it never fetches anything.
"""

from __future__ import annotations

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

    doc = trafilatura.bare_extraction(page.text, url=page.final_url, include_comments=False, with_metadata=True)
    tree = page.tree
    html_node = next(iter(tree.tags("html")), None)
    title_node = next(iter(tree.tags("title")), None)
    language = squeeze(html_node.attrs.get("lang") if html_node is not None else None)
    title = squeeze(title_node.text() if title_node is not None else None)
    if not isinstance(doc, Document):  # (None: no main text; a dict only when as_dict is asked for)
        return {"title": title, "description": None, "language": language, "text": None, "markdown": None,
                "author": None, "date": None}  # fmt: skip
    text = doc.text.strip() if doc.text else None
    markdown = xmltotxt(doc.body, include_formatting=True).strip() if doc.body is not None else None
    return {
        "title": squeeze(doc.title) or title,
        "description": squeeze(doc.description),
        "language": language or squeeze(doc.language),
        "text": text[:MAX_FIELD_CHARS] if text else None,
        "markdown": markdown[:MAX_FIELD_CHARS] if markdown else None,
        "author": squeeze(doc.author),
        "date": squeeze(doc.date),
    }
