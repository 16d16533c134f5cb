"""The hostile host of the test web (profile ``hostile``): every way a server can waste a crawler's resources.

Its ``/`` links to one case each; ``CASES`` says what a crawl must make of them. Links to the canary
(``WebSpec.canary``, a loopback listener that must never be connected to) appear in every address spelling.
"""

from __future__ import annotations

import asyncio
import codecs
import ipaddress
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from raycrawl.testing.bombs import brotli_bomb, deflate_bomb, gzip_bomb

HTML = ("Content-Type", "text/html")
DRIP_INTERVAL = 0.25  # seconds per byte of the slow drip
HUGE_BYTES = 20 * 1024 * 1024
CHAIN_LENGTH = 50  # /chain/0 -> /chain/1 -> ... far past any sane redirect limit
ROBOTS = b"User-agent: *\nDisallow: /private/\n"


@dataclass
class Streamed:
    """A body sent in pieces (a drip, or one too big to build in memory): declared length and its chunks."""

    length: int
    chunks: Callable[[], AsyncIterator[bytes]]


Body = bytes | Streamed
Response = tuple[int, list[tuple[str, str]], Body]


def prepare() -> None:
    """Build (and cache) the compression bombs."""
    gzip_bomb(), deflate_bomb(), brotli_bomb()


def canary_spellings(canary: str) -> list[str]:
    """URLs of the canary listener (ip:port) written every way a page could write its address."""
    ip_text, _, port = canary.rpartition(":")
    ip = ipaddress.IPv4Address(ip_text)
    n = int(ip)
    a, b, c, d = ip.packed
    hosts = [
        ip_text,
        str(n),  # decimal
        hex(n),  # hex
        ".".join(f"0{x:o}" for x in (a, b, c, d)),  # octal, each part
        f"{a}.{(b << 16) | (c << 8) | d}",  # short form a.bcd
        f"0x{a:x}.{b}.{c}.{d}",  # mixed
        f"[::ffff:{ip_text}]",  # IPv4-mapped IPv6
        f"[::ffff:{(a << 8) | b:x}:{(c << 8) | d:x}]",
    ]
    return [f"http://{h}:{port}/canary" for h in hosts]


def _page(links: list[str], title: str = "hostile") -> bytes:
    anchors = "".join(f'<a href="{href}">{i}</a>\n' for i, href in enumerate(links))
    return f"<!doctype html><html><head><title>{title}</title></head><body>\n{anchors}</body></html>".encode()


async def _drip() -> AsyncIterator[bytes]:
    while True:
        yield b"x"
        await asyncio.sleep(DRIP_INTERVAL)


