"""Main-text extractors on pages whose article is known (raycrawl/testing/articles.py): quality and CPU per page.

    python -m benchmarks.extractors [--pages 400]

Quality: the share of pages whose extracted text holds every sentence of the article and none of the boilerplate's
(navigation, cookie notice, related stories, ad, comment box, footer). CPU: process time per page, best of 3 passes,
each extractor given the page as a string (raycrawl holds it decoded). Candidates: resiliparse (the FastWARC authors'
C++ extractor, ``main_content=True``) and trafilatura (``favor_precision`` off and on); selectolax's whole-page text
as the floor a main-text extractor must beat.
"""

from __future__ import annotations

import argparse
import re
import time
from collections import Counter
from collections.abc import Callable

from raycrawl.testing.articles import ArticlePage, article_page

_SENTENCE = re.compile(r"[^.]+\.")


def resiliparse_text(html: str) -> str:
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    return str(extract_plain_text(HTMLTree.parse(html), main_content=True))


def trafilatura_text(html: str, precision: bool = False) -> str:
    import trafilatura

    return trafilatura.extract(html, favor_precision=precision, include_comments=False) or ""


def whole_text(html: str) -> str:
    from selectolax.lexbor import LexborHTMLParser

    body = LexborHTMLParser(html).body
    return body.text(separator=" ") if body is not None else ""


KINDS = ("related", "related", "related", "related", "ad", "cookie notice", "comment box", "footer")


def verdict(page: ArticlePage, text: str) -> tuple[bool, bool, set[str]]:
    """(every article sentence is in the text, no boilerplate sentence is, the kinds of boilerplate kept)."""
    flat = " ".join(text.split())
    wanted = [s.strip() for p in page.paragraphs for s in _SENTENCE.findall(p)]
    kept = {kind for kind, b in zip(KINDS, page.boilerplate, strict=True)
            if any(s.strip() in flat for s in _SENTENCE.findall(b))}  # fmt: skip
    return all(s in flat for s in wanted), not kept, kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=400)
    args = parser.parse_args()
    pages = [article_page(seed) for seed in range(args.pages)]
    candidates: dict[str, Callable[[str], str]] = {
        "resiliparse": resiliparse_text,
        "trafilatura": trafilatura_text,
        "trafilatura precision": lambda h: trafilatura_text(h, True),
        "whole page (selectolax)": whole_text,
    }
    print(f"{len(pages)} pages, {sum(len(p.html) for p in pages) / len(pages) / 1024:.1f} KiB each on average")
    print(f"{'extractor':26} {'complete':>9} {'clean':>7} {'both':>7} {'CPU us/page':>12}")
    for name, extract in candidates.items():
        texts = [extract(p.html) for p in pages]  # (warm: imports, caches)
        best = float("inf")
        for _ in range(3):
            started = time.process_time()
            for p in pages:
                extract(p.html)
            best = min(best, time.process_time() - started)
        verdicts = [verdict(p, t) for p, t in zip(pages, texts, strict=True)]
        complete = sum(c for c, _, _ in verdicts) / len(pages)
        clean = sum(k for _, k, _ in verdicts) / len(pages)
        both = sum(c and k for c, k, _ in verdicts) / len(pages)
        kept = Counter(kind for _, _, kinds in verdicts for kind in kinds)
        said = ", ".join(f"{kind} {n / len(pages):.0%}" for kind, n in kept.most_common()) or "-"
        print(f"{name:26} {complete:9.1%} {clean:7.1%} {both:7.1%} {best / len(pages) * 1e6:12.0f}   kept: {said}")


if __name__ == "__main__":
    main()
