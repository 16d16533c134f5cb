"""WARC output: a request and a response record for every fetch, gzip per record (ISA-L).

Each worker process appends to its own buffer file on its own node's disk (``buffer_dir``), so fetch tasks
write bodies where they are instead of shipping them through the coordinator; at each checkpoint cut the
node copies the records that became output into the store (actors/output_cut.py, core/parts.py). File names
carry the checkpoint epoch they belong to (``raycrawl-e000003-...``) and are kept by the parts made of them.
The body stored is the decoded one (what was parsed and hashed); Content-Encoding and Transfer-Encoding
are removed from the stored headers to match it. Status line and headers are stored as the server sent them,
bytes that are not UTF-8 included (``HttpStatus``).

Records are formatted here (``record_bytes``: WARC 1.1 section 4, a version line, named fields, the block) rather than
built as FastWARC record objects: the format is a few lines of fields, and FastWARC's objects cost ~50 of the ~75 us
a page's two records took (benchmarks/README.md, issue 51). FastWARC still reads them (adapters/warc_read.py), and
warcio and an archive indexer read them in the tests.
"""

from __future__ import annotations

import os
import socket
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from isal import isal_zlib

from raycrawl.core.decoding import TRANSFER_HEADERS
from raycrawl.core.revisits import Revisit, payload_digest
from raycrawl.core.urls import path_of
from raycrawl.core.utc_text import utc_second_and_micros

# Every record is a gzip member of its own (what WARC readers expect), compressed by ISA-L at its level 2. Measured
# here (benchmarks/README.md, issue 32): zlib at level 6 took ~65 us of the ~200 us of writing a light page's two
# records (a compressor's state is allocated and cleared per member), ISA-L ~22 us for the same size within 1%; on
# a 185 KB page that compresses 150x, 29 us against zlib's 615 us, for 1.4x the bytes.
GZIP_LEVEL = 2
GZIP_WBITS = 31  # (16 + 15: a gzip header and trailer around the deflate stream)
FILE_BUFFER = 1 << 20  # bytes of records a WARC file holds in memory between flushes (at most: flushed as results go)


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
    text, micros = utc_second_and_micros(at)
    return f"{text}.{micros:06d}Z" if micros else text + "Z"


WARC_VERSION = "1.1"  # sub-second WARC-Date, and the 1.1 revisit profiles (warcio writes both for "1.1")


def new_record_id() -> str:
    """A random (version 4) UUID's URN: uuid.uuid4() and its str() cost twice as much, for each record."""
    h = _random.take(32)
    return f"<urn:uuid:{h[:8]}-{h[8:12]}-4{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:]}>"


# The operating system's random bytes, taken RANDOM_POOL at a time: os.urandom releases the GIL for its system call,
# and in a fetch worker, whose event-loop thread holds the GIL while it works, getting it back took ~0.2-0.3 ms of
# the calling thread's time (and ~3 us of its CPU, against ~1) per call (benchmarks/README.md, issue 51).
RANDOM_POOL = 4096


class _RandomHex:
    """Hex digits of the operating system's random bytes, handed out once each."""

    def __init__(self) -> None:
        self.digits, self.taken = "", 0

    def take(self, n: int) -> str:
        if self.taken + n > len(self.digits):
            self.digits, self.taken = os.urandom(RANDOM_POOL).hex(), 0
        self.taken += n
        return self.digits[self.taken - n : self.taken]

    def forget(self) -> None:
        self.digits, self.taken = "", 0


_random = _RandomHex()
os.register_at_fork(after_in_child=_random.forget)  # (a forked child never repeats its parent's digits)


_VARIANT = {c: "89ab"[int(c, 16) & 3] for c in "0123456789abcdef"}  # (RFC 9562: the variant's two bits are 10)


_EMPTY_SHA1 = payload_digest(b"")  # (a request record's: it has no payload)
_NO_LINE_BREAKS = str.maketrans({"\r": "%0D", "\n": "%0A"})


