"""Pages whose data is known (issue 47): an article among boilerplate, for measuring extractors and testing them.

Each page has a title, description, author, date and language its head says; an article of 3-8 paragraphs in one
of several layouts (``<article>``, ``<main>``, a ``div`` of paragraphs, a table cell, as real sites differ); and
boilerplate around it: a navigation bar of links, a cookie notice, a sidebar of related stories and an ad, a
comment box and a footer -- each of them sentences too, so an extractor that keeps them is caught. Its JSON-LD
says the same as its head, and a product price sits in ``.price``. Everything comes from a seed: the same page each
time, and ``ArticlePage`` says what an extractor should find.
"""

from __future__ import annotations

import html
import json
import random
from dataclasses import dataclass

WORDS = [
    "river",
    "market",
    "council",
    "season",
    "engine",
    "garden",
    "harbour",
    "village",
    "signal",
    "museum",
    "lecture",
    "winter",
    "bridge",
    "orchard",
    "factory",
    "glacier",
    "journal",
    "lantern",
    "meadow",
    "mineral",
    "orbit",
    "pattern",
    "quarry",
    "railway",
    "summit",
    "theatre",
    "valley",
    "weather",
    "archive",
    "beacon",
    "canyon",
    "delta",
    "estate",
    "forest",
    "granite",
    "horizon",
    "island",
    "jungle",
    "kernel",
    "ledger",
    "marble",
    "narrow",
    "ocean",
]
VERBS = [
    "opened",
    "described",
    "measured",
    "reported",
    "followed",
    "changed",
    "reached",
    "carried",
    "studied",
    "painted",
    "built",
]
LAYOUTS = ("article", "main", "div", "table")
LANGUAGES = ("en", "en-GB", "de", "fr")


@dataclass(frozen=True, slots=True)
class ArticlePage:
    html: str
    title: str
    description: str
    author: str
    date: str  # ISO 8601, as the page says it
    language: str
    price: str  # as the .price element's text
    paragraphs: tuple[str, ...]  # the article's text, in order
    boilerplate: tuple[str, ...]  # sentences around it that are not the article


def _sentence(rng: random.Random, words: int) -> str:
    chosen = [rng.choice(WORDS) for _ in range(words)]
    chosen.insert(rng.randrange(1, len(chosen)), rng.choice(VERBS))
    return " ".join(chosen).capitalize() + "."


