"""Items in a fetch worker's buffer, and as Parquet parts in the output (issue 47; core/items.py says what a line
and a row are).

A worker appends each page's item line to a buffer file of the current checkpoint epoch beside its WARC buffer
(``raycrawl-e<epoch>-<host>-<pid>-<ms>.items.jsonl``), and the page's result carries where the line is (a span,
like its WARC's). At the cut the node keeps exactly the lines of the results that became records (core/parts.py)
and stores them as Parquet: accepted items in ``items/<file>.parquet``, the others in ``rejected/<file>.parquet``,
listed by the checkpoint like every other part -- so each accepted URL's item is in the output exactly once.
"""

from __future__ import annotations

import io
import json
import os
import socket
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from raycrawl.adapters.output import ITEMS_DIR, REJECTED_DIR
from raycrawl.adapters.storage import Storage, StorageError
from raycrawl.core.items import PROVENANCE, VERDICT_COLUMNS, ColumnType, ItemLine, ItemSchema

BUFFER_SUFFIX = ".items.jsonl"
TYPE_KEY = b"raycrawl_type"  # each item column's type (core/items.py), in its field's metadata
TYPE_CONFLICT = "type_conflict"  # the rule counted for an accepted item whose column types did not fit

ARROW_TYPES: dict[ColumnType, pa.DataType] = {
    "bool": pa.bool_(),
    "int": pa.int64(),
    "float": pa.float64(),
    "string": pa.string(),
    "list<string>": pa.list_(pa.string()),
    "json": pa.string(),
}
PROVENANCE_SCHEMA = pa.schema([(name, pa.string()) for name in PROVENANCE])
REJECTED_SCHEMA = pa.schema([*PROVENANCE_SCHEMA, *((name, pa.string()) for name in VERDICT_COLUMNS),
                             ("item", pa.string())])  # fmt: skip


class ItemSink:
    """One worker's item buffer file of one checkpoint epoch."""

    def __init__(self, directory: str, epoch: int) -> None:
        Path(directory).mkdir(parents=True, exist_ok=True)
        self.epoch = epoch
        name = f"raycrawl-e{epoch:06d}-{socket.gethostname()}-{os.getpid()}-{int(time.time() * 1000)}{BUFFER_SUFFIX}"
        self.path = Path(directory) / name
        self._file = self.path.open("ab")

    def write(self, line: ItemLine) -> tuple[int, int]:
        """Append the line; where it is, [start, end)."""
        data = line.to_json()
        start = self._file.tell()
        self._file.write(data)
        return start, start + len(data)

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def is_item_buffer(file: str) -> bool:
    return file.endswith(BUFFER_SUFFIX)


@dataclass(slots=True)
class ItemParts:
    """What one buffer file's kept lines became."""

    accepted: pa.Table | None = None
    rejected: pa.Table | None = None
    conflicts: int = 0  # accepted items that did not fit the schema (written among the rejected)
    columns: dict[str, ColumnType] = field(default_factory=dict)  # the schema after them


def item_parts(lines: Iterable[bytes], columns: Mapping[str, ColumnType]) -> ItemParts:
    """The lines' items as tables, typed by the crawl's ``columns`` as known so far (grown by new ones)."""
    schema = ItemSchema(dict(columns))
    accepted: list[dict[str, Any]] = []
    rejected: list[dict[str, Any]] = []
    out = ItemParts()
    for raw in lines:
        if not raw.strip():
            continue
        line = ItemLine.from_json(raw)
        if line.verdict == "accepted" and line.item is not None:
            row, clash = schema.admit(line.item)
            if clash is None:
                accepted.append(line.provenance() | row)
                continue
            out.conflicts += 1
            line.verdict, line.verdict_reason = "rejected", f"{TYPE_CONFLICT}: {clash}"
        if line.item is None and line.verdict != "quarantined":
            continue
        rejected.append(
            line.provenance() | {"verdict": line.verdict, "verdict_reason": line.verdict_reason,
                                 "item": None if line.item is None else json.dumps(line.item, ensure_ascii=False)}
        )  # fmt: skip
    if accepted:
        typed = (pa.field(n, ARROW_TYPES[t], metadata={TYPE_KEY: t}) for n, t in schema.columns.items())
        arrow = pa.schema([*PROVENANCE_SCHEMA, *typed])
        out.accepted = pa.Table.from_pylist(accepted, schema=arrow)
    if rejected:
        out.rejected = pa.Table.from_pylist(rejected, schema=REJECTED_SCHEMA)
    out.columns = schema.columns
    return out


def parquet_bytes(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue()


def part_names(file: str, directory_of: Any) -> tuple[str, str]:
    """The items part and the rejected part a buffer file becomes (``directory_of(dir)``: with its period)."""
    stem = file.removesuffix(BUFFER_SUFFIX)
    return f"{directory_of(ITEMS_DIR)}/{stem}.parquet", f"{directory_of(REJECTED_DIR)}/{stem}.parquet"


def read_table(storage: Storage, name: str) -> pa.Table:
    """A stored part, whole (StorageError when it cannot be read)."""
    data = storage.read(name)
    if data is None:
        raise StorageError(f"{storage.show(name)} is listed in the checkpoint but missing")
    return pq.read_table(pa.BufferReader(data))


def stored_schema(storage: Storage, name: str) -> pa.Schema:
    """A stored part's schema (its footer only is read)."""
    try:
        with storage.fs.open_input_file(storage.path(name)) as f:
            return pq.read_schema(f)
    except OSError as exc:
        raise StorageError(
            f"{storage.show(name)} is listed in the checkpoint but its schema cannot be read ({exc})"
        ) from None


def stored_columns(storage: Storage, name: str) -> dict[str, ColumnType]:
    """The item columns of a stored items part."""
    return columns_of(stored_schema(storage, name))


def columns_of(schema: pa.Schema) -> dict[str, ColumnType]:
    """An items part's item columns and their types (its provenance columns left out)."""
    out: dict[str, ColumnType] = {}
    for f in schema:
        kind = (f.metadata or {}).get(TYPE_KEY, b"").decode()
        if f.name not in PROVENANCE and kind in ARROW_TYPES:
            out[f.name] = kind
    return out
