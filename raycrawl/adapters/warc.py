"""WARC output (warcio): a request and a response record for every fetch, gzip per record (level 6).

Each worker process appends to its own buffer file on its own node's disk (``buffer_dir``), so fetch tasks
write bodies where they are instead of shipping them through the coordinator; at each checkpoint cut the
node copies the records that became output into the store (actors/output_cut.py, core/parts.py). File names
carry the checkpoint epoch they belong to (``raycrawl-e000003-...``) and are kept by the parts made of them.
The body stored is the decoded one (what was parsed and hashed); Content-Encoding and Transfer-Encoding
are removed from the stored headers to match it. Status line and headers are stored as the server sent them,
bytes that are not UTF-8 included (``HttpStatus``).
"""

from __future__ import annotations

import io
import os
import socket
import tempfile
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from warcio.statusandheaders import StatusAndHeaders
from warcio.timeutils import datetime_to_iso_date
from warcio.warcwriter import WARCWriter

from raycrawl.core.revisits import Revisit
from raycrawl.core.urls import path_of

_DROPPED_HEADERS = frozenset({"content-encoding", "transfer-encoding", "content-length"})
# zlib's default. warcio's own gzip uses 9, which took ~5 of the ~8 ms of writing a 230 KB page here (6: ~2.5 ms)
# for a few percent smaller files.
GZIP_LEVEL = 6
# Every record is a gzip member of its own, so a compressor is made per record. zlib's default memLevel (8) makes
# it allocate and clear ~256 KB each time, which costs more than compressing a small record: below SMALL_RECORD
# bytes memLevel 5 is used (1.5 KB: 32 -> 19 us, same output). Not above: on a 300 KB page of random letters it
# took 17.4 ms against 8.5 ms (and 1% more bytes).
GZIP_SMALL_MEM_LEVEL = 5
SMALL_RECORD = 16 * 1024


class _GzipMembers:
    """A file for warcio to write to: what it writes between two ``flush()`` calls becomes one gzip member.

    warcio flushes once at the end of every record, so each record is its own member, as with its own
    ``gzip=True`` (what WARC readers expect), only compressed at ``GZIP_LEVEL``.
    """

    def __init__(self, file: BinaryIO) -> None:
        self.file = file  # (may be swapped between records)
        self._parts: list[bytes] = []

    def write(self, data: bytes) -> int:
        self._parts.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        if not self._parts:  # (an empty member would be a valid but pointless 20 bytes)
            return
        data = b"".join(self._parts)
        self._parts = []
        mem_level = GZIP_SMALL_MEM_LEVEL if len(data) < SMALL_RECORD else zlib.DEF_MEM_LEVEL
        compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, zlib.MAX_WBITS + 16, mem_level)
        self.file.write(compressor.compress(data) + compressor.flush())


BUFFER_ROOT = "raycrawl-buffers"


def buffer_path(name: str) -> str:
    """A WARC buffer directory: ``name`` under this node's temporary directory (an absolute ``name`` as it is)."""
    return name if os.path.isabs(name) else os.path.join(tempfile.gettempdir(), BUFFER_ROOT, name)


def epoch_of(path: Path) -> int | None:
    """The checkpoint epoch in a WARC file name written by WarcSink, or None for other files."""
    parts = path.name.split("-")
    if len(parts) > 2 and parts[0] == "raycrawl" and parts[1][:1] == "e" and parts[1][1:].isdigit():
        return int(parts[1][1:])
    return None


@dataclass(frozen=True, slots=True)
class HttpStatus:
    """A response's status line and headers as they came off the wire (bytes a server sent, kept as sent)."""

    status: int
    reason: bytes
    raw_headers: list[tuple[bytes, bytes]]

    def block(self, body_length: int) -> bytes:
        """The HTTP header block stored in the WARC: the raw status line and headers, less the ones that
        describe a transfer the stored (decoded) body no longer has, and its real Content-Length."""
        lines = [b"HTTP/1.1 %d %s" % (self.status, self.reason)]
        lines += [k + b": " + v for k, v in self.raw_headers if k.decode("latin-1").lower() not in _DROPPED_HEADERS]
        lines.append(b"Content-Length: %d" % body_length)
        return b"\r\n".join(lines) + b"\r\n\r\n"


class _RawHeaders(StatusAndHeaders):  # type: ignore[misc]
    """warcio's headers with the block written as received: warcio would re-encode (and %-escape) every value
    that is not ASCII, and refuses a header name or reason phrase that is not; WARC keeps the bytes sent."""

    def __init__(self, status: HttpStatus, body_length: int) -> None:
        text = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in status.raw_headers]
        super().__init__(f"{status.status} {status.reason.decode('latin-1')}", text, protocol="HTTP/1.1")
        self._raw = status.block(body_length)

    def compute_headers_buffer(self, header_filter: Any = None) -> None:
        self.headers_buff = self._raw


