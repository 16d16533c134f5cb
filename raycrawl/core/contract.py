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

    @staticmethod
    def of(
        require: tuple[str, ...] = (),
        min_chars: tuple[str, ...] = (),
        languages: tuple[str, ...] = (),
        content_types: tuple[str, ...] = (),
    ) -> ContentContract:
        """The contract the config's settings of these names describe (ValueError naming the setting that is
        wrong). ``min_chars`` entries are FIELD=N; languages and content types may be given comma-separated."""
        least: list[tuple[str, int]] = []
        for entry in min_chars:
            name, sep, number = entry.partition("=")
            if not sep or not name.strip() or not number.strip().isdigit():
                raise ValueError(f"min_chars: {entry!r}: expected FIELD=N, e.g. text=200")
            least.append((name.strip(), int(number)))
        return ContentContract(
            required=tuple(_split(require)),
            min_chars=tuple(least),
            languages=frozenset(x.lower() for x in _split(languages)),
            content_types=frozenset(x.lower() for x in _split(content_types)),
        )

    @property
    def empty(self) -> bool:
        return not (self.required or self.min_chars or self.languages or self.content_types)

    def rejects(self, page: Page, item: Mapping[str, Any]) -> tuple[str, str] | None:
        """Why the contract rejects the item -- (the rule, as counted; the reason, as recorded) -- or None."""
        if self.content_types and page.media_type not in self.content_types:
            return "content_type", f"content type {page.media_type or 'unknown'} is not allowed"
        for name in self.required:
            if _empty(item.get(name)):
                return f"required:{name}", f"required field {name} is missing"
        for name, least in self.min_chars:
            value = item.get(name)
            length = len(value) if isinstance(value, str) else 0
            if length < least:
                return f"min_chars:{name}", f"{name} has {length} characters, fewer than {least}"
        if self.languages:
            language = item.get("language")
            primary = language.split("-")[0].split("_")[0].strip().lower() if isinstance(language, str) else ""
            if not primary:
                return "language", "no language (languages are restricted)"
            if primary not in self.languages:
                return "language", f"language {primary} is not allowed"
        return None


@dataclass(slots=True)
class Judgement:
    item: dict[str, Any] | None = None  # what the extractor returned (a copy), None when it returned nothing
    verdict: Verdict | None = None
    reason: str | None = None  # why, for the record (None when accepted or nothing was extracted)
    rule: str | None = None  # why, as counted in stats: a key that does not vary with the page


def judge(page: Page, extract: Extractor, contract: ContentContract, accept: Accept | None = None) -> Judgement:
    """The page's item and verdict: the extractor run on it, then the contract, then ``accept``; never raises."""
    try:
        made = extract(page)
    except Exception as exc:  # (the operator's code, on a page from the network: quarantined, never fatal)
        return Judgement(None, "quarantined", f"extractor raised {describe_exception(exc)}", _raised(exc))
    if made is None:
        return Judgement()
    if not isinstance(made, Mapping):
        what = type(made).__name__
        return Judgement(None, "quarantined", f"extractor returned {what}, not a dict or None", "returned:" + what)
    item = dict(made)
    rejected = contract.rejects(page, item)
    if rejected is not None:
        return Judgement(item, "rejected", rejected[1], rejected[0])
    if accept is not None:
        try:
            said = accept(page, item)
        except Exception as exc:
            return Judgement(item, "quarantined", f"accept raised {describe_exception(exc)}", "accept_" + _raised(exc))
        if said is not True:
            return Judgement(item, "rejected", said if isinstance(said, str) and said else "accept said no", "accept")
    return Judgement(item, "accepted")


def _raised(exc: BaseException) -> str:
    return f"raised:{type(exc).__name__}"


def _split(values: tuple[str, ...]) -> list[str]:
    """Entries given one by one or comma-separated (``--languages en,de``), stripped, empty ones dropped."""
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, str | list | dict | tuple) and not value)
