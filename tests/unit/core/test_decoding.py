"""Content-Encoding decoded within a byte limit: bombs of 1 GiB stop at the limit using little memory."""

import gzip
import tracemalloc
import zlib

import brotli
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raycrawl.core.decoding import BoundedDecoder, DecodingError
from raycrawl.testing.bombs import GIB, brotli_bomb, deflate_bomb, gzip_bomb

LIMIT = 10 * 1024 * 1024
ENCODERS = {
    "gzip": gzip.compress,
    "deflate": zlib.compress,
    "br": brotli.compress,
    "identity": lambda b: b,
}


def decode(encoding: str | None, data: bytes, limit: int = LIMIT, chunk: int = 65536) -> BoundedDecoder:
    decoder = BoundedDecoder(encoding, limit)
    decoder.body = b"".join(  # type: ignore[attr-defined]
        decoder.feed(data[i : i + chunk]) for i in range(0, len(data), chunk) if not decoder.truncated
    )
    return decoder


@pytest.mark.parametrize(("encoding", "bomb"), [("gzip", gzip_bomb), ("deflate", deflate_bomb), ("br", brotli_bomb)])
def test_a_1_gib_bomb_stops_at_the_limit_in_bounded_memory(encoding: str, bomb) -> None:  # type: ignore[no-untyped-def]
    data = bomb(GIB)
    assert len(data) < 2 * 1024 * 1024  # small on the wire ...
    tracemalloc.start()
    decoder = decode(encoding, data)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert decoder.truncated
    assert len(decoder.body) == LIMIT == decoder.size  # ... cut exactly at the limit
    assert decoder.body == bytes(LIMIT)
    assert peak < 4 * LIMIT  # never a decoded chunk much larger than the limit


@pytest.mark.parametrize("encoding", ["gzip", "x-gzip", "deflate", "br", "identity", None])
@pytest.mark.parametrize("chunk", [1, 7, 65536])
def test_ordinary_bodies_decode_whole(encoding: str | None, chunk: int) -> None:
    body = b"<html>" + bytes(range(256)) * 40 + b"</html>"
    coding = (encoding or "identity").replace("x-", "")
    decoder = decode(encoding, ENCODERS[coding](body), chunk=chunk)
    assert decoder.body == body and not decoder.truncated


def test_exactly_the_limit_is_not_truncated_one_more_is() -> None:
    assert not decode("gzip", gzip.compress(bytes(2048)), limit=2048).truncated
    over = decode("gzip", gzip.compress(bytes(2049)), limit=2048)
    assert over.truncated and len(over.body) == 2048


def test_raw_deflate_and_multi_member_gzip_and_stacked_codings() -> None:
    raw = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    assert decode("deflate", raw.compress(b"hello raw") + raw.flush()).body == b"hello raw"
    assert decode("gzip", gzip.compress(b"one ") + gzip.compress(b"two")).body == b"one two"
    stacked = brotli.compress(gzip.compress(b"layered"))  # applied gzip first, then br
    assert decode("gzip, br", stacked).body == b"layered"


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br"])
def test_corrupt_data_is_a_decoding_error(encoding: str) -> None:
    with pytest.raises(DecodingError):
        decode(encoding, b"\x00\xffnot compressed at all" * 10)


def test_unknown_encoding_is_a_decoding_error() -> None:
    with pytest.raises(DecodingError, match="zstd"):
        BoundedDecoder("zstd", LIMIT)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["gzip", "deflate", "br", "identity", "gzip, br"]), st.binary(max_size=2048), st.integers(1, 64))
def test_any_bytes_decode_or_fail_cleanly_and_terminate(encoding: str, data: bytes, chunk: int) -> None:
    try:
        decoder = decode(encoding, data, limit=4096, chunk=chunk)
    except DecodingError:
        return
    assert len(decoder.body) <= 4096


def test_more_than_five_content_encoding_layers_is_an_error_before_any_work() -> None:
    import gzip

    from raycrawl.core.decoding import MAX_CODINGS, BoundedDecoder, DecodingError

    body = b"<html>ok</html>"
    for _ in range(MAX_CODINGS):
        body = gzip.compress(body)
    assert BoundedDecoder(", ".join(["gzip"] * MAX_CODINGS), 1024).feed(body) == b"<html>ok</html>"
    with pytest.raises(DecodingError, match="more than 5"):
        BoundedDecoder(", ".join(["gzip"] * (MAX_CODINGS + 1)), 1024)
    with pytest.raises(DecodingError, match="more than 5"):
        BoundedDecoder("gzip," * 1_000_000, 1024)  # (split no further than needed to tell)


@pytest.mark.parametrize(
    "label", ["zlib", "base64", "rot13", "hex", "bz2", "uu", "quopri", "idna", "utf-7", "x-no-such"]
)
def test_a_charset_label_that_is_no_whatwg_encoding_falls_back(label: str) -> None:
    from raycrawl.core.links import decode_html, html_charset

    page = b'<html><a href="/x">\xc3\xa9</a></html>'
    assert html_charset(page, f"text/html; charset={label}") == ("utf-8", 0)
    assert decode_html(page, f"text/html; charset={label}") == '<html><a href="/x">é</a></html>'


@pytest.mark.parametrize(
    ("label", "name"),
    [
        ("latin1", "windows-1252"),
        (" UTF8 ", "utf-8"),
        ("x-sjis", "shift_jis"),
        ("csiso2022kr", "utf-8"),
        ("gb2312", "gbk"),
    ],
)
def test_whatwg_labels_are_honoured(label: str, name: str) -> None:
    from raycrawl.core.links import html_charset

    assert html_charset(b"<html>", f"text/html; charset={label}") == (name, 0)