def article_page(seed: int) -> ArticlePage:
    rng = random.Random(seed)
    title = " ".join(rng.choice(WORDS) for _ in range(5)).title() + f" {seed}"
    description = _sentence(rng, 12)
    author = f"{rng.choice(WORDS).title()} {rng.choice(WORDS).title()}"
    date = f"20{rng.randrange(10, 26)}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"
    language = rng.choice(LANGUAGES)
    price = f"{rng.randrange(1, 500)}.{rng.randrange(100):02d}"
    paragraphs = tuple(" ".join(_sentence(rng, rng.randrange(10, 22)) for _ in range(rng.randrange(2, 5)))
                       for _ in range(rng.randrange(3, 9)))  # fmt: skip
    nav = [f"{rng.choice(WORDS).title()} {rng.choice(WORDS)}" for _ in range(8)]
    related = [_sentence(rng, 7) for _ in range(4)]
    ad = "Special offer: " + _sentence(rng, 9)
    cookie = "We use cookies to improve your experience. " + _sentence(rng, 6)
    comment = "Leave a comment: " + _sentence(rng, 8)
    footer = f"Copyright 20{rng.randrange(10, 26)} {author} Media. " + _sentence(rng, 6)
    boilerplate = (*related, ad, cookie, comment, footer)
    e = html.escape
    body = "".join(f"<p>{e(p)}</p>" for p in paragraphs)
    layout = LAYOUTS[seed % len(LAYOUTS)]
    heading = f"<h1>{e(title)}</h1><p class=byline>By {e(author)}, {date}</p>"
    if layout == "article":
        content = f"<article>{heading}{body}</article>"
    elif layout == "main":
        content = f"<main><div class=post>{heading}<div class=entry>{body}</div></div></main>"
    elif layout == "div":
        content = f"<div id=content class=story>{heading}{body}</div>"
    else:
        content = f"<table><tr><td class=nav-cell></td><td class=text>{heading}{body}</td></tr></table>"
    ld = {"@context": "https://schema.org", "@type": "NewsArticle", "headline": title, "author": {"name": author},
          "datePublished": date, "inLanguage": language, "offers": {"price": price}}  # fmt: skip
    related_items = "".join(f"<li><a href=/r/{i}>{e(r)}</a></li>" for i, r in enumerate(related))
    page = (
        f'<!doctype html><html lang="{language}"><head><meta charset="utf-8"><title>{e(title)}</title>'
        f'<meta name="description" content="{e(description)}"><meta name="author" content="{e(author)}">'
        f'<meta property="article:published_time" content="{date}"><meta property="og:title" content="{e(title)}">'
        f'<script type="application/ld+json">{json.dumps(ld)}</script></head><body>'
        f"<div class=cookie-banner><p>{e(cookie)}</p><button>OK</button></div>"
        f"<header><nav><ul>{''.join(f'<li><a href=/s/{i}>{e(n)}</a></li>' for i, n in enumerate(nav))}</ul></nav>"
        "</header>"
        f"{content}"
        f"<aside class=sidebar><h3>Related</h3><ul>{related_items}</ul>"
        f"<div class=ad><p>{e(ad)}</p><span class=price>{price}</span></div></aside>"
        f"<section class=comments><p>{e(comment)}</p><textarea></textarea></section>"
        f"<footer><p>{e(footer)}</p></footer></body></html>"
    )
    return ArticlePage(page, title, description, author, date, language, price, paragraphs, boilerplate)


# The "articles" profile of the test web (testing/server.py): an index linking to pages_per_host articles and
# SHORT_PAGES short pages; each article links to the next few; each short page links to a page only it links to
# (what a contract that rejects short pages must never have requested, unless --follow-rejected).
SHORT_PAGES = 5
NEXT_LINKS = 3
HTML_HEADERS = [("Content-Type", "text/html; charset=utf-8")]


def article_seed(host_ip: str, number: int) -> int:
    """The seed of a host's article ``number`` (its page is ``article_page(seed)``)."""
    return int(host_ip.rsplit(".", 1)[1]) * 10_000 + number


def route(path: str, host_ip: str, articles: int) -> tuple[int, list[tuple[str, str]], bytes]:
    """(status, headers, body) of a path on an "articles" host."""
    if path == "/":
        links = [f"/a/{n}" for n in range(articles)] + [f"/short/{n}" for n in range(SHORT_PAGES)]
        items = "".join(f'<li><a href="{link}">{link}</a></li>' for link in links)
        index = f"<!doctype html><html lang=en><head><title>Index</title></head><body><ul>{items}</ul></body></html>"
        return 200, HTML_HEADERS, index.encode()
    kind, _, number = path.strip("/").partition("/")
    if not number.isdigit():
        return 404, [], b"not found\n"
    n = int(number)
    if kind == "a" and n < articles:
        page = article_page(article_seed(host_ip, n)).html
        more = "".join(f'<a href="/a/{m}">next</a>' for m in range(n + 1, min(n + 1 + NEXT_LINKS, articles)))
        return 200, HTML_HEADERS, page.replace("</body>", f"<div class=more>{more}</div></body>").encode()
    if kind == "short" and n < SHORT_PAGES:
        body = (f"<!doctype html><html lang=en><head><title>Short {n}</title></head><body><h1>Short {n}</h1>"
                f'<p>Too short.</p><a href="/behind-short/{n}">more</a></body></html>')  # fmt: skip
        return 200, HTML_HEADERS, body.encode()
    if kind == "behind-short" and n < SHORT_PAGES:
        return 200, HTML_HEADERS, b"<!doctype html><html><head><title>Behind</title></head><body>x</body></html>"
    return 404, [], b"not found\n"