@dataclass(frozen=True, slots=True)
class WrittenRecord:
    """Where a fetch's records went ([start, end) in the file), and its response (or revisit) record's id and date:
    what a later recrawl's revisit record refers to."""

    start: int
    end: int
    record_id: str
    date: str


def warc_date(at: float) -> str:
    """A WARC-Date (WARC 1.1: UTC, to the microsecond) of a wall-clock time."""
    return str(datetime_to_iso_date(datetime.fromtimestamp(at, UTC).replace(tzinfo=None), use_micros=True))


WARC_VERSION = "1.1"  # sub-second WARC-Date, and the 1.1 revisit profiles (warcio writes both for "1.1")


class WarcSink:
    """One WARC file of one fetch worker and checkpoint epoch, opened by a ``warcinfo`` record (``info``: the
    software, the crawl and the settings that matter); every record after it points at that record."""

    def __init__(self, directory: str, epoch: int = 0, info: Mapping[str, str] | None = None) -> None:
        Path(directory).mkdir(parents=True, exist_ok=True)
        self.epoch = epoch
        name = f"raycrawl-e{epoch:06d}-{socket.gethostname()}-{os.getpid()}-{int(time.time() * 1000)}.warc.gz"
        self.path = Path(directory) / name
        self._file = self.path.open("ab")
        # One writer for the file's life (making one costs a hostname lookup and a parser); each record is built
        # in a buffer of its own, swapped in under the writer.
        self._members = _GzipMembers(self._file)
        self._writer = WARCWriter(self._members, gzip=False, warc_version=WARC_VERSION)
        warcinfo = self._writer.create_warcinfo_record(name, dict(info or {"software": "raycrawl"}))
        self._warcinfo_id: str = warcinfo.rec_headers.get_header("WARC-Record-ID")
        self._writer.write_record(warcinfo)
        self._file.flush()
        self.head = self._file.tell()  # the warcinfo record's end: every part made of this file starts with it

    def write(
        self,
        url: str,
        request_headers: list[tuple[str, str]],
        status: HttpStatus,
        body: bytes,
        truncated: bool = False,
        ip: str | None = None,
        at: float | None = None,
        revisit: Revisit | None = None,
        record_id: str | None = None,
    ) -> WrittenRecord:
        """Append a response (or, with ``revisit``, a revisit record standing for an earlier capture of the same
        payload) and its request, linked by WARC-Concurrent-To. ``at``: the capture's time (the WARC-Date);
        ``record_id``: the response's WARC-Record-ID, when others were told it before it was written.
        Built in memory first and appended whole: a failure while building (the fetcher's fault boundary turns
        it into the URL's error record) leaves no half record."""
        request = StatusAndHeaders(f"GET {path_of(url)} HTTP/1.1", request_headers, is_http_request=True)
        response = _RawHeaders(status, len(body))
        buffer = io.BytesIO()
        self._members.file = buffer
        w = self._writer
        extra = {"WARC-Warcinfo-ID": self._warcinfo_id, "WARC-Date": warc_date(time.time() if at is None else at)}
        if record_id:
            extra["WARC-Record-ID"] = record_id
        if ip:
            extra["WARC-IP-Address"] = ip
        if truncated:
            extra["WARC-Truncated"] = "length"  # WARC 1.1 section 5.13
        if revisit is not None:
            response_record = w.create_warc_record(
                url, "revisit", http_headers=response, warc_headers_dict=extra | revisit.warc_headers()
            )
        else:
            # With the lengths given, warcio digests the bodies where they are instead of copying each into a
            # temporary file first (that copy was ~10% of a fetch worker's CPU).
            response_record = w.create_warc_record(
                url, "response", payload=io.BytesIO(body), length=len(body), http_headers=response,
                warc_headers_dict=extra,
            )  # fmt: skip
        request_record = w.create_warc_record(
            url, "request", payload=io.BytesIO(b""), length=0, http_headers=request,
            warc_headers_dict={"WARC-Warcinfo-ID": self._warcinfo_id},
        )  # fmt: skip
        w.write_request_response_pair(request_record, response_record)
        start = self._file.tell()
        self._file.write(buffer.getvalue())
        headers = response_record.rec_headers
        return WrittenRecord(
            start, self._file.tell(), headers.get_header("WARC-Record-ID"), headers.get_header("WARC-Date")
        )

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()
