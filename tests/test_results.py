"""results(): a crawl's records as a lazy Ray Dataset read from its output files, with a schema.

200,000 generated records: the driver's own memory stays flat (measured with tracemalloc) while the dataset is
counted, filtered and typed in Ray tasks; a line still being written (a running crawl) is left out, not fatal.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from raycrawl import read_results
from raycrawl.adapters.output import PAGES_FILE

pytestmark = pytest.mark.usefixtures("ray_local")
RECORDS = 200_000


def _record(i: int) -> dict[str, object]:
    return {
        "url": f"http://h{i % 50}.test/p/{i}", "requested_url": f"http://h{i % 50}.test/p/{i}?utm_source=x",
        "final_url": f"http://h{i % 50}.test/p/{i}", "status": 200 if i % 10 else 404, "outcome": "fetched",
        "depth": i % 7, "parent": f"http://h{i % 50}.test/", "fetched_at": "2026-11-30T12:00:00.123Z",
        "elapsed_ms": 12.5, "content_type": "text/html", "bytes": 1500 + i, "sha256": "ab" * 32,
        "outlinks": [f"http://h{i % 50}.test/p/{i + 1}", f"http://h{i % 50}.test/p/{i + 2}"], "attempts": 1,
        "error": None,
    }  # fmt: skip


def _write(directory: Path, count: int) -> Path:
    with (directory / PAGES_FILE).open("w", encoding="utf-8") as f:
        for i in range(count):
            f.write(json.dumps(_record(i), separators=(",", ":")) + "\n")
    return directory


def _driver_peak(out: Path) -> tuple[int, dict[str, Any]]:
    """Peak Python memory of this process while the dataset is counted, filtered, typed and sampled."""
    tracemalloc.start()
    try:
        ds = read_results(str(out))
        seen = {"total": ds.count(), "not_found": ds.filter(lambda r: r["status"] == 404).count()}
        seen["schema"] = ds.schema()
        seen["first"] = ds.take(3)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, seen


def test_results_are_read_in_ray_tasks_with_the_documented_types_and_flat_driver_memory(tmp_path: Path) -> None:
    (tmp_path / "small").mkdir()
    (tmp_path / "big").mkdir()
    small, big = _write(tmp_path / "small", 2_000), _write(tmp_path / "big", RECORDS)
    _driver_peak(small)  # (imports and Ray Data's one-time set-up, out of the measurement)
    small_peak, _ = _driver_peak(small)
    big_peak, seen = _driver_peak(big)
    assert seen["total"] == RECORDS and seen["not_found"] == RECORDS // 10
    schema = seen["schema"]
    types = dict(zip(schema.names, schema.types, strict=True))
    assert types["status"] == pa.int32() and types["depth"] == pa.int32() and types["bytes"] == pa.int64()
    assert types["elapsed_ms"] == pa.float64() and types["fetched_at"] == pa.timestamp("ms", tz="UTC")
    assert types["outlinks"] == pa.list_(pa.string())
    assert seen["first"][0]["fetched_at"].microsecond == 123000 and seen["first"][0]["status"] in (200, 404)
    # Flat: 100 times the records, the same driver memory (they would be ~300 MB as dicts here).
    print(f"driver peak: {small_peak / 2**20:.1f} MiB for 2,000 records, {big_peak / 2**20:.1f} MiB for {RECORDS:,}")
    assert big_peak - small_peak < 8 * 2**20, (small_peak, big_peak)


def test_a_line_still_being_written_is_left_out(tmp_path: Path) -> None:
    whole = [json.dumps(_record(i)) for i in range(5)]
    (tmp_path / PAGES_FILE).write_text("\n".join(whole) + "\n" + whole[0][:40], encoding="utf-8")
    ds = read_results(str(tmp_path))
    assert ds.count() == 5
    assert sorted(r["url"] for r in ds.take_all()) == sorted(json.loads(line)["url"] for line in whole)


def test_no_output_yet_is_an_empty_dataset_with_the_schema(tmp_path: Path) -> None:
    ds = read_results(str(tmp_path))
    assert ds.count() == 0 and "fetched_at" in ds.schema().names
