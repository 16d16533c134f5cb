"""Items (issue 47): what an extractor returned for a page, as a line in a fetch worker's buffer and as a row of the
crawl's typed dataset (pure: no I/O).

A fetch worker writes one line per page an extractor gave an item for (or quarantined): the item with its
provenance -- the URL, when it was fetched, its capture's WARC record id, the extractor's name and the operator's
``--schema-version`` -- and its verdict. At a checkpoint cut the node turns the lines of recorded pages into
Parquet (adapters/items.py): accepted items under ``items/``, the rest under ``rejected/``.

The dataset is typed by its columns as the extractor returns them. A column's type is the first one the crawl
stored for it (``ItemSchema``); an item whose value has another type is not written among the items but among the
rejected ones, with the reason, and counted: one odd page never ends the crawl or makes the dataset unreadable.
Values map to columns so: bool, int (64-bit), float (an int is taken in a float column), str; a list of strings
is a list column; any other list or dict is its JSON text (a ``json`` column); None is null in any column, and so
is an empty list in a column whose type is not known yet (it fits a list column and a ``json`` one alike);
anything else is its ``str()``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

ColumnType = Literal["bool", "int", "float", "string", "list<string>", "json"]
PROVENANCE = ("url", "fetched_at", "warc_id", "extractor", "schema_version")
VERDICT_COLUMNS = ("verdict", "verdict_reason")
INT64 = 2**63 - 1


def column_value(value: Any) -> tuple[ColumnType | None, Any]:
    """A value's column type and the value as that column holds it (None, None for a null)."""
    if value is None:
        return None, None
    if isinstance(value, bool):
        return "bool", value
    if isinstance(value, int):
        return ("int", value) if -INT64 - 1 <= value <= INT64 else ("string", str(value))
    if isinstance(value, float):
        return "float", value
    if isinstance(value, str):
        return "string", value
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return "list<string>", list(value)
    if isinstance(value, list | tuple | dict):
        return "json", json.dumps(plain(value), ensure_ascii=False, sort_keys=True)
    return "string", str(value)


def plain(value: Any) -> Any:
    """``value`` made of what JSON holds (the buffer's lines): containers kept, anything else as its ``str()``;
    floats that are not finite as null."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain(v) for v in value]
    return str(value)


def item_fields(item: Mapping[str, Any]) -> dict[str, Any]:
    """The item's fields under the names they get as columns: a field named like a provenance or verdict column
    gets a ``_`` after its name (``url`` -> ``url_``), so both are kept."""
    reserved = set(PROVENANCE) | set(VERDICT_COLUMNS)
    out: dict[str, Any] = {}
    for key, value in item.items():
        name = str(key)
        while name in reserved or name in out:
            name += "_"
        out[name] = value
    return out


@dataclass(slots=True)
class ItemLine:
    """One page's line in a worker's item buffer."""

    url: str
    fetched_at: str
    warc_id: str | None
    extractor: str
    schema_version: str
    verdict: str | None
    verdict_reason: str | None
    item: dict[str, Any] | None

    def to_json(self) -> bytes:
        body = {
            "url": self.url, "fetched_at": self.fetched_at, "warc_id": self.warc_id, "extractor": self.extractor,
            "schema_version": self.schema_version, "verdict": self.verdict, "verdict_reason": self.verdict_reason,
            "item": None if self.item is None else plain(item_fields(self.item)),
        }  # fmt: skip
        return (json.dumps(body, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8", "replace")

    @staticmethod
    def from_json(line: bytes) -> ItemLine:
        d = json.loads(line)
        return ItemLine(
            d["url"], d["fetched_at"], d["warc_id"], d["extractor"], d["schema_version"], d["verdict"],
            d["verdict_reason"], d["item"],
        )  # fmt: skip

    def provenance(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in PROVENANCE}


@dataclass(slots=True)
class ItemSchema:
    """The crawl's item columns and their types, in the order they were first seen."""

    columns: dict[str, ColumnType] = field(default_factory=dict)

    def admit(self, item: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
        """The item as a row (column -> value as stored), and why it does not fit the schema (then the schema is
        unchanged); a fitting item's new columns join the schema."""
        row: dict[str, Any] = {}
        new: dict[str, ColumnType] = {}
        for name, value in item.items():
            have = self.columns.get(name)
            if isinstance(value, list | tuple) and not value:  # (says nothing of its kind: fits any list column)
                row[name] = [] if have == "list<string>" else "[]" if have == "json" else None
                continue
            kind, stored = column_value(value)
            if kind is not None and have is not None and kind != have:
                if have == "float" and kind == "int":
                    stored = float(stored)
                else:
                    return {}, f"column {name} is {kind} here, {have} in the crawl's items"
            elif kind is not None and have is None:
                new[name] = kind
            row[name] = stored
        self.columns.update(new)
        return row, None

    def merge(self, other: Mapping[str, ColumnType]) -> list[str]:
        """Columns another writer added (a node's, at a cut) taken in; the names whose types disagree."""
        clashes = []
        for name, kind in other.items():
            have = self.columns.setdefault(name, kind)
            if have != kind:
                clashes.append(name)
        return clashes
