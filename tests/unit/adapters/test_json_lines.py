"""Page records as JSON lines: each a line of strict UTF-8 JSON, whatever a record holds."""

from __future__ import annotations

import json

from raycrawl.adapters.output import _json_line


def test_a_record_is_one_line_of_json_that_reads_back_as_it_was() -> None:
    record = {
        "url": "http://a.test/é",
        "status": 200,
        "elapsed_ms": 0.823,
        "outlinks": ["http://a.test/p/1"],
        "x": None,
    }
    line = _json_line(record)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line.decode("utf-8")) == record


def test_what_the_fast_encoder_refuses_is_written_cleaned_not_lost() -> None:
    record = {"url": "http://a.test/", "error": "bad \udcff byte", "bytes": 2**70, 3: "a key that is no string"}
    line = _json_line(record)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    read = json.loads(line.decode("utf-8"))  # (strict UTF-8: the lone surrogate did not reach the file)
    assert read["url"] == "http://a.test/" and read["bytes"] == 2**70 and read["3"] == "a key that is no string"
    assert "\udcff" not in read["error"] and read["error"].startswith("bad ")
