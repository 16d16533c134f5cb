"""The odd hosts of the test web (profiles ``odd``, ``odd-cut-robots``): bytes no well-behaved library would send.

Every response here is written as raw bytes on the socket -- status line, headers, body -- and some connections
are reset in the middle. ``odd`` serves, from its ``/``, one link per case (``CASES`` says what a crawl must
record for each), and a robots.txt that starts with a UTF-8 byte order mark, has a query rule, and a group for a
prefix of the crawler's token (``ray``, which is not ``raycrawl``). ``odd-cut-robots`` resets its robots.txt in
the middle of the body: nothing of that host may be fetched.
"""

from __future__ import annotations

import asyncio
import gzip
import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

DRIP_STEP = 0.02  # seconds between the bytes of /drip-cut (and between two looks for the client's hang-up)
ROBOTS = (
    b"\xef\xbb\xbfUser-agent: *\n"  # a BOM: if it were not skipped, this group would have no user agent
    b"Disallow: /private/\n"
    b"Disallow: /search?q=\n"
    b"\n"
    b"User-agent: ray\n"  # a prefix of 'raycrawl': not our group
    b"Disallow: /\n"
)
# A robots.txt that would disallow everything, reset before its Disallow line arrives.
CUT_ROBOTS = b"User-agent: *\n# the rules follow\n"


@dataclass(frozen=True)
class Raw:
    """A response as bytes on the wire, and what the connection does after them."""

    data: bytes
    after: Literal["keep", "close", "reset", "drip"] = "close"


def _head(status: bytes, headers: list[bytes], body: bytes) -> bytes:
    lines = [b"HTTP/1.1 " + status, *headers, b"Content-Length: %d" % len(body)]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def _html(links: list[str], title: str = "odd") -> bytes:
    anchors = "".join(f'<a href="{href}">{i}</a>\n' for i, href in enumerate(links))
    return f"<!doctype html><html><head><title>{title}</title></head><body>\n{anchors}</body></html>".encode()


def _page(status: bytes, headers: list[bytes], links: list[str], title: str = "odd") -> Raw:
    return Raw(_head(status, headers, _html(links, title)))


HTML = b"Content-Type: text/html"


def _layers(n: int) -> Raw:
    body = _html([f"/found/layers-{n}"])
    for _ in range(n):
        body = gzip.compress(body)
    return Raw(_head(b"200 OK", [HTML, b"Content-Encoding: " + b", ".join([b"gzip"] * n)], body))


