"""WARC output: a request and a response record for every fetch (built by FastWARC), gzip per record (ISA-L).

Each worker process appends to its own buffer file on its own node's disk (``buffer_dir``), so fetch tasks
write bodies where they are instead of shipping them through the coordinator; at each checkpoint cut the
node copies the records that became output into the store (actors/output_cut.py, core/parts.py). File names
carry the checkpoint epoch they belong to (``raycrawl-e000003-...``) and are kept by the parts made of them.
The body stored is the decoded one (what was parsed and hashed); Content-Encoding and Transfer-Encoding
are removed from the stored headers to match it. Status line and headers are stored as the server sent them,
bytes that are not UTF-8 included (``HttpStatus``).
"""

from __future__ import annotations

import hashlib
import io
import os
import socket
import tempfile
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from fastwarc.warc import WarcRecord, WarcRecordType
from isal import isal_zlib

from raycrawl.core.decoding import TRANSFER_HEADERS
from raycrawl.core.revisits import Revisit
from raycrawl.core.urls import path_of

# Every record is a gzip member of its own (what WARC readers expect), compressed by ISA-L at its level 2. Measured
# here (benchmarks/README.md, issue 32): zlib at level 6 took ~65 us of the ~200 us of writing a light page's two
# records (a compressor's state is allocated and cleared per member), ISA-L ~22 us for the same size within 1%; on
# a 185 KB page that compresses 150x, 29 us against zlib's 615 us, for 1.4x the bytes.
GZIP_LEVEL = 2
GZIP_WBITS = 31  # (16 + 15: a gzip header and trailer around the deflate stream)
_EMPTY_SHA1 = hashlib.sha1(b"").digest()


def gzip_member(data: bytes) -> bytes:
    """``data`` as one gzip member (a WARC reader finds each record at its member's start)."""
    return bytes(isal_zlib.compress(data, GZIP_LEVEL, GZIP_WBITS))


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
        lines += [k + b": " + v for k, v in self.raw_headers if k.decode("latin-1").lower() not in TRANSFER_HEADERS]
        lines.append(b"Content-Length: %d" % body_length)
        return b"\r\n".join(lines) + b"\r\n\r\n"


@dataclass(frozen=True, slots=True)
class WrittenRecord:
    """Where a fetch's records went ([start, end) in the file), and its response (or revisit) record's id and date:
    what a later recrawl's revisit record refers to."""

    start: int
    end: int
    record_id: str
    date: str


def warc_date(at: float) -> str:
    """A WARC-Date (WARC 1.1: UTC, to the microsecond; no fraction when it is 0, as warcio writes it)."""
    return datetime.fromtimestamp(at, UTC).replace(tzinfo=None).isoformat() + "Z"


WARC_VERSION = "1.1"  # sub-second WARC-Date, and the 1.1 revisit profiles (warcio writes both for "1.1")


def _new_record_id() -> str:
    return f"<urn:uuid:{uuid.uuid4()}>"


def _record(kind: WarcRecordType, record_id: str, date: str, content_type: str) -> WarcRecord:
    record = WarcRecord()
    record.init_headers(kind, record_id[5:-1].encode())  # (FastWARC takes the id without "<urn:" and ">")
    record.headers["WARC-Date"] = date
    record.headers["Content-Type"] = content_type
    return record


def _serialised(record: WarcRecord, payload_digest: bytes | None) -> bytes:
    """The record's bytes, with its block digest and (given) its payload digest."""
    out = io.BytesIO()
    record.write(out, checksum_data=True, payload_digest=payload_digest)
    return out.getvalue()


