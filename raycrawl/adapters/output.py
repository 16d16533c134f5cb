"""The crawl's output directory: pages.jsonl (one record per terminal URL) and stats.json."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from raycrawl.core.clean import clean_value

PAGES_FILE = "pages.jsonl"
STATS_FILE = "stats.json"


class PagesWriter:
    def __init__(self, out_dir: str) -> None:
        self.dir = Path(out_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._file = (self.dir / PAGES_FILE).open("ab")
        self.written = 0

    def write(self, records: Iterable[dict[str, Any]]) -> None:
        lines = [_json_line(r) for r in records]
        if lines:
            self._file.writelines(lines)
            self.written += len(lines)

    def flush(self) -> None:
        self._file.flush()

    def sync(self) -> int:
        """Flush to disk; the file's size, to be recorded in a checkpoint."""
        self._file.flush()
        os.fsync(self._file.fileno())
        return self._file.tell()

    def close(self) -> None:
        self._file.close()


def _json_line(record: dict[str, Any]) -> bytes:
    """One record as a line of valid UTF-8 JSON, whatever strings it holds: a string that was not cleaned where it
    was read (a lone surrogate from a server's bytes) is cleaned here rather than ending the crawl."""
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(clean_value(record), ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def write_stats(out_dir: str, stats: dict[str, Any]) -> Path:
    """stats.json, replaced atomically so a reader never sees half of it."""
    path = Path(out_dir) / STATS_FILE
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(clean_value(stats), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def read_pages(out_dir: str) -> list[dict[str, Any]]:
    path = Path(out_dir) / PAGES_FILE
    if not path.exists():
        return []
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def rewind(out_dir: str, pages_offset: int, checkpoint_id: int) -> tuple[int, int]:
    """Bring the output back to a checkpoint: records after it are cut from pages.jsonl, and WARC files of
    later epochs are deleted (their URLs are queued again by the restore, and will be written again once).
    Returns (bytes cut, WARC files deleted)."""
    from raycrawl.adapters.warc import epoch_of

    path = Path(out_dir) / PAGES_FILE
    cut = 0
    if path.exists():
        size = path.stat().st_size
        if size > pages_offset:
            with path.open("r+b") as f:
                f.truncate(pages_offset)
            cut = size - pages_offset
    deleted = 0
    for warc in (Path(out_dir) / "warc").glob("*.warc.gz"):
        epoch = epoch_of(warc)
        if epoch is not None and epoch > checkpoint_id:
            warc.unlink()
            deleted += 1
    return cut, deleted
