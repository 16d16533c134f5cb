"""Content-Encoding decoded while streaming, never past a byte limit (decompression bombs stop at the cap).

An HTTP client's own decoding inflates a whole network chunk at once: 64 KiB of gzip can become 64 MiB, and
brotli far more. Here every decoder is asked for at most the room left under the limit (zlib's ``max_length``, brotli's
``output_buffer_limit``), so memory stays within the limit whatever the server sends.
"""

from __future__ import annotations

import zlib
from typing import Protocol

import brotli

ACCEPT_ENCODING = "gzip, deflate, br"
# The headers of a transfer that a decoded body no longer has: dropped wherever the decoded body is stored or
# handed on (WARC records, a page given to a browser), its real length written instead.
TRANSFER_HEADERS = frozenset({"content-encoding", "transfer-encoding", "content-length"})
MAX_CODINGS = 5  # Content-Encoding layers decoded, at most


class DecodingError(ValueError):
    """The body is not valid for its Content-Encoding, or the encoding is one we do not speak."""


class _Step(Protocol):
    def feed(self, data: bytes, room: int) -> bytes: ...

    def pending(self) -> bool: ...


class _Zlib:
    def __init__(self, gzip: bool) -> None:
        self._gzip = gzip
        self._raw_fallback = not gzip  # "deflate" is zlib-wrapped by the spec, raw deflate in the wild
        self._d = zlib.decompressobj(16 + zlib.MAX_WBITS if gzip else zlib.MAX_WBITS)
        self._tail = b""

    def feed(self, data: bytes, room: int) -> bytes:
        data = self._tail + data
        try:
            out = self._d.decompress(data, max(1, room))
        except zlib.error as exc:
            if not self._raw_fallback:
                raise DecodingError(f"bad {'gzip' if self._gzip else 'deflate'} data: {exc}") from None
            self._raw_fallback = False
            self._d = zlib.decompressobj(-zlib.MAX_WBITS)
            return self.feed(data, room)
        self._raw_fallback = False
        self._tail = self._d.unconsumed_tail
        if self._d.eof and self._d.unused_data and self._gzip:  # a further gzip member follows
            rest = self._d.unused_data
            self._d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            self._tail = rest
        return out

    def pending(self) -> bool:
        return bool(self._tail)


class _Brotli:
    def __init__(self) -> None:
        self._d = brotli.Decompressor()

    def feed(self, data: bytes, room: int) -> bytes:
        try:
            if not self._d.can_accept_more_data():
                data_out: bytes = self._d.process(b"", output_buffer_limit=max(1, room))
                if data:
                    raise DecodingError("brotli decoder fell behind")  # never: callers drain pending first
                return data_out
            out: bytes = self._d.process(data, output_buffer_limit=max(1, room))
            return out
        except brotli.error as exc:
            raise DecodingError(f"bad brotli data: {exc}") from None

    def pending(self) -> bool:
        return not self._d.can_accept_more_data()


class _Identity:
    def feed(self, data: bytes, room: int) -> bytes:
        return data

    def pending(self) -> bool:
        return False


def _step_for(coding: str) -> _Step:
    if coding in ("gzip", "x-gzip"):
        return _Zlib(gzip=True)
    if coding == "deflate":
        return _Zlib(gzip=False)
    if coding == "br":
        return _Brotli()
    if coding in ("identity", ""):
        return _Identity()
    raise DecodingError(f"unsupported Content-Encoding {coding[:40]!r}")


class BoundedDecoder:
    """Feed raw body chunks; get decoded bytes, never more than ``limit`` in total.

    ``truncated`` turns true once the decoded body would exceed the limit: stop reading then.
    """

    def __init__(self, content_encoding: str | None, limit: int) -> None:
        codings = [c.strip().lower() for c in (content_encoding or "").split(",", MAX_CODINGS + 1) if c.strip()]
        if len(codings) > MAX_CODINGS:  # (curl stops at 5 too: more is an attack on the decoder's memory and time)
            raise DecodingError(f"more than {MAX_CODINGS} Content-Encoding layers")
        # Codings are listed in the order they were applied: undo them last first.
        self._steps = [_step_for(c) for c in reversed(codings)]
        self.limit = limit
        self.size = 0
        self.truncated = False

    def feed(self, chunk: bytes) -> bytes:
        out = bytearray()
        data = chunk
        while not self.truncated:
            piece = self._run(data)
            data = b""
            out += piece
            if not piece and not any(s.pending() for s in self._steps):
                break
        return bytes(out)

    def _run(self, data: bytes) -> bytes:
        room = self.limit - self.size + 1  # one byte more than fits tells "too large" apart from "exactly full"
        for step in self._steps:
            data = step.feed(data, room)
        if len(data) >= room:
            data = data[: room - 1]
            self.truncated = True
        self.size += len(data)
        return data
