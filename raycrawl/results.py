"""A crawl's records, and its items, as Ray Datasets, read lazily from its output files (never through the driver).

``read_results(out)`` reads the committed page parts (``committed.json``: adapters/output.py) from a directory
or a URI with Ray Data in Ray tasks, with a schema: integer status and timings, ``fetched_at`` a UTC timestamp.
It works on a crawl that is still running (up to its last checkpoint). A line that is not a whole record (a
part cut short by hand) is left out: each batch is parsed by pyarrow's JSON reader; a batch it refuses is
parsed line by line, keeping the lines that are whole records.
"""

from __future__ import annotations

import io
import json
import logging
from typing import Any

import pyarrow as pa
import pyarrow.json as pa_json

from raycrawl.adapters.items import PROVENANCE_SCHEMA, REJECTED_SCHEMA, stored_schema
from raycrawl.adapters.output import ITEMS_DIR, PAGES_DIR, REJECTED_DIR, committed_parts
from raycrawl.adapters.storage import open_storage

RESULT_SCHEMA = pa.schema(
    [
        ("url", pa.string()),
        ("requested_url", pa.string()),
        ("final_url", pa.string()),
        ("status", pa.int32()),
        ("outcome", pa.string()),
        ("depth", pa.int32()),
        ("parent", pa.string()),
        ("fetched_at", pa.timestamp("ms", tz="UTC")),
        ("elapsed_ms", pa.float64()),
        ("content_type", pa.string()),
        ("bytes", pa.int64()),
        ("sha256", pa.string()),
        ("outlinks", pa.list_(pa.string())),
        ("attempts", pa.int32()),
        ("error", pa.string()),
        ("etag", pa.string()),
        ("last_modified", pa.string()),
        ("warc_id", pa.string()),
        ("warc_date", pa.string()),
        ("kind", pa.string()),
        ("verdict", pa.string()),
        ("verdict_reason", pa.string()),
    ]
)
_PARSE = pa_json.ParseOptions(explicit_schema=RESULT_SCHEMA, unexpected_field_behavior="ignore")


def read_results(out: str, filesystem: Any = None) -> Any:
    """The committed records of the crawl at ``out`` (a directory or a URI such as ``s3://bucket/crawl``) as a
    lazy ``ray.data.Dataset`` with ``RESULT_SCHEMA``."""
    import ray.data

    quiet_ray_data()
    storage = open_storage(out, filesystem)
    paths = [storage.path(name) for name in committed_parts(storage, PAGES_DIR)]
    if not paths:
        return ray.data.from_arrow(RESULT_SCHEMA.empty_table())
    return ray.data.read_text(paths, filesystem=storage.fs).map_batches(records_table, batch_format="pyarrow")


def read_items(out: str, filesystem: Any = None, rejected: bool = False) -> Any:
    """The committed items of the crawl at ``out`` (a directory or a URI) as a lazy ``ray.data.Dataset``: the
    provenance columns (url, fetched_at, warc_id, extractor, schema_version), then the item's columns as the
    extractor returned them (adapters/items.py). ``rejected``: the rejected and quarantined pages' items instead,
    with ``verdict``, ``verdict_reason`` and the item as JSON text."""
    import ray.data

    quiet_ray_data()
    storage = open_storage(out, filesystem)
    names = committed_parts(storage, REJECTED_DIR if rejected else ITEMS_DIR)
    if not names:
        return ray.data.from_arrow((REJECTED_SCHEMA if rejected else PROVENANCE_SCHEMA).empty_table())
    paths = [storage.path(name) for name in names]
    schemas = [stored_schema(storage, name) for name in names]
    # Parts made before a column was first seen lack it (null there); every part has one type per column
    # (core/items.py), but two nodes may have given a new column two in one cut: then the wider one, if any.
    schema = pa.unify_schemas(schemas, promote_options="permissive")
    return ray.data.read_parquet(paths, filesystem=storage.fs, schema=schema)


def records_table(batch: pa.Table) -> pa.Table:
    """Lines of page parts (a ``text`` column) as a table of records."""
    lines = [line for line in batch.column("text").to_pylist() if line]
    data = "\n".join(lines).encode("utf-8")
    try:
        return pa_json.read_json(io.BytesIO(data), parse_options=_PARSE)
    except pa.ArrowInvalid:  # a line the crawl is still writing: keep the whole ones
        whole = [line for line in lines if _is_record(line)]
        if not whole:
            return RESULT_SCHEMA.empty_table()
        return pa_json.read_json(io.BytesIO("\n".join(whole).encode("utf-8")), parse_options=_PARSE)


def _is_record(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def quiet_ray_data() -> None:
    """Ray Data's progress bars and INFO lines say nothing a raycrawl user can act on: they go to Ray's logs."""
    from ray.data import DataContext

    context = DataContext.get_current()
    context.enable_progress_bars = False
    context.print_on_execution_start = False
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    logging.getLogger("ray.data._internal.progress").setLevel(logging.ERROR)  # ("Progress bars disabled.")
