"""A crawl's content contract (issue 47): which extracted items make an accepted page, and what a page's verdict is.

A page's verdict is one of ``accepted`` (its item is data), ``rejected`` (the contract refused it: a required field
missing or empty, a text field too short, a language or content type not allowed, or the operator's ``accept``
function said why), ``quarantined`` (the extractor, or ``accept``, failed on it: a person should look), or None
where nothing was extracted (the extractor returned None: not a data page). ``judge`` runs the extractor and the
contract on one page and never raises: whatever the operator's code does to one page is that page's verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from raycrawl.core.clean import describe_exception
from raycrawl.core.page import Page

Verdict = Literal["accepted", "rejected", "quarantined"]
Extractor = Callable[[Page], Mapping[str, Any] | None]
Accept = Callable[[Page, dict[str, Any]], "bool | str"]


@dataclass(frozen=True, slots=True)
class ContentContract:
    required: tuple[str, ...] = ()  # fields an accepted item has, not empty
    min_chars: tuple[tuple[str, int], ...] = ()  # (text field, its least length in characters)
    languages: frozenset[str] = frozenset()  # primary language subtags allowed (the item's "language"); empty: any
    content_types: frozenset[str] = frozenset()  # media types allowed (the page's); empty: any

    def rejects(self, page: Page, item: Mapping[str, Any]) -> str | None:
        """Why the contract rejects the item (None: it does not)."""
        if self.content_types and page.media_type not in self.content_types:
            return f"content type {page.media_type or 'unknown'} is not allowed"
        for name in self.required:
            if _empty(item.get(name)):
                return f"required field {name} is missing"
        for name, least in self.min_chars:
            value = item.get(name)
            length = len(value) if isinstance(value, str) else 0
            if length < least:
                return f"{name} has {length} characters, fewer than {least}"
        if self.languages:
            language = item.get("language")
            primary = language.split("-")[0].split("_")[0].strip().lower() if isinstance(language, str) else ""
            if not primary:
                return "no language (languages are restricted)"
            if primary not in self.languages:
                return f"language {primary} is not allowed"
        return None


@dataclass(slots=True)
class Judgement:
    item: dict[str, Any] | None = None  # what the extractor returned (a copy), None when it returned nothing
    verdict: Verdict | None = None
    reason: str | None = None


def judge(page: Page, extract: Extractor, contract: ContentContract, accept: Accept | None = None) -> Judgement:
    """The page's item and verdict: the extractor run on it, then the contract, then ``accept``; never raises."""
    try:
        made = extract(page)
    except Exception as exc:  # (the operator's code, on a page from the network: quarantined, never fatal)
        return Judgement(None, "quarantined", f"extractor raised {describe_exception(exc)}")
    if made is None:
        return Judgement()
    if not isinstance(made, Mapping):
        return Judgement(None, "quarantined", f"extractor returned {type(made).__name__}, not a dict or None")
    item = dict(made)
    reason = contract.rejects(page, item)
    if reason is not None:
        return Judgement(item, "rejected", reason)
    if accept is not None:
        try:
            said = accept(page, item)
        except Exception as exc:
            return Judgement(item, "quarantined", f"accept raised {describe_exception(exc)}")
        if said is not True:
            return Judgement(item, "rejected", said if isinstance(said, str) and said else "accept said no")
    return Judgement(item, "accepted")


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, str | list | dict | tuple) and not value)