# path -> how it is served. Readable pages link to /found/<case>: a crawl must follow them.
ROUTES: dict[str, Callable[[], Raw]] = {
    "/ct-bytes": lambda: _page(b"200 OK", [b"Content-Type: text/html; charset=\xff\xfe\x80"], ["/found/ct-bytes"]),
    "/ct-malformed": lambda: _page(b"200 OK", [b"Content-Type: text/html\xff"], ["/found/ct-malformed"]),
    "/reason-bytes": lambda: _page(b"200 \xff\xfe\x1b[31mOK", [HTML], ["/found/reason-bytes"]),
    "/header-bytes": lambda: _page(b"200 OK", [HTML, b"X-Odd: caf\xe9 \x80\xff"], ["/found/header-bytes"]),
    "/header-name-bytes": lambda: _page(b"200 OK", [HTML, b"X-\xe9t\xe9: x"], ["/found/never-read"]),
    "/header-controls": lambda: _page(
        b"200 OK", [b"Content-Type: text/html; x=\x7f\x1b[2J", b"X-A: \x01\x02"], ["/found/header-controls"]
    ),
    "/charset-zlib": lambda: _page(b"200 OK", [b"Content-Type: text/html; charset=zlib"], ["/found/charset-zlib"]),
    "/charset-base64": lambda: _page(
        b"200 OK", [b"Content-Type: text/html; charset=base64"], ["/found/charset-base64"]
    ),
    "/charset-rot13": lambda: _page(b"200 OK", [b"Content-Type: text/html; charset=rot13"], ["/found/charset-rot13"]),
    "/charset-hex": lambda: _page(b"200 OK", [b"Content-Type: text/html; charset=hex_codec"], ["/found/charset-hex"]),
    "/layers-5": lambda: _layers(5),
    "/layers-6": lambda: _layers(6),
    "/retry-after-bytes": lambda: Raw(_head(b"503 Busy", [b"Retry-After: \xff\xfe1", HTML], b"busy")),
    "/location-bytes": lambda: Raw(_head(b"302 Found", [b"Location: /found/loc\xff\xfe ation"], b"")),
    "/cut-body": lambda: Raw(_head(b"200 OK", [HTML], _html(["/found/never"]) * 20)[:300], "reset"),
    "/garbage-status": lambda: Raw(b"HTTX/9 \xff\xfe nonsense\r\n\r\n", "close"),
    "/bad-chunked": lambda: Raw(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n", "close"),
    "/nothing": lambda: Raw(b"", "close"),
    "/huge-header": lambda: Raw(b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 200_000 + b"\r\n\r\n", "close"),
    "/links-as-written": lambda: _page(
        b"200 OK",
        [HTML],
        ["/find?b=2&amp;a=1&amp;a=0", "/search?q=x&amp;lang=en", "/dir\\sub", "/sp%7ecial", "/private/x"],
    ),
    "/drip-cut": lambda: Raw(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 1000000\r\n\r\n", "drip"),
}

# What a crawl must record for each URL of the odd host: path as requested -> (outcome, error contains).
CASES: dict[str, tuple[str, str]] = {
    "/ct-bytes": ("fetched", ""),
    "/found/ct-bytes": ("fetched", ""),
    "/ct-malformed": ("fetched", ""),  # a Content-Type that does not parse: the body is sniffed, links followed
    "/found/ct-malformed": ("fetched", ""),
    "/reason-bytes": ("fetched", ""),
    "/found/reason-bytes": ("fetched", ""),
    "/header-bytes": ("fetched", ""),
    "/found/header-bytes": ("fetched", ""),
    "/header-controls": ("fetched", ""),
    "/found/header-controls": ("fetched", ""),
    "/charset-zlib": ("fetched", ""),
    "/found/charset-zlib": ("fetched", ""),
    "/charset-base64": ("fetched", ""),
    "/found/charset-base64": ("fetched", ""),
    "/charset-rot13": ("fetched", ""),
    "/found/charset-rot13": ("fetched", ""),
    "/charset-hex": ("fetched", ""),
    "/found/charset-hex": ("fetched", ""),
    "/header-name-bytes": ("error", "ClientResponseError"),  # (aiohttp refuses a header name that is no token)
    "/layers-5": ("fetched", ""),
    "/found/layers-5": ("fetched", ""),
    "/layers-6": ("error", "more than 5 Content-Encoding layers"),
    "/retry-after-bytes": ("error", "HTTP 503"),
    "/location-bytes": ("fetched", ""),
    "/found/loc%FF%FE%20ation": ("fetched", ""),
    "/cut-body": ("error", ""),
    "/garbage-status": ("error", ""),
    "/bad-chunked": ("error", ""),
    "/nothing": ("error", ""),
    "/huge-header": ("error", ""),
    "/links-as-written": ("fetched", ""),
    "/find?b=2&a=1&a=0": ("fetched", ""),
    "/search?q=x&lang=en": ("robots_denied", "robots"),
    "/dir/sub": ("fetched", ""),
    "/sp%7Ecial": ("fetched", ""),
    "/private/x": ("robots_denied", "robots"),
    "/drip-cut": ("error", "Deadline"),
}


def index_links(cut_robots_netloc: str) -> list[str]:
    """The odd host's ``/``: every case, and pages of the host whose robots.txt is cut."""
    cases = [path for path in ROUTES]
    return [*cases, f"http://{cut_robots_netloc}/", f"http://{cut_robots_netloc}/p/1"]


def route(profile: str, path: str, cut_robots_netloc: str) -> Raw:
    if profile == "odd-cut-robots":
        if path == "/robots.txt":
            head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 500\r\n\r\n"
            return Raw(head + CUT_ROBOTS, "reset")
        return _page(b"200 OK", [HTML], [], "must never be fetched")
    if path == "/robots.txt":
        return Raw(_head(b"200 OK", [b"Content-Type: text/plain"], ROBOTS))
    if path == "/":
        return _page(b"200 OK", [HTML], index_links(cut_robots_netloc), "odd index")
    make = ROUTES.get(path.split("#", 1)[0])
    if make is not None:
        return make()
    if path.startswith(("/found/", "/find", "/dir/", "/sp")):
        return _page(b"200 OK", [HTML], [], path)
    return Raw(_head(b"404 Not Found", [], b"not found\n"))


async def send(
    raw: Raw, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, on_cut: Callable[[], None]
) -> bool:
    """Write ``raw``; True if the connection may serve another request."""
    try:
        writer.write(raw.data)
        await writer.drain()
    except ConnectionError:  # (the client gave up first: a header too big for it, say)
        return False
    if raw.after == "keep":
        return True
    if raw.after == "reset":  # an RST, not a FIN: the client sees the connection cut in the middle
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()
        return False
    if raw.after == "drip":  # a body that never ends: one byte per step until the client hangs up
        try:
            while not reader.at_eof():
                writer.write(b"x")
                await writer.drain()
                await asyncio.sleep(DRIP_STEP)
        except ConnectionError:
            pass
        on_cut()
        return False
    return False
