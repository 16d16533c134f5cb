"""A fetched page as an extractor sees it (issue 47): what a person extracting needs, made only when asked for.

The decoded text and the parsed tree cost more than most extractors need (a URL rule, a header, a JSON body), so
each is made on first use and kept: ``page.text`` decodes the body as a browser would (core/links.py), and
``page.tree`` parses it once with selectolax's Lexbor engine, the parser the fetcher uses for links. A rendered page
is its rendered DOM (``rendered`` says so): extractors see what the browser built.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from selectolax.lexbor import LexborHTMLParser

from raycrawl.core.links import decode_html
from raycrawl.core.media_types import media_type


@dataclass(slots=True, eq=False)
class Page:
    url: str  # canonical: the crawl's key for the page
    status: int
    body: bytes  # decoded from its transfer encodings, within max_body_bytes
    headers: tuple[tuple[str, str], ...] = ()  # as received, in order
    requested_url: str = ""  # as requested (the link as it was written); the URL when empty
    final_url: str = ""  # after redirects the fetch followed (robots.txt's only: pages' redirects are links)
    depth: int = 0
    parent: str | None = None
    content_type: str | None = None  # the Content-Type header as sent
    rendered: bool = False  # the body is the rendered DOM (--render)
    links: tuple[str, ...] = ()  # its links, canonical, in document order (what score_links may key scores by)
    _text: str | None = field(default=None, repr=False)
    _tree: LexborHTMLParser | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.requested_url = self.requested_url or self.url
        self.final_url = self.final_url or self.requested_url

    @property
    def text(self) -> str:
        """The body as text (its charset as the HTML standard finds it; bytes invalid in it as U+FFFD)."""
        if self._text is None:
            self._text = (
                self.body.decode("utf-8", "replace") if self.rendered else decode_html(self.body, self.content_type)
            )
        return self._text

    @property
    def tree(self) -> LexborHTMLParser:
        """The page parsed (selectolax's Lexbor tree: ``tree.css("h1")``, ``tree.css_first(".price")``)."""
        if self._tree is None:
            self._tree = LexborHTMLParser(self.text)
        return self._tree

    @property
    def media_type(self) -> str | None:
        """The Content-Type's type/subtype, lower case (None: no header, or one that does not parse)."""
        return media_type(self.content_type) if self.content_type else None

    def header(self, name: str) -> str | None:
        """The first header of that name (any case), or None."""
        wanted = name.lower()
        return next((value for key, value in self.headers if key.lower() == wanted), None)
