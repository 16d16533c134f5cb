"""A topical test web (issue 48): pages on two topics, linked mostly within their topic, the wanted one a minority.

The "topics" profile (testing/server.py): every host has ``pages_per_host`` pages ``/t/N``, each about astronomy (the
wanted topic, about one page in five) or cooking, known from the page's host and number (``topic_of``). A page's text
is sentences of its topic's words with a few of the other's; its links go to pages all over the topical hosts,
mostly of its own topic -- an astronomy page's links are 80% astronomy, a cooking page's 95% cooking -- so a crawl
that follows links in the order it finds them meets astronomy at about its share of the web, and one that follows an
astronomy page's links first stays among them. A host's ``/`` links to a handful of its pages, in the web's mix.

And the operator's side of a focused crawl on it, importable by ``module:function`` in every worker: ``extract``
(the page's title, text and topic by a keyword count), ``accept`` (astronomy only) and ``score_links`` (an
astronomy page's links go first).
"""

from __future__ import annotations

import html
import random
from typing import Any

from raycrawl.core.page import Page

WANTED = "astronomy"
WANTED_SHARE = 0.2  # of the web's pages
STAY = {"astronomy": 0.8, "cooking": 0.95}  # the share of a page's links that go to its own topic
LINKS_PER_PAGE = 6
INDEX_LINKS = 10
WORDS = {
    "astronomy": ["planet", "orbit", "telescope", "galaxy", "comet", "nebula", "eclipse", "asteroid", "stellar",
                  "meteor", "pulsar", "quasar", "crater", "solstice", "supernova", "zenith"],
    "cooking": ["recipe", "oven", "simmer", "flour", "butter", "garlic", "skillet", "saucepan", "roast", "dough",
                "pepper", "onion", "braise", "vinegar", "whisk", "pastry"],
}  # fmt: skip
COMMON = ["the", "a", "with", "after", "before", "slowly", "every", "night", "long", "bright", "small", "warm"]
ASTRONOMY_WORDS = frozenset(WORDS["astronomy"])
COOKING_WORDS = frozenset(WORDS["cooking"])
HTML_HEADERS = [("Content-Type", "text/html; charset=utf-8")]


def _host_number(host_ip: str) -> int:
    return int(host_ip.rsplit(".", 1)[1])


def topic_of(host_ip: str, number: int) -> str:
    """The topic of page ``/t/number`` on a host."""
    rng = random.Random(_host_number(host_ip) * 100_003 + number)
    return WANTED if rng.random() < WANTED_SHARE else "cooking"


def _pages_of(topic: str, ips: list[str], pages: int) -> list[tuple[str, int]]:
    return [(ip, n) for ip in ips for n in range(pages) if topic_of(ip, n) == topic]


class TopicalWeb:
    """The pages of the "topics" hosts of one test web (``ips``: their addresses; ``port``: the server's)."""

    def __init__(self, ips: list[str], port: int, pages: int) -> None:
        self.ips, self.port, self.pages = ips, port, pages
        self._by_topic = {topic: _pages_of(topic, ips, pages) for topic in WORDS}

    def url(self, ip: str, number: int) -> str:
        return f"http://{ip}:{self.port}/t/{number}"

    def links(self, ip: str, number: int) -> list[tuple[str, int]]:
        """A page's link targets (host address, page number), in document order."""
        topic = topic_of(ip, number)
        other = "cooking" if topic == WANTED else WANTED
        rng = random.Random(_host_number(ip) * 7_919 + number)
        out = []
        for _ in range(LINKS_PER_PAGE):
            pool = self._by_topic[topic if rng.random() < STAY[topic] else other] or self._by_topic[topic]
            out.append(rng.choice(pool))
        return out

    def index_links(self, ip: str) -> list[int]:
        """What a host's ``/`` links to: its first INDEX_LINKS pages (the web's mix)."""
        return list(range(min(INDEX_LINKS, self.pages)))

    def route(self, path: str, ip: str) -> tuple[int, list[tuple[str, str]], bytes]:
        """(status, headers, body) of a path on a "topics" host."""
        if path == "/":
            items = "".join(f'<li><a href="/t/{n}">page {n}</a></li>' for n in self.index_links(ip))
            return 200, HTML_HEADERS, f"<!doctype html><html><head><title>Index</title></head><body><ul>{items}</ul>" \
                                      "</body></html>".encode()  # fmt: skip
        kind, _, number = path.strip("/").partition("/")
        if kind != "t" or not number.isdigit() or int(number) >= self.pages:
            return 404, [], b"not found\n"
        return 200, HTML_HEADERS, self.page(ip, int(number)).encode()

    def page(self, ip: str, number: int) -> str:
        topic = topic_of(ip, number)
        other = "cooking" if topic == WANTED else WANTED
        rng = random.Random(_host_number(ip) * 31 + number)

        def sentence() -> str:
            words = [rng.choice(WORDS[topic] if rng.random() < 0.45 else COMMON) for _ in range(12)]
            if rng.random() < 0.3:  # (a stray word of the other topic: a classifier counts, it does not look up)
                words.insert(rng.randrange(len(words)), rng.choice(WORDS[other]))
            return " ".join(words).capitalize() + "."

        paragraphs = "".join(f"<p>{html.escape(' '.join(sentence() for _ in range(4)))}</p>" for _ in range(3))
        links = "".join(
            f'<li><a href="http://{target}:{self.port}/t/{n}">more</a></li>' for target, n in self.links(ip, number)
        )
        title = f"{topic.title()} notes {number}"
        return (
            f"<!doctype html><html lang=en><head><title>{title}</title></head><body><h1>{title}</h1>"
            f"<article>{paragraphs}</article><ul class=more>{links}</ul></body></html>"
        )


# --- the operator's side: a keyword classifier ---------------------------------------------------------------


def classify(text: str) -> tuple[str, float]:
    """(topic, confidence in [0, 1]): by which topic's words the text has more of."""
    words = [w.strip(".,;:!?").lower() for w in text.split()]
    astronomy = sum(1 for w in words if w in ASTRONOMY_WORDS)
    cooking = sum(1 for w in words if w in COOKING_WORDS)
    if astronomy + cooking == 0:
        return "none", 0.0
    share = astronomy / (astronomy + cooking)
    return (WANTED, share) if share >= 0.5 else ("cooking", 1.0 - share)


def extract(page: Page) -> dict[str, Any] | None:
    """A page's title, text and topic (None for a page with no article: an index)."""
    article = page.tree.css_first("article")
    if article is None:
        return None
    text = article.text(separator=" ", strip=True)
    topic, confidence = classify(text)
    title = page.tree.css_first("title")
    return {"title": title.text() if title is not None else "", "text": text, "topic": topic,
            "confidence": round(confidence, 3)}  # fmt: skip


def accept(page: Page, item: dict[str, Any]) -> bool | str:
    return True if item.get("topic") == WANTED else f"off topic ({item.get('topic')})"


def score_links(page: Page, item: dict[str, Any] | None) -> float:
    """A focused crawl's steering: the links of a page on the wanted topic go first, by how sure the classifier is
    (5 levels of depth ahead for a page it is sure of); any other page's links keep their depth order."""
    if item is None or item.get("topic") != WANTED:
        return 0.0
    return 5.0 * float(item["confidence"])