async def _huge() -> AsyncIterator[bytes]:
    chunk = b"<p>" + b"x" * (64 * 1024 - 7) + b"</p>\n"
    for _ in range(HUGE_BYTES // len(chunk)):
        yield chunk


def index_links(canary: str) -> list[str]:
    links = [
        "/trap/deep/0/",
        "/trap/repeat/a/",
        "/loop/a",
        "/chain/0",
        "/endless-429",
        "/huge",
        "/bomb/gzip",
        "/bomb/deflate",
        "/bomb/br",
        "/drip",
        "/enc/utf16",
        "/enc/meta",
        "/enc/broken",
        "/enc/unknown",
        "/junk",
        "/private/page",
        "/outofscope/x",
        "/to-canary",
    ]
    return links + (canary_spellings(canary) if canary else [])


def junk_links(self_netloc: str) -> list[str]:
    return [
        "javascript:alert(1)",
        "mailto:someone@example.test",
        f"ftp://{self_netloc}/ftp",
        "data:text/html,<a href=/data>x</a>",
        "file:///etc/passwd",
        "http://",
        "http://[bad/",
        f"http://user:secret@{self_netloc}/cred",
        f"//{self_netloc}/protocol-relative",
        "/" + "long/" * 500,
    ]


def route(path: str, self_netloc: str, canary: str) -> Response:
    """The hostile host's answer to ``path``: a page of its own by exact path, else by the path's prefix, else 404."""
    p = path.split("?", 1)[0]
    exact = _EXACT.get(p)
    answer = exact(self_netloc, canary) if exact is not None else None
    for prefix, by_path in _PREFIXES if answer is None else ():
        if p.startswith(prefix) and (answer := by_path(p)) is not None:
            break
    return answer if answer is not None else (404, [], b"not found\n")


def _enc_meta(netloc: str, canary: str) -> Response:  # no charset in the header: <meta charset> says windows-1251
    body = '<html><head><meta charset="windows-1251"></head><body><a href="/enc/ж">ж</a></body></html>'
    return 200, [HTML], body.encode("cp1251")


def _bomb(p: str) -> Response:
    kind = p[6:]
    bomb = {"gzip": gzip_bomb, "deflate": deflate_bomb, "br": brotli_bomb}[kind]()
    return 200, [HTML, ("Content-Encoding", kind)], bomb


# path -> (the host's netloc, the canary) -> its answer (None: as if the path were not here)
_EXACT: dict[str, Callable[[str, str], Response | None]] = {
    "/robots.txt": lambda netloc, canary: (200, [("Content-Type", "text/plain")], ROBOTS),
    "/": lambda netloc, canary: (200, [HTML], _page(index_links(canary), "hostile index")),
    "/endless-429": lambda netloc, canary: (429, [("Retry-After", "1")], b"slow down\n"),
    "/huge": lambda netloc, canary: (200, [HTML], Streamed(HUGE_BYTES // (64 * 1024) * 64 * 1024, _huge)),
    "/drip": lambda netloc, canary: (200, [HTML], Streamed(100_000, _drip)),
    # no charset in the header: the BOM says UTF-16
    "/enc/utf16": lambda netloc, canary: (
        200, [HTML], codecs.BOM_UTF16_LE + _page(["/enc/found-utf16"]).decode().encode("utf-16-le")
    ),
    "/enc/meta": _enc_meta,
    # declared UTF-8, with bytes that are not
    "/enc/broken": lambda netloc, canary: (
        200, [("Content-Type", "text/html; charset=utf-8")], b"<!-- \xc3( \xff -->" + _page(["/enc/found-broken"])
    ),
    "/enc/unknown": lambda netloc, canary: (
        200, [("Content-Type", "text/html; charset=x-no-such-charset")], _page(["/enc/found-unknown"])
    ),
    "/junk": lambda netloc, canary: (200, [HTML], _page(junk_links(netloc))),
    "/to-canary": lambda netloc, canary: (302, [("Location", canary_spellings(canary)[2])], b"") if canary else None,
    "/cred": lambda netloc, canary: (200, [HTML], _page([], "/cred")),
    "/protocol-relative": lambda netloc, canary: (200, [HTML], _page([], "/protocol-relative")),
}  # fmt: skip
# path prefix -> path -> its answer (None: not here), tried in order
_PREFIXES: list[tuple[str, Callable[[str], Response | None]]] = [
    ("/trap/deep/", lambda p: (200, [HTML], _page([f"{p.rstrip('/').count('/')}/"]))),  # one level deeper, forever
    ("/trap/repeat/", lambda p: (200, [HTML], _page(["a/"]))),  # /a/a/a/... forever
    ("/loop/", lambda p: (302, [("Location", "/loop/b" if p == "/loop/a" else "/loop/a")], b"")),
    ("/chain/", lambda p: (302, [("Location", f"/chain/{int(p[7:]) + 1}")], b"") if p[7:].isdigit() else None),
    ("/bomb/", _bomb),
    ("/enc/", lambda p: (200, [HTML], _page([], p))),
]


# What a crawl of the hostile host must record for each case: path -> (outcome, error contains).
CASES: dict[str, tuple[str, str]] = {
    "/loop/b": ("error", "redirect loop"),
    f"/chain/{10}": ("error", "more than 10 redirects"),
    "/endless-429": ("error", "HTTP 429"),
    "/huge": ("too_large", "max_body_bytes"),
    "/bomb/gzip": ("too_large", "max_body_bytes"),
    "/bomb/deflate": ("too_large", "max_body_bytes"),
    "/bomb/br": ("too_large", "max_body_bytes"),
    "/drip": ("error", "Deadline"),
    "/private/page": ("robots_denied", "robots"),
    "/enc/found-utf16": ("fetched", ""),
    "/enc/%D0%B6": ("fetched", ""),
    "/enc/found-broken": ("fetched", ""),
    "/enc/found-unknown": ("fetched", ""),
    "/cred": ("fetched", ""),
    "/protocol-relative": ("fetched", ""),
}