class WarcSink:
    """One WARC file of one fetch worker and checkpoint epoch, opened by a ``warcinfo`` record (``info``: the
    software, the crawl and the settings that matter); every record after it points at that record."""

    def __init__(self, directory: str, epoch: int = 0, info: Mapping[str, str] | None = None) -> None:
        Path(directory).mkdir(parents=True, exist_ok=True)
        self.epoch = epoch
        name = f"raycrawl-e{epoch:06d}-{socket.gethostname()}-{os.getpid()}-{int(time.time() * 1000)}.warc.gz"
        self.path = Path(directory) / name
        self._file = self.path.open("ab")
        fields = info or {"software": "raycrawl"}
        warcinfo = _record(WarcRecordType.warcinfo, _new_record_id(), warc_date(time.time()), "application/warc-fields")
        warcinfo.headers["WARC-Filename"] = name
        warcinfo.set_bytes_content("".join(f"{k}: {v}\r\n" for k, v in fields.items()).encode())
        self._warcinfo_id = warcinfo.headers["WARC-Record-ID"]
        self._file.write(gzip_member(_serialised(warcinfo, None)))
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
        proxy: str | None = None,
    ) -> WrittenRecord:
        """Append a response (or, with ``revisit``, a revisit record standing for an earlier capture of the same
        payload) and its request, linked by WARC-Concurrent-To. ``at``: the capture's time (the WARC-Date);
        ``record_id``: the response's WARC-Record-ID, when others were told it before it was written; ``proxy``:
        the proxy that carried the exchange, redacted (a ``WARC-Proxy`` field of the response: WARC 1.1 allows
        fields of one's own, section 4).
        Built in memory first and appended whole: a failure while building (the fetcher's fault boundary turns
        it into the URL's error record) leaves no half record.

        FastWARC builds the records and their digests (WARC-Block-Digest, and the payload's, sha1 as warcio wrote
        them): with warcio this took ~0.23 ms a page, most of a fetch worker's work after the fetch itself."""
        date = warc_date(time.time() if at is None else at)
        response_id = record_id or _new_record_id()
        block = status.block(len(body))
        if revisit is None:
            response = _record(WarcRecordType.response, response_id, date, "application/http; msgtype=response")
            response.set_bytes_content(block + body)
            payload_digest: bytes | None = hashlib.sha1(body).digest()
        else:
            response = _record(WarcRecordType.revisit, response_id, date, "application/http; msgtype=response")
            for name, value in revisit.warc_headers().items():
                response.headers[name] = value
            response.set_bytes_content(block)  # (the headers only: the payload is the earlier capture's)
            payload_digest = None
        headers = response.headers
        headers["WARC-Target-URI"] = url
        headers["WARC-Warcinfo-ID"] = self._warcinfo_id
        if ip:
            headers["WARC-IP-Address"] = ip
        if truncated:
            headers["WARC-Truncated"] = "length"  # WARC 1.1 section 5.13
        if proxy:
            headers["WARC-Proxy"] = proxy
        request = _record(WarcRecordType.request, _new_record_id(), date, "application/http; msgtype=request")
        request.headers["WARC-Target-URI"] = url
        request.headers["WARC-Warcinfo-ID"] = self._warcinfo_id
        request.headers["WARC-Concurrent-To"] = response_id
        lines = [f"GET {path_of(url)} HTTP/1.1", *(f"{k}: {v}" for k, v in request_headers)]
        request.set_bytes_content(("\r\n".join(lines) + "\r\n\r\n").encode("utf-8", "surrogateescape"))
        written = gzip_member(_serialised(response, payload_digest)) + gzip_member(_serialised(request, _EMPTY_SHA1))
        start = self._file.tell()
        self._file.write(written)
        return WrittenRecord(start, start + len(written), response_id, date)

    def write_conversion(self, url: str, content: bytes, content_type: str, refers_to: str) -> int:
        """Append a ``conversion`` record (WARC 1.1 section 6.8) of the response ``refers_to`` names -- a rendered
        page's DOM, or its screenshot -- and return the file's end after it (the fetch's records end there)."""
        record = _record(WarcRecordType.conversion, _new_record_id(), warc_date(time.time()), content_type)
        record.headers["WARC-Target-URI"] = url
        record.headers["WARC-Warcinfo-ID"] = self._warcinfo_id
        record.headers["WARC-Refers-To"] = refers_to
        record.set_bytes_content(content)
        self._file.write(gzip_member(_serialised(record, None)))
        return self._file.tell()

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()
