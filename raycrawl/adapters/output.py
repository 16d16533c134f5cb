"""The crawl's output directory: pages.jsonl (one record per terminal URL) and stats.json."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

PAGES_FILE = "pages.jsonl"
STATS_FILE = "stats.json"


class PagesWriter:
    def __init__(self, out_dir: str) -> None:
        self.dir = Path(out_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._file = (self.dir / PAGES_FILE).open("a", encoding="utf-8")
        self.written = 0

    def write(self, records: Iterable[dict[str, Any]]) -> None:
        lines = [json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records]
        if lines:
            self._file.writelines(lines)
            self.written += len(lines)

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def write_stats(out_dir: str, stats: dict[str, Any]) -> Path:
    """stats.json, replaced atomically so a reader never sees half of it."""
    path = Path(out_dir) / STATS_FILE
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(stats, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def read_pages(out_dir: str) -> list[dict[str, Any]]:
    path = Path(out_dir) / PAGES_FILE
    if not path.exists():
        return []
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
