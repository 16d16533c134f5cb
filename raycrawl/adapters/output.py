"""The crawl's output in its storage (adapters/storage.py: a local directory or a URI).

    pages/pages-e000003-shard000.jsonl      page records, one part per shard and checkpoint cut
    warc/raycrawl-e000003-<node>-<pid>-<ms>.warc.gz   WARC, one part per fetch worker buffer and cut
    items/raycrawl-e000003-<node>-<pid>-<ms>.parquet  accepted items (with an extractor), per worker buffer and cut
    rejected/raycrawl-e000003-...parquet     rejected and quarantined pages' items, with their reasons
    committed.json                           the parts that make up the output, as of the current checkpoint
    stats.json                               the crawl's counters (replaced every few seconds)
    checkpoints/                             the default checkpoint store

A part is output only once a committed checkpoint lists it (``committed.json`` repeats that list for
readers): a crash between writing parts and committing leaves parts no checkpoint lists, which a ``--resume``
deletes and a reader never reads. So every record is in the output exactly once, on any filesystem.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from raycrawl.adapters.storage import DOUBLED_PROBE, Storage, StorageError, is_doubled_gzip, open_storage
from raycrawl.core.clean import clean_value

PAGES_DIR = "pages"
WARC_DIR = "warc"
STATS_FILE = "stats.json"
COMMITTED_FILE = "committed.json"
ITEMS_DIR = "items"  # (adapters/items.py's parts)
REJECTED_DIR = "rejected"
PART_DIRS = (PAGES_DIR, WARC_DIR, ITEMS_DIR, REJECTED_DIR)


def pages_part(epoch: int, writer: str, period: str | None = None) -> str:
    """A page part's name: ``pages/[PERIOD/]pages-e<epoch>-<writer>.jsonl`` (a period with --rollover)."""
    return f"{in_period(PAGES_DIR, period)}/pages-e{epoch:06d}-{writer}.jsonl"


def in_period(directory: str, period: str | None) -> str:
    return f"{directory}/{period}" if period else directory


class PagesBuffer:
    """Records written since the last cut, in a local file; ``cut`` makes them one part in the storage."""

    def __init__(self, writer: str = "coordinator") -> None:
        self.writer = writer
        self._dir = Path(tempfile.mkdtemp(prefix="raycrawl-pages-"))
        self._path = self._dir / "buffer.jsonl"
        self._file = self._path.open("wb")
        self.written = 0  # records written in all (for progress)
        self.size = 0  # bytes in the buffer now

    def write(self, records: Iterable[dict[str, Any]]) -> None:
        lines = [_json_line(r) for r in records]
        if lines:
            self._file.writelines(lines)
            self.written += len(lines)
            self.size += sum(map(len, lines))

    def flush(self) -> None:
        self._file.flush()

    def cut(self, storage: Storage, epoch: int, period: str | None = None) -> str | None:
        """Store the buffered records as a part of ``epoch`` (in ``period``'s directory) and start an empty buffer;
        the part's name, or None when there was nothing to store."""
        if not self.size:
            return None
        self._file.flush()
        name = pages_part(epoch, self.writer, period)
        storage.put_file(name, str(self._path))
        self.discard()
        return name

    def discard(self) -> None:
        """Forget the buffered records (a rollback: they are written again when their URLs are fetched again)."""
        self._file.seek(0)
        self._file.truncate()
        self.size = 0

    def close(self) -> None:
        self._file.close()
        shutil.rmtree(self._dir, ignore_errors=True)


_LINE = orjson.OPT_APPEND_NEWLINE | orjson.OPT_NON_STR_KEYS


def _json_line(record: dict[str, Any]) -> bytes:
    """One record as a line of valid UTF-8 JSON, whatever strings it holds: a string that was not cleaned where it
    was read (a lone surrogate from a server's bytes) is cleaned here rather than ending the crawl.

    orjson writes the line in ~0.5 us where json.dumps took ~5.7 (a light page's record; benchmarks/README.md,
    issue 51); what it refuses (a lone surrogate, an integer past 64 bits) goes the slow way, cleaned."""
    try:
        return orjson.dumps(record, option=_LINE)
    except orjson.JSONEncodeError:  # (a TypeError: what it cannot or will not write)
        return (json.dumps(clean_value(record), ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def write_stats(storage: Storage, stats: dict[str, Any]) -> None:
    """stats.json, replaced whole so a reader never sees half of it."""
    storage.put(STATS_FILE, (json.dumps(clean_value(stats), indent=2, sort_keys=True) + "\n").encode("utf-8"))


def write_committed(storage: Storage, checkpoint_id: int, parts: Iterable[str]) -> None:
    body = {"checkpoint": checkpoint_id, "parts": sorted(parts)}
    storage.put(COMMITTED_FILE, (json.dumps(body, indent=1) + "\n").encode())


def committed_parts(storage: Storage, directory: str | None = None) -> list[str]:
    """The parts of the output as of the last committed checkpoint ([] before the first); only those in
    ``directory`` (PAGES_DIR, WARC_DIR) when it is given."""
    raw = storage.read(COMMITTED_FILE)
    if raw is None:
        return []
    parts: list[str] = json.loads(raw)["parts"]
    return parts if directory is None else [name for name in parts if name.startswith(directory + "/")]


def remove_uncommitted(storage: Storage, keep: Iterable[str]) -> list[str]:
    """Delete the parts no committed checkpoint lists (written before a crash, or by a cut that failed)."""
    kept = set(keep)
    stray = [name for directory in PART_DIRS for name in storage.list(directory, recursive=True) if name not in kept]
    storage.delete(stray)
    return stray


def unwrap_doubled_parts(storage: Storage, parts: Iterable[str]) -> list[str]:
    """Rewrite the ``.gz`` parts an older raycrawl stored in object storage as gzip inside gzip (see
    adapters/storage.py) as the plain gzip they should be, so archive tools can read the whole crawl. Returns
    their names. Each is one atomic replacement: interrupted, a part stays as it was, readable either way."""
    fixed = []
    for name in parts:
        if not name.endswith(".gz") or not is_doubled_gzip(storage.read_raw(name, DOUBLED_PROBE) or b""):
            continue
        data = storage.read(name)  # (unwrapped once)
        if data is None:
            raise StorageError(f"{storage.show(name)} is listed in {COMMITTED_FILE} but missing")
        storage.put(name, data)
        fixed.append(name)
    return fixed


def has_output(storage: Storage) -> bool:
    return storage.exists(COMMITTED_FILE) or any(storage.list(d) for d in PART_DIRS)


def clear_output(storage: Storage) -> None:
    """Everything a crawl wrote here, but the checkpoints (their store clears itself)."""
    for directory in PART_DIRS:
        storage.delete_dir(directory)
    storage.delete([STATS_FILE, COMMITTED_FILE])


def read_pages(location: str, filesystem: Any = None) -> list[dict[str, Any]]:
    """Every committed record of the crawl at ``location`` (a directory or a URI), as dicts."""
    return [record for part in page_parts(location, filesystem) for record in part]


def page_parts(location: str, filesystem: Any = None) -> Iterator[list[dict[str, Any]]]:
    """The committed records of the crawl at ``location``, one page part at a time (a crawl's records need not fit
    in memory at once)."""
    storage = open_storage(location, filesystem)
    for name in committed_parts(storage, PAGES_DIR):
        data = storage.read(name)
        if data is None:
            raise StorageError(f"{storage.show(name)} is listed in {COMMITTED_FILE} but missing")
        yield [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
