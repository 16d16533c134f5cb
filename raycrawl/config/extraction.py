"""Pages into data: the extractor, the content contract, the budgets of accepted pages.

Each field is a setting, described once (config/setting.py ``setting``).
"""

from __future__ import annotations

from dataclasses import dataclass

from raycrawl.config.setting import (
    default_of,
    setting,
)
from raycrawl.core.extract_settings import ExtractSettings
from raycrawl.core.frontier_settings import FrontierSettings
from raycrawl.core.settle import RecordRules


@dataclass(frozen=True)
class ExtractionSettings:
    """The settings of ``--help``'s group "pages into data" (a part of ``CrawlConfig``)."""

    # Pages into data (issue 47): an extractor where pages are fetched, a content contract, items exactly once.
    # extract and accept: builtin:NAME or module:function (from Python, the function itself, shipped by Ray)
    extract: str | None = setting(
        None,
        (
            "make items of pages where they are fetched: builtin:article (title, text, markdown, author, "
            "date ...), builtin:meta (title, description, canonical, hreflang, OpenGraph, JSON-LD), or "
            "module:function (extract(page) -> dict | None, importable on the workers); items go to "
            "OUT/items/ (raycrawl.read_items)"
        ),
        group="pages into data",
        metavar="SPEC",
        spec=True,
        toml=("extract", "function"),
    )
    extract_fields: tuple[str, ...] = setting(
        (),
        (
            "an item field from a CSS selector, NAME=css:SELECTOR[::text|::attr(NAME)] or NAME=css-all:... "
            "(a list of every match)"
        ),
        group="pages into data",
        metavar="NAME=css:SELECTOR",
        toml=("extract", "fields"),
    )  # NAME=css:SELECTOR[::text|::attr(NAME)], the TOML [extract.fields]
    extract_timeout: float = setting(
        default_of(ExtractSettings, "extract_timeout"),
        "a page's extraction that runs longer is stopped and the page quarantined",
        group="pages into data",
        unit="seconds",
        toml=("extract", "timeout"),
    )
    schema_version: str = setting(
        default_of(ExtractSettings, "schema_version"),
        "the items' schema version, a column of every item (yours to set)",
        group="pages into data",
        metavar="VERSION",
        toml=("extract", "schema_version"),
    )
    require: tuple[str, ...] = setting(
        (),
        "the contract: an accepted item has this field, not empty (else the page is rejected)",
        group="pages into data",
        metavar="FIELD",
        toml=("accept", "require"),
    )  # the contract (core/contract.py): fields an accepted item has, not empty
    min_chars: tuple[str, ...] = setting(
        (),
        "the contract: FIELD=N, an accepted item's text field has at least N characters",
        group="pages into data",
        metavar="FIELD=N",
        toml=("accept", "min_chars"),
    )  # FIELD=N: a text field's least length
    languages: tuple[str, ...] = setting(
        (),
        "the contract: an accepted item's language is one of these (comma-separated, e.g. en,de)",
        group="pages into data",
        metavar="LANGS",
        toml=("accept", "languages"),
    )  # the item's language's primary subtag, one of these
    content_types: tuple[str, ...] = setting(
        (),
        "the contract: an accepted page's media type is one of these (e.g. text/html)",
        group="pages into data",
        metavar="TYPES",
        toml=("accept", "content_types"),
    )  # the page's media type, one of these
    accept: str | None = setting(
        None,
        "the contract: module:function, accept(page, item) -> True or a reason to reject",
        group="pages into data",
        metavar="module:function",
        spec=True,
        toml=("accept", "function"),
    )  # accept(page, item) -> True | "reason"
    # Focused crawls (issue 48): score_links(page, item) -> float | {link URL: float}, added to the links' scores
    score_links: str | None = setting(
        None,
        (
            "a focused crawl: module:function, score_links(page, item) -> a number for all of the page's "
            "links or {link URL: number}; added to the links' scores (one unit is one level of depth), "
            "higher first"
        ),
        group="pages into data",
        metavar="module:function",
        spec=True,
        toml=("extract", "score_links"),
    )
    follow_rejected: bool = setting(
        default_of(RecordRules, "follow_rejected"),
        "follow the links of pages the contract rejected (by default they are not followed)",
        group="pages into data",
    )
    max_accepted: int | None = setting(
        None,
        "stop after this many pages were accepted (a limit: --resume with a larger one goes on)",
        group="pages into data",
    )
    max_accepted_per_host: int | None = setting(
        default_of(FrontierSettings, "max_accepted_per_host"),
        (
            "pages accepted per host; its further URLs are held for a --resume with a larger budget "
            "(--leftovers record: recorded out_of_budget)"
        ),
        group="pages into data",
    )
