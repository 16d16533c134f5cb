"""WARC files as a Ray Dataset (issue 48): ``read_warc(source)``, one row per response or revisit record.

``source`` is a crawl's output (its committed WARC parts, by ``committed.json``), a WARC file, a directory of them,
a glob (``s3://bucket/crawls/*/warc/*.warc.gz``), or a list of any of these -- local or in a bucket, through
``pyarrow.fs``. Files are read in Ray tasks, each a file or, for a big file gzipped per record, a byte range of it
(adapters/warc_read.py: with FastWARC; a bad record is counted and skipped, never a crash). A revisit record of a
payload the same files hold (raycrawl writes one for a page whose payload it stored before under another URL) gets
that payload, so every row has its body; one whose capture is elsewhere keeps an empty body and ``resolved`` false.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from raycrawl.adapters.output import COMMITTED_FILE, WARC_DIR, committed_parts
from raycrawl.adapters.storage import Storage, StorageError, open_storage
from raycrawl.adapters.warc_read import ReadCount, is_gzip, read_range

SPLIT_BYTES = 64 << 20  # a file gzipped per record and bigger than this is read in ranges of this size
WARC_SUFFIXES = (".warc", ".warc.gz", ".arc.gz")
ROW_SCHEMA = pa.schema(
    [
        ("url", pa.string()),
        ("record_type", pa.string()),  # response | revisit | skipped (bad records: read_warc(keep_skipped=True))
        ("status", pa.int32()),
        ("headers", pa.list_(pa.list_(pa.string()))),  # the HTTP headers, in order: [name, value]
        ("body", pa.binary()),
        ("content_type", pa.string()),
        ("fetched_at", pa.string()),  # WARC-Date, as written
        ("warc_id", pa.string()),
        ("ip", pa.string()),
        ("refers_to", pa.string()),
        ("payload_digest", pa.string()),
        ("truncated", pa.string()),
        ("resolved", pa.bool_()),  # the body is the payload (false: a revisit whose capture these files lack)
        ("file", pa.string()),
        ("skipped", pa.int64()),  # bad records this row stands for (a "skipped" row); 0 for the others
    ]
)


def read_warc(source: str | Iterable[str], filesystem: Any = None, keep_skipped: bool = False) -> Any:
    """The response and revisit records of ``source``'s WARC files as a lazy ``ray.data.Dataset`` with
    ``ROW_SCHEMA``. ``keep_skipped``: also a row (``record_type`` "skipped", ``skipped`` = how many) for the bad
    records each piece skipped (``skipped_records`` adds them up)."""
    import ray.data

    from raycrawl.results import quiet_ray_data

    quiet_ray_data()
    pieces = warc_pieces([source] if isinstance(source, str) else list(source), filesystem)
    if not pieces:
        return ray.data.from_arrow(ROW_SCHEMA.empty_table())
    rows = ray.data.from_items(pieces, override_num_blocks=len(pieces)).map_batches(
        lambda batch: _read_pieces(batch, filesystem), batch_size=1, batch_format="pyarrow"
    )
    if not keep_skipped:
        rows = rows.filter(expr="record_type != 'skipped'")
    return resolve_revisits(rows)


def skipped_records(source: str | Iterable[str], filesystem: Any = None) -> int:
    """How many bad records reading ``source`` skips (damaged, cut short)."""
    rows = read_warc(source, filesystem, keep_skipped=True).filter(expr="record_type == 'skipped'")
    return int(rows.sum("skipped") or 0) if rows.count() else 0


def resolve_revisits(rows: Any) -> Any:
    """Revisit rows given the payload of the capture they refer to, where ``rows`` hold it."""
    rows = rows.materialize()  # (read once: the revisits' captures are looked up in what was read)
    revisits = rows.filter(expr="record_type == 'revisit'").select_columns(["refers_to"]).take_all()
    wanted = {r["refers_to"] for r in revisits if r["refers_to"]}
    if not wanted:
        return rows
    captures = rows.filter(lambda r: r["record_type"] == "response" and r["warc_id"] in wanted)
    payloads = {r["warc_id"]: r["body"] for r in captures.select_columns(["warc_id", "body"]).take_all()}

    def fill(batch: pa.Table) -> pa.Table:
        bodies = batch.column("body").to_pylist()
        resolved = batch.column("resolved").to_pylist()
        for i, (kind, refers) in enumerate(
            zip(batch.column("record_type").to_pylist(), batch.column("refers_to").to_pylist(), strict=True)
        ):
            if kind == "revisit" and refers in payloads:
                bodies[i], resolved[i] = payloads[refers], True
        batch = batch.set_column(batch.schema.get_field_index("body"), "body", pa.array(bodies, pa.binary()))
        return batch.set_column(batch.schema.get_field_index("resolved"), "resolved", pa.array(resolved, pa.bool_()))

    return rows.map_batches(fill, batch_format="pyarrow")


def warc_pieces(sources: list[str], filesystem: Any = None) -> list[dict[str, Any]]:
    """What the read tasks read: (location, file in it, byte range) for every WARC file ``sources`` name."""
    pieces: list[dict[str, Any]] = []
    for source in sources:
        location, storage, names = _files(source, filesystem)
        for name in names:
            pieces.extend(_split(storage, location, name))
    return pieces


def _files(source: str, filesystem: Any) -> tuple[str, Storage, list[str]]:
    """Where ``source``'s WARC files are (a location, and its storage), and their names there ("": the location is
    the file)."""
    glob = next((i for i, ch in enumerate(source) if ch in "*?["), None)
    if glob is not None:
        location = source[: source.rfind("/", 0, glob) + 1] or "."
        storage = open_storage(location, filesystem)
        pattern = source[len(location) :]
        return location, storage, [n for n in storage.list("", recursive=True) if fnmatch.fnmatch(n, pattern)]
    storage = open_storage(source, filesystem)
    if storage.exists(COMMITTED_FILE):  # a crawl's output: the parts its last checkpoint lists
        return source, storage, committed_parts(storage, WARC_DIR)
    info = storage.fs.get_file_info(storage.root)
    if info.type == pafs.FileType.File:
        return source, storage, [""]
    if info.type == pafs.FileType.NotFound:
        raise StorageError(f"{storage.show()}: no such file or directory")
    return source, storage, [n for n in storage.list("", recursive=True) if n.endswith(WARC_SUFFIXES)]


def _split(storage: Storage, location: str, name: str) -> list[dict[str, Any]]:
    """A file as one piece, or a big one gzipped per record as ranges of SPLIT_BYTES."""
    path = storage.path(name)
    size = storage.fs.get_file_info(path).size or 0
    whole = [{"location": location, "name": name, "start": 0, "end": -1}]
    if size <= SPLIT_BYTES:
        return whole
    with storage.fs.open_input_file(path) as f:
        head = f.read(1 << 16)
    if not is_gzip(head) or not _per_record(head):
        return whole
    return [{"location": location, "name": name, "start": at, "end": min(at + SPLIT_BYTES, size)}
            for at in range(0, size, SPLIT_BYTES)]  # fmt: skip


def _per_record(head: bytes) -> bool:
    """Gzip member by member (another member starts after the first): ranges can be read apart."""
    import zlib

    member = zlib.decompressobj(31)
    try:
        member.decompress(head)
    except zlib.error:
        return False
    return member.eof and member.unused_data[:2] == b"\x1f\x8b"


def _read_pieces(batch: dict[str, Any] | pa.Table, filesystem: Any) -> pa.Table:
    table = batch if isinstance(batch, pa.Table) else pa.table(batch)
    rows: list[dict[str, Any]] = []
    for piece in table.to_pylist():
        storage = open_storage(piece["location"], filesystem)
        path = storage.path(piece["name"])
        count = ReadCount()
        end = None if piece["end"] < 0 else piece["end"]
        try:
            with storage.fs.open_input_file(path) as f:
                for row in read_range(f, piece["start"], end, count):
                    rows.append({**_fields(row), "resolved": row.record_type == "response", "file": path,
                                 "skipped": 0})  # fmt: skip
        except OSError as exc:  # (a file that cannot be opened or read: its rows so far stay, the rest is bad)
            count.bad += 1
            count.problems.append(f"{path}: {exc}")
        if count.bad:
            rows.append({"url": "", "record_type": "skipped", "headers": [], "body": b"", "resolved": False,
                         "file": path, "skipped": count.bad})  # fmt: skip
    return pa.Table.from_pylist(rows, schema=ROW_SCHEMA)


def _fields(row: Any) -> dict[str, Any]:
    return {name: getattr(row, name) for name in ROW_SCHEMA.names if hasattr(row, name)}
