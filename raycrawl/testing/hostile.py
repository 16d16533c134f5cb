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
    p = path.split("?", 1)[0]
    if p == "/robots.txt":
        return 200, [("Content-Type", "text/plain")], ROBOTS
    if p == "/":
        return 200, [HTML], _page(index_links(canary), "hostile index")
    if p.startswith("/trap/deep/"):
        depth = p.rstrip("/").count("/")
        return 200, [HTML], _page([f"{depth}/"])  # one level deeper, forever
    if p.startswith("/trap/repeat/"):
        return 200, [HTML], _page(["a/"])  # /a/a/a/... forever
    if p.startswith("/loop/"):
        return 302, [("Location", "/loop/b" if p == "/loop/a" else "/loop/a")], b""
    if p.startswith("/chain/") and p[7:].isdigit():
        return 302, [("Location", f"/chain/{int(p[7:]) + 1}")], b""
    if p == "/endless-429":
        return 429, [("Retry-After", "1")], b"slow down\n"
    if p == "/huge":
        return 200, [HTML], Streamed(HUGE_BYTES // (64 * 1024) * 64 * 1024, _huge)
    if p.startswith("/bomb/"):
        kind = p[6:]
        bomb = {"gzip": gzip_bomb, "deflate": deflate_bomb, "br": brotli_bomb}[kind]()
        return 200, [HTML, ("Content-Encoding", kind)], bomb
    if p == "/drip":
        return 200, [HTML], Streamed(100_000, _drip)
    if p == "/enc/utf16":  # no charset in the header: the BOM says UTF-16
        return 200, [HTML], codecs.BOM_UTF16_LE + _page(["/enc/found-utf16"]).decode().encode("utf-16-le")
    if p == "/enc/meta":  # no charset in the header: <meta charset> says windows-1251
        body = '<html><head><meta charset="windows-1251"></head><body><a href="/enc/ж">ж</a></body></html>'
        return 200, [HTML], body.encode("cp1251")
    if p == "/enc/broken":  # declared UTF-8, with bytes that are not
        broken = b"<!-- \xc3( \xff -->" + _page(["/enc/found-broken"])
        return 200, [("Content-Type", "text/html; charset=utf-8")], broken
    if p == "/enc/unknown":
        return 200, [("Content-Type", "text/html; charset=x-no-such-charset")], _page(["/enc/found-unknown"])
    if p.startswith("/enc/"):
        return 200, [HTML], _page([], p)
    if p == "/junk":
        return 200, [HTML], _page(junk_links(self_netloc))
    if p == "/to-canary" and canary:
        return 302, [("Location", canary_spellings(canary)[2])], b""
    if p in ("/cred", "/protocol-relative"):
        return 200, [HTML], _page([], p)
    return 404, [], b"not found\n"


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
