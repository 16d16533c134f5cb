"""Reading WARC files back (issue 48): one row per response or revisit record, whoever wrote the file.

Files come as they are found: gzip per record (raycrawl's, Heritrix's, warcio's), one gzip stream over the whole
file, or not compressed. Two layers, so that one bad record costs that record only:

- ``_Members`` undoes gzip member by member (zlib, in chunks: a whole-file gzip is never held in memory). A member
  that does not decompress is counted, and reading goes on at the next member's header.
- ``_records`` cuts the decompressed bytes into records by their own framing (``WARC/1.x``, headers, a blank line,
  ``Content-Length`` bytes). A record whose framing is broken (no length, cut short) is counted, and reading goes on
  at the next line that starts a record.

Each record is parsed by FastWARC (headers, HTTP headers, payload). With per-record gzip a file can be read in
byte ranges by several tasks: a range owns the members that start in it (``read_range``).
"""

from __future__ import annotations

import io
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from fastwarc.warc import ArchiveIterator, WarcRecordType

GZIP_MAGIC = b"\x1f\x8b\x08"
CHUNK = 1 << 20
MAX_HEADER_BYTES = 64 * 1024  # a record's WARC headers past this are not a record's
_RECORD_START = re.compile(rb"(?<![^\n])(WARC/1\.[01]\r?\n)")  # at the start, or of a line
_LENGTH = re.compile(rb"\r?\ncontent-length:[ \t]*(\d+)", re.IGNORECASE)
WANTED = WarcRecordType.response | WarcRecordType.revisit


@dataclass(slots=True)
class Row:
    """A response or revisit record, as a row of ``read_warc``'s dataset."""

    url: str
    record_type: str  # response | revisit
    status: int | None
    headers: list[list[str]]  # the HTTP headers, in order: [name, value]
    body: bytes  # the payload (for a revisit: empty until resolved from the capture it refers to)
    content_type: str | None
    fetched_at: str | None  # WARC-Date
    warc_id: str | None
    ip: str | None
    refers_to: str | None = None  # a revisit's WARC-Refers-To: the record id of the capture it stands for
    payload_digest: str | None = None
    truncated: str | None = None  # WARC-Truncated, when the crawler cut the body


@dataclass(slots=True)
class ReadCount:
    records: int = 0  # records read (any type)
    rows: int = 0  # rows made (responses and revisits)
    bad: int = 0  # records (or gzip members) skipped: damaged, cut short
    problems: list[str] = field(default_factory=list)  # the first few, for messages


def is_gzip(head: bytes) -> bool:
    return head[:3] == GZIP_MAGIC


class _Members:
    """The decompressed bytes of a gzip file, member after member, from a member boundary ``start``; stops after
    the first member that starts at or after ``end`` (None: the file's end). A damaged member is counted in
    ``count`` and skipped: reading resumes at the next gzip header."""

    def __init__(self, raw: BinaryIO, start: int, end: int | None, count: ReadCount) -> None:
        self.raw, self.pos, self.end, self.count = raw, start, end, count
        self.buffer = b""  # compressed bytes read, not yet decompressed, starting at self.pos
        raw.seek(start)

    def _more(self) -> bool:
        chunk = self.raw.read(CHUNK)
        self.buffer += chunk
        return bool(chunk)

    def chunks(self) -> Iterator[bytes]:
        while True:
            if not self.buffer and not self._more():
                return
            if self.end is not None and self.pos >= self.end:
                return
            if not self.buffer.startswith(GZIP_MAGIC):
                if not self._resync():
                    return
                continue
            member = zlib.decompressobj(31)
            out: list[bytes] = []
            consumed = made = 0
            try:
                while not member.eof:
                    if consumed >= len(self.buffer) and not self._more():
                        raise zlib.error("cut short")
                    piece = self.buffer[consumed:]
                    out.append(member.decompress(piece))
                    made += len(out[-1])
                    consumed = len(self.buffer) - len(member.unused_data)
                    if sum(map(len, out)) >= CHUNK:  # (a whole-file gzip: hand over as it comes)
                        yield b"".join(out)
                        out = []
            except zlib.error as exc:
                if out:
                    yield b"".join(out)  # (the records it holds whole are good: a whole-file gzip cut short)
                if not made:  # (else the records layer counts the record this cut through)
                    _bad(self.count, f"gzip member at byte {self.pos}: {exc}")
                self.buffer, self.pos = self.buffer[1:], self.pos + 1
                yield b"\x00"  # (the records layer drops what it was cutting: a member boundary is a record's)
                continue
            yield b"".join(out)
            self.buffer, self.pos = self.buffer[consumed:], self.pos + consumed

    def _resync(self) -> bool:
        """Skip to the next gzip header (False: there is none)."""
        while True:
            at = self.buffer.find(GZIP_MAGIC, 1)
            if at >= 0:
                self.buffer, self.pos = self.buffer[at:], self.pos + at
                return True
            keep = len(GZIP_MAGIC) - 1
            self.pos += max(0, len(self.buffer) - keep)
            self.buffer = self.buffer[-keep:] if len(self.buffer) > keep else self.buffer
            if not self._more():
                return False