def record_bytes(kind: str, fields: Iterable[tuple[str, str]], block: bytes, payload: str | None = None) -> bytes:
    """One WARC 1.1 record: ``WARC-Type`` ``kind``, the ``fields`` in order (WARC-Record-ID and WARC-Date among
    them), Content-Length and WARC-Block-Digest of ``block`` (labelled as a payload's digest is:
    ``core/revisits.payload_digest``), WARC-Payload-Digest ``payload`` (given), the block.
    A field value cannot break a line: a CR or LF in one (none of ours has any) is percent-encoded."""
    lines = [f"WARC/{WARC_VERSION}\r\nWARC-Type: {kind}\r\n"]
    for name, value in fields:
        if "\r" in value or "\n" in value:
            value = value.translate(_NO_LINE_BREAKS)
        lines.append(f"{name}: {value}\r\n")
    if payload is not None:
        lines.append(f"WARC-Payload-Digest: {payload}\r\n")
    lines.append(f"WARC-Block-Digest: {payload_digest(block)}\r\nContent-Length: {len(block)}\r\n\r\n")
    return "".join(lines).encode("utf-8", "surrogateescape") + block + b"\r\n\r\n"


class WarcSink:
    """One WARC file of one fetch worker and checkpoint epoch, opened by a ``warcinfo`` record (``info``: the
    software, the crawl and the settings that matter); every record after it points at that record."""

    def __init__(self, directory: str, epoch: int = 0, info: Mapping[str, str] | None = None) -> None:
        Path(directory).mkdir(parents=True, exist_ok=True)
        self.epoch = epoch
        name = f"raycrawl-e{epoch:06d}-{socket.gethostname()}-{os.getpid()}-{int(time.time() * 1000)}.warc.gz"
        self.path = Path(directory) / name
        # (written through a buffer of its own size, flushed when results go out: a write to the file releases the
        # GIL, which a fetch worker's other thread then holds for up to its switch interval, as os.urandom's does)
        self._file = self.path.open("ab", buffering=FILE_BUFFER)
        fields = info or {"software": "raycrawl"}
        self._warcinfo_id = new_record_id()
        content = "".join(f"{k}: {v}\r\n" for k, v in fields.items()).encode()
        head = [("WARC-Record-ID", self._warcinfo_id), ("WARC-Date", warc_date(time.time())), ("WARC-Filename", name),
                ("Content-Type", "application/warc-fields")]  # fmt: skip
        self._file.write(gzip_member(record_bytes("warcinfo", head, content)))
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
        it into the URL's error record) leaves no half record."""
        date = warc_date(time.time() if at is None else at)
        response_id = record_id or new_record_id()
        block = status.block(len(body))
        fields = [("WARC-Record-ID", response_id), ("WARC-Date", date), ("WARC-Target-URI", url),
                  ("WARC-Warcinfo-ID", self._warcinfo_id)]  # fmt: skip
        if ip:
            fields.append(("WARC-IP-Address", ip))
        if truncated:
            fields.append(("WARC-Truncated", "length"))  # WARC 1.1 section 5.13
        if proxy:
            fields.append(("WARC-Proxy", proxy))
        fields.append(("Content-Type", "application/http; msgtype=response"))
        if revisit is None:
            response = record_bytes("response", fields, block + body, payload_digest(body))
        else:  # (the headers only: the payload is the earlier capture's)
            response = record_bytes("revisit", [*fields, *revisit.warc_headers().items()], block)
        request_fields = [("WARC-Record-ID", new_record_id()), ("WARC-Date", date), ("WARC-Target-URI", url),
                          ("WARC-Warcinfo-ID", self._warcinfo_id), ("WARC-Concurrent-To", response_id),
                          ("Content-Type", "application/http; msgtype=request")]  # fmt: skip
        lines = [f"GET {path_of(url)} HTTP/1.1", *(f"{k}: {v}" for k, v in request_headers)]
        request_block = ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8", "surrogateescape")
        written = gzip_member(response) + gzip_member(
            record_bytes("request", request_fields, request_block, _EMPTY_SHA1)
        )
        start = self._file.tell()
        self._file.write(written)
        return WrittenRecord(start, start + len(written), response_id, date)

    def write_conversion(self, url: str, content: bytes, content_type: str, refers_to: str) -> int:
        """Append a ``conversion`` record (WARC 1.1 section 6.8) of the response ``refers_to`` names -- a rendered
        page's DOM, or its screenshot -- and return the file's end after it (the fetch's records end there)."""
        fields = [("WARC-Record-ID", new_record_id()), ("WARC-Date", warc_date(time.time())),
                  ("WARC-Target-URI", url), ("WARC-Warcinfo-ID", self._warcinfo_id), ("WARC-Refers-To", refers_to),
                  ("Content-Type", content_type)]  # fmt: skip
        self._file.write(gzip_member(record_bytes("conversion", fields, content)))
        return self._file.tell()

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()
