"""Extractors for tests (issue 47): importable by ``module:function`` in every Ray worker, as an operator's would be.

``flaky`` makes an item of each article of the test web's "articles" profile (testing/articles.py), but raises on
some and hangs on others, by the article's number: what a contract's quarantine must survive.
"""

from __future__ import annotations

import time
from typing import Any

from raycrawl.core.page import Page

RAISES_EVERY = 7  # /a/N raises where N % 7 == 3
HANGS_EVERY = 11  # ... and hangs where N % 11 == 5


def article_number(url: str) -> int | None:
    path = url.split("://", 1)[-1].partition("/")[2]
    kind, _, number = path.partition("/")
    return int(number) if kind == "a" and number.isdigit() else None


def raises(number: int) -> bool:
    return number % RAISES_EVERY == 3


def hangs(number: int) -> bool:
    return number % HANGS_EVERY == 5 and not raises(number)


def flaky(page: Page) -> dict[str, Any] | None:
    """title and text of a page (None for the index: not a data page); raises or hangs on some articles."""
    if page.url.endswith("/"):
        return None
    number = article_number(page.url)
    if number is not None and raises(number):
        raise ValueError(f"cannot read article {number}")
    if number is not None and hangs(number):
        time.sleep(3600)
    title = page.tree.css_first("title")
    text = " ".join(node.text(deep=True) for node in page.tree.css("article p, .entry p, #content p, td.text p"))
    return {"title": title.text() if title is not None else None, "text": text, "number": number}
