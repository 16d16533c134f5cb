"""Compression bombs for the hostile test host: small on the wire, ``size`` bytes (default 1 GiB) decoded.

Built from one compressed MiB of zeros repeated, so making a 1 GiB bomb costs well under a second.
"""

from __future__ import annotations

import struct
import zlib
from functools import lru_cache

import brotli

GIB = 1 << 30
_MIB = 1 << 20


@lru_cache(maxsize=4)
def gzip_bomb(size: int = GIB) -> bytes:
    """Concatenated gzip members of 1 MiB of zeros each (a multi-member stream is valid gzip)."""
    member = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    one = member.compress(bytes(_MIB)) + member.flush()
    return one * (size // _MIB)


@lru_cache(maxsize=4)
def deflate_bomb(size: int = GIB) -> bytes:
    """A zlib stream (Content-Encoding: deflate): one fully flushed block of 1 MiB zeros, repeated."""
    c = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    block = c.compress(bytes(_MIB)) + c.flush(zlib.Z_FULL_FLUSH)  # a full flush makes blocks independent
    end = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS).flush(zlib.Z_FINISH)
    adler = 1
    zeros = bytes(_MIB)
    for _ in range(size // _MIB):
        adler = zlib.adler32(zeros, adler)
    return b"\x78\xda" + block * (size // _MIB) + end + struct.pack(">I", adler)


@lru_cache(maxsize=4)
def brotli_bomb(size: int = GIB) -> bytes:
    c = brotli.Compressor(quality=1)
    zeros = bytes(_MIB)
    parts: list[bytes] = [c.process(zeros) for _ in range(size // _MIB)]
    return b"".join(parts) + bytes(c.finish())
