"""The test web's request log, read while the server appends to it: only whole records, in order."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from raycrawl.testing.process import whole_lines


def test_a_log_read_while_it_is_written_yields_whole_records_in_order(tmp_path: Path) -> None:
    """The writer appends each record in two writes, split mid-record (as a reader may find a line the server is
    still writing). Every read is a prefix of what was written: no record cut, none starting mid-record."""
    path = tmp_path / "requests.jsonl"
    records = [{"t": 1000.0 + i / 7, "ip": f"127.0.0.{2 + i % 50}", "path": f"/p/{i}"} for i in range(3000)]
    done = threading.Event()

    def writer() -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            for record in records:
                line = (json.dumps(record) + "\n").encode()
                os.write(fd, line[:11])
                os.write(fd, line[11:])
        finally:
            os.close(fd)
            done.set()

    thread = threading.Thread(target=writer)
    thread.start()
    reads = 0
    try:
        while not done.is_set():
            seen = whole_lines(path)
            assert seen == records[: len(seen)]
            reads += 1
    finally:
        thread.join()
    assert whole_lines(path) == records and reads > 0
