"""The WARC ledger (which buffered bytes become output at a cut) and the output's parts in a storage: pure and
storage-level tests, local directory and a real S3 API server."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from raycrawl.adapters.output import (
    PagesBuffer,
    clear_output,
    committed_parts,
    has_output,
    read_pages,
    remove_uncommitted,
    write_committed,
)
from raycrawl.adapters.storage import StorageError, redact_location, resolve
from raycrawl.adapters.warc import HttpStatus, WarcSink
from raycrawl.core.parts import WarcLedger
from raycrawl.core.records import WarcSpan


def span(node: str, file: str, start: int, end: int, head: int = 100) -> WarcSpan:
    return WarcSpan(node, file, head, start, end)


def test_the_ledger_plans_the_kept_spans_after_the_warcinfo_joined_where_adjacent() -> None:
    ledger = WarcLedger()
    ledger.keep([span("n1", "a.warc.gz", 100, 150), span("n1", "a.warc.gz", 200, 260)])
    ledger.keep([span("n1", "a.warc.gz", 150, 200), span("n2", "b.warc.gz", 300, 400, head=90)])
    ledger.saw("n3")  # fetched, nothing kept: its buffers are still cleaned at the cut
    assert ledger.nodes() == ["n1", "n2", "n3"]
    assert ledger.plan("n1") == {"a.warc.gz": [(0, 260)]}
    assert ledger.plan("n2") == {"b.warc.gz": [(0, 90), (300, 400)]}  # (90-300: records no result kept)
    assert ledger.plan("n3") == {}
    assert ledger.largest == 400
    ledger.forget("n2")
    assert ledger.nodes() == ["n1", "n3"] and ledger.largest == 260
    ledger.clear()
    assert ledger.nodes() == [] and ledger.largest == 0


def test_overlapping_spans_are_a_bug_said_loudly() -> None:
    ledger = WarcLedger()
    ledger.keep([span("n", "f", 100, 200), span("n", "f", 150, 250)])
    with pytest.raises(ValueError, match="overlapping"):
        ledger.plan("n")


def test_a_part_made_of_kept_spans_is_a_valid_warc_with_only_those_records(tmp_path: Path) -> None:
    sink = WarcSink(str(tmp_path / "buffer"), epoch=3)
    status = HttpStatus(200, b"OK", [(b"Content-Type", b"text/html")])
    spans = [sink.write(f"http://127.0.0.2/{i}", [("Host", "127.0.0.2")], status, b"<p>%d</p>" % i) for i in range(5)]
    sink.close()
    storage = resolve(str(tmp_path / "out"))
    plan_ledger = WarcLedger()
    plan_ledger.keep([span("n", sink.path.name, w.start, w.end, head=sink.head) for i, w in enumerate(spans) if i != 2])
    storage.put_file("warc/" + sink.path.name, str(sink.path), plan_ledger.plan("n")[sink.path.name])
    data = storage.read("warc/" + sink.path.name) or b""
    records = [(r.rec_type, r.rec_headers.get_header("WARC-Target-URI")) for r in ArchiveIterator(io.BytesIO(data))]
    assert records[0] == ("warcinfo", None)
    responses = [uri for kind, uri in records if kind == "response"]
    assert responses == [f"http://127.0.0.2/{i}" for i in (0, 1, 3, 4)]


@pytest.fixture(params=["local", "s3"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return str(tmp_path / "out") if request.param == "local" else str(request.getfixturevalue("s3_uri"))


def test_only_committed_parts_are_output_and_a_resume_removes_the_rest(location: str) -> None:
    storage = resolve(location)
    assert not has_output(storage)
    buffer = PagesBuffer()
    buffer.write([{"url": "http://a/1"}, {"url": "http://a/2"}])
    first = buffer.cut(storage, 1)
    assert first == "pages/pages-e000001-coordinator.jsonl"
    write_committed(storage, 1, [first])
    buffer.write([{"url": "http://a/3"}])  # stored by a cut whose checkpoint never committed (a crash)
    stray = buffer.cut(storage, 2)
    storage.put("warc/raycrawl-e000002-x.warc.gz", b"not listed")
    assert buffer.cut(storage, 3) is None  # nothing buffered: no empty part
    buffer.close()
    assert [r["url"] for r in read_pages(location)] == ["http://a/1", "http://a/2"]
    assert committed_parts(storage) == [first]
    assert sorted(remove_uncommitted(storage, [first])) == sorted([stray, "warc/raycrawl-e000002-x.warc.gz"])
    assert storage.list("pages") == [first] and storage.list("warc") == []
    assert has_output(storage)
    clear_output(storage)
    assert not has_output(storage) and read_pages(location) == []


def test_a_discarded_buffer_writes_nothing(tmp_path: Path) -> None:
    storage = resolve(str(tmp_path))
    buffer = PagesBuffer()
    buffer.write([{"url": "http://a/1"}])
    buffer.discard()
    assert buffer.cut(storage, 1) is None
    buffer.write([{"url": "http://a/2"}])
    name = buffer.cut(storage, 2)
    buffer.close()
    assert name is not None and (storage.read(name) or b"").count(b"\n") == 1


def test_secrets_in_a_location_are_never_shown() -> None:
    query = "s3://bucket/crawl?endpoint_override=h:9000&scheme=http&access_key=AKIA123&secret_key=s3cr3t"
    shown = redact_location(query)
    assert "AKIA123" not in shown and "s3cr3t" not in shown
    assert shown.startswith("s3://bucket/crawl?endpoint_override=h:9000&scheme=http")
    assert "pw" not in redact_location("abfs://user:pw@account.dfs.core.windows.net/container")
    userinfo = "s3://AKIA123:s3cr3t@bucket/crawl?endpoint_override=127.0.0.1:9&scheme=http"  # (pyarrow's form)
    assert "s3cr3t" not in resolve(userinfo).where and "s3cr3t" not in resolve(userinfo).show("stats.json")
    with pytest.raises(StorageError) as err:
        resolve(query)  # (pyarrow takes keys in the user part only: a key in the query is refused, unshown)
    assert "s3cr3t" not in str(err.value)


def test_a_missing_bucket_is_one_clear_error(s3_server: object) -> None:
    uri = s3_server.uri("no-such-bucket-here", "crawl")  # type: ignore[attr-defined]
    with pytest.raises(StorageError, match="cannot write s3://no-such-bucket-here/crawl/x") as err:
        resolve(uri).put("x", b"y")
    assert "\n" not in str(err.value)


def test_a_bad_uri_is_one_clear_error() -> None:
    with pytest.raises(StorageError, match="out: cannot use nosuchscheme://"):
        resolve("nosuchscheme://bucket/x?secret_key=zzz")
    with pytest.raises(StorageError) as err:
        resolve("nosuchscheme://bucket/x?secret_key=zzz")
    assert "zzz" not in str(err.value)
