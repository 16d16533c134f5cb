"""A queued URL as one line of text: how a queue store's blocks (core/workbench.py) and a checkpoint's host queues
(core/hosts.py) keep them. Most are a URL, its depth, attempts and parent, tab-separated (no canonical URL holds a
tab or a newline); the rest -- redirected, a sitemap, a recrawl's known capture, a hint, an odd character -- JSON
(``UrlEntry.to_row``), which escapes control characters, so a line stays one line. The tab form costs a third of
JSON's, and runs for every URL stored.
"""

from __future__ import annotations

import json

from raycrawl.core.records import UrlEntry


def encode(entry: UrlEntry) -> str:
    """A queued URL as a line of a stored block: most are a URL, its depth, attempts and parent -- tab-separated,
    which no canonical URL holds (JSON costs three times as much, and this runs for every URL stored); the rest
    JSON (which escapes control characters: a line stays one line)."""
    url, parent = entry.url, entry.parent or ""
    plain = entry.kind == "page" and not (entry.redirects or entry.requested or entry.known or entry.hint)
    if plain and "\t" not in url and "\t" not in parent and "\n" not in url and "\n" not in parent:
        return f"{url}\t{entry.depth}\t{entry.attempts}\t{parent}"
    return json.dumps(entry.to_row(), separators=(",", ":"))


def decode(line: str) -> UrlEntry:
    if line[:1] == "[":  # (a URL starts with its scheme)
        return UrlEntry.from_row(json.loads(line))
    url, depth, attempts, parent = line.split("\t")
    return UrlEntry(url, int(depth), parent or None, int(attempts))


def lines_of(block: bytes) -> list[str]:
    return block.decode().split("\n")


def decode_block(block: bytes) -> list[UrlEntry]:
    if block[:1] == b"[" or b"\n[" in block:  # (a JSON line in it)
        return [decode(line) for line in lines_of(block)]
    # (decode(), inline: this runs for every URL taken from the store)
    return [
        UrlEntry(url, int(depth), parent or None, int(attempts))
        for url, depth, attempts, parent in (line.split("\t") for line in lines_of(block))
    ]
