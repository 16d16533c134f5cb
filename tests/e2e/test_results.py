"""results(): a crawl's records as a lazy Ray Dataset read from its output files, with a schema.

200,000 generated records: the driver's own memory stays flat (its peak resident size) while the dataset is
counted, filtered and typed in Ray tasks; a line still being written (a running crawl) is left out, not fatal.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from raycrawl import read_results
from raycrawl.adapters.output import write_committed
from raycrawl.adapters.storage import resolve

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


def _write(directory: Path, count: int, parts: int = 4) -> Path:
    """``count`` records as ``parts`` committed page parts, as a crawl leaves them."""
    (directory / "pages").mkdir(parents=True, exist_ok=True)
    names = [f"pages/pages-e{p + 1:06d}-coordinator.jsonl" for p in range(parts)]
    files = [(directory / name).open("w", encoding="utf-8") for name in names]
    for i in range(count):
        files[i % parts].write(json.dumps(_record(i), separators=(",", ":")) + "\n")
    for f in files:
        f.close()
    write_committed(resolve(str(directory)), parts, names)
    return directory


# The driver's memory is measured in a process of its own, joined to the test's Ray: its peak resident size
# after reading a small output, then a 100 times larger one. (tracemalloc is not used: stopping it while Ray's
# threads allocate can crash CPython 3.11.)
MEASURE = """
import json, resource, sys
import ray
from raycrawl import read_results

ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)

def read(out):
    ds = read_results(out)
    counts = [ds.count(), ds.filter(lambda r: r["status"] == 404).count()]
    schema = ds.schema()
    first = ds.take(3)
    return counts, {n: str(t) for n, t in zip(schema.names, schema.types)}, first[0]["fetched_at"].microsecond

def peak_kib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

read(sys.argv[2])  # (imports and Ray Data's one-time set-up, out of the measurement)
small = read(sys.argv[2]); small_kib = peak_kib()
big = read(sys.argv[3]); big_kib = peak_kib()
print(json.dumps({"small": small, "big": big, "small_kib": small_kib, "big_kib": big_kib}))
"""


def test_results_are_read_in_ray_tasks_with_the_documented_types_and_flat_driver_memory(tmp_path: Path) -> None:
    import subprocess
    import sys

    import ray

    (tmp_path / "small").mkdir()
    (tmp_path / "big").mkdir()
    small, big = _write(tmp_path / "small", 2_000), _write(tmp_path / "big", RECORDS)
    address = ray.get_runtime_context().gcs_address
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, address, str(small), str(big)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    (total, not_found), types, micros = seen["big"]
    assert total == RECORDS and not_found == RECORDS // 10
    assert types["status"] == "int32" and types["depth"] == "int32" and types["bytes"] == "int64"
    assert types["elapsed_ms"] == "double" and types["fetched_at"] == "timestamp[ms, tz=UTC]"
    assert types["outlinks"] == "list<item: string>" and micros == 123000
    # Flat: 100 times the records, the same peak (as dicts in this process they would be ~300 MB).
    grown = (seen["big_kib"] - seen["small_kib"]) / 1024
    print(f"driver peak RSS: {seen['small_kib'] / 1024:.0f} MiB after 2,000 records, "
          f"{seen['big_kib'] / 1024:.0f} MiB after {RECORDS:,} (+{grown:.1f} MiB)")  # fmt: skip
    assert grown < 32, grown


def test_a_line_that_is_not_a_whole_record_is_left_out(tmp_path: Path) -> None:
    whole = [json.dumps(_record(i)) for i in range(5)]
    (tmp_path / "pages").mkdir()
    (tmp_path / "pages" / "p.jsonl").write_text("\n".join(whole) + "\n" + whole[0][:40], encoding="utf-8")
    write_committed(resolve(str(tmp_path)), 1, ["pages/p.jsonl"])
    ds = read_results(str(tmp_path))
    assert ds.count() == 5
    assert sorted(r["url"] for r in ds.take_all()) == sorted(json.loads(line)["url"] for line in whole)


def test_no_output_yet_is_an_empty_dataset_with_the_schema(tmp_path: Path) -> None:
    ds = read_results(str(tmp_path))
    assert ds.count() == 0 and "fetched_at" in ds.schema().names
