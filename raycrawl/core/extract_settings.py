"""What a fetch worker needs to extract items from pages (issue 47): the extraction section of the crawl's settings.

Its fields carry the names of the configuration's (``CrawlConfig``), whose defaults are these. ``extract`` and
``accept`` are specs (``builtin:NAME``, ``module:function``) or, from Python, the functions themselves (shipped to
the workers by Ray); the worker makes them into functions once (adapters/extraction.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from raycrawl.core.contract import ContentContract

EXTRACT_TIMEOUT = 10.0  # seconds one page's extraction (the extractor and accept) may take; then quarantined


@dataclass(frozen=True, slots=True)
class ExtractSettings:
    extract: str | Callable[..., Any] | None = None
    extract_fields: tuple[str, ...] = ()  # NAME=css:SELECTOR[::text|::attr(NAME)] (core/extractors.py)
    accept: str | Callable[..., Any] | None = None  # accept(page, item) -> True | "reason"
    contract: ContentContract = field(default_factory=ContentContract)
    extract_timeout: float = EXTRACT_TIMEOUT
    schema_version: str = "1"  # the operator's version of the items' schema, a column of every item
    score_links: str | Callable[..., Any] | None = None  # score_links(page, item) -> float | {url: float}

    @property
    def extractor_name(self) -> str:
        """What the items' ``extractor`` column says made them."""
        names = [spec_name(self.extract)] if self.extract is not None else []
        if self.extract_fields:
            names.append("fields")
        return "+".join(names)


def spec_name(spec: str | Callable[..., Any]) -> str:
    if isinstance(spec, str):
        return spec
    module = getattr(spec, "__module__", None) or "?"
    return f"{module}:{getattr(spec, '__qualname__', type(spec).__name__)}"


def field_table(entries: tuple[str, ...]) -> dict[str, str]:
    """``NAME=SPEC`` entries as a table (ValueError naming an entry without a name)."""
    out: dict[str, str] = {}
    for entry in entries:
        name, sep, spec = entry.partition("=")
        if not sep or not name.strip() or not spec.strip():
            raise ValueError(f"extract_fields: {entry!r}: expected NAME=css:SELECTOR, e.g. price=css:.price::text")
        out[name.strip()] = spec.strip()
    return out