def _records(chunks: Iterator[bytes], count: ReadCount) -> Iterator[bytes]:
    """Whole records (their bytes) from a decompressed stream; broken framing counted and skipped. A chunk of one
    NUL byte marks a gzip member lost: what was being cut is dropped."""
    data, pos = b"", 0
    for chunk in chunks:
        if chunk == b"\x00":
            if data[pos:].strip():
                _bad(count, "a record in a damaged gzip member")
            data, pos = b"", 0
            continue
        data = data[pos:] + chunk if pos else data + chunk
        pos = 0
        while True:
            record, at, broken = _cut(data, pos)
            if broken:
                _bad(count, "a record whose framing is broken")
            if record is None and at == pos:
                break  # (the next record needs more bytes)
            pos = at
            if record is not None:
                yield record
    if data[pos:].strip():
        _bad(count, "a record cut short at the end")


def _bad(count: ReadCount, problem: str) -> None:
    count.bad += 1
    if len(count.problems) < 10:
        count.problems.append(problem)


def _cut(data: bytes, pos: int) -> tuple[bytes | None, int, bool]:
    """(the first whole record at or after ``pos``, where reading goes on, whether bytes before it were skipped as
    broken); no record: None and where to keep reading from when more bytes come."""
    start = _RECORD_START.search(data, pos)
    if start is None:
        keep = max(pos, len(data) - 16)  # (a tail that may be the start of a record)
        return None, keep, bool(data[pos:keep].strip())
    begin = start.start(1)
    skipped = bool(data[pos:begin].strip())
    head_end = data.find(b"\r\n\r\n", begin, begin + MAX_HEADER_BYTES)
    if head_end < 0:
        if len(data) - begin > MAX_HEADER_BYTES:  # (no end of headers in sight: not a record)
            return None, begin + 4, True
        return None, begin, skipped
    length = _LENGTH.search(data, begin, head_end + 2)
    if length is None:
        return None, head_end + 4, True
    end = head_end + 4 + int(length.group(1))
    if end + 4 > len(data):  # (its block, or the two CRLF after it, are in the next chunk)
        return None, begin, skipped
    tail = end
    while data[tail : tail + 2] == b"\r\n":
        tail += 2
    return data[begin:end] + b"\r\n\r\n", tail, skipped


def row_of(record: Any) -> Row | None:
    """A FastWARC record as a row (None: not a response or revisit)."""
    kind = record.record_type
    if kind not in (WarcRecordType.response, WarcRecordType.revisit):
        return None
    headers = record.headers
    http = record.http_headers if record.is_http else None
    body = record.reader.read()
    return Row(
        url=headers.get("WARC-Target-URI") or "",
        record_type="response" if kind == WarcRecordType.response else "revisit",
        status=http.status_code if http is not None else None,
        headers=[[k, v] for k, v in http.items()] if http is not None else [],
        body=body if kind == WarcRecordType.response else b"",
        content_type=record.http_content_type if http is not None else None,
        fetched_at=headers.get("WARC-Date"),
        warc_id=headers.get("WARC-Record-ID"),
        ip=headers.get("WARC-IP-Address"),
        refers_to=headers.get("WARC-Refers-To"),
        payload_digest=headers.get("WARC-Payload-Digest"),
        truncated=headers.get("WARC-Truncated"),
    )


def read_range(raw: BinaryIO, start: int = 0, end: int | None = None, count: ReadCount | None = None) -> Iterator[Row]:
    """The rows of the records in a file (``raw``, seekable): all of it, or with per-record gzip the members that
    start in [start, end). ``count`` learns how many records were read and skipped."""
    count = count if count is not None else ReadCount()
    raw.seek(0)
    gzipped = is_gzip(raw.read(3))
    if gzipped:
        chunks: Iterator[bytes] = _Members(raw, _member_at(raw, start) if start else 0, end, count).chunks()
    else:
        raw.seek(0)
        chunks = iter(lambda: raw.read(CHUNK), b"")
    for data in _records(chunks, count):
        count.records += 1
        try:
            rows = [row for record in ArchiveIterator(io.BytesIO(data), parse_http=True) if (row := row_of(record))]
        except Exception as exc:  # (OSError from FastWARC; a record whose HTTP part is not what it says)
            _bad(count, f"a record that does not parse: {type(exc).__name__}: {exc}")
            continue
        count.rows += len(rows)
        yield from rows


def _member_at(raw: BinaryIO, start: int) -> int:
    """The first offset at or after ``start`` where a gzip member that holds a WARC record begins (the file's end
    when there is none)."""
    raw.seek(start)
    window = raw.read(CHUNK)
    offset = 0
    while True:
        at = window.find(GZIP_MAGIC, offset)
        if at < 0:
            more = raw.read(CHUNK)
            if not more:
                return start + len(window)
            keep = len(window) - len(GZIP_MAGIC) + 1
            start, window, offset = start + keep, window[keep:] + more, 0
            continue
        try:
            head = zlib.decompressobj(31).decompress(window[at : at + 4096], 16)
        except zlib.error:
            head = b""
        if head.startswith(b"WARC/"):
            return start + at
        offset = at + 1
