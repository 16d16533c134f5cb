"""The ``changing`` profile of the test web: pages that change on known schedules while a crawl runs, for
continuous-crawl tests (core/revisit_schedule.py).

- ``/``: links to every page below; never changes.
- ``/fast/{i}`` (i < FAST): a new version every ``WebSpec.change_period`` seconds.
- ``/never/{i}`` (i < NEVER): never changes.
- ``/removed/{i}`` (i < REMOVED): as ``never`` until ``WebSpec.remove_after`` seconds, then 410 Gone.

Times count from the first request for one of these pages, not from the server's start: a crawl slow to start
on a loaded machine sees the same web as a quick one.

Validators: ``ETag`` (from the body) and ``Last-Modified`` (when its version began), honoured as RFC 9110 says
(If-None-Match first); odd-numbered pages send none and ignore conditions, as many servers do -- an unchanged one
is then known only by its payload's digest.
"""

from __future__ import annotations

from email.utils import formatdate

from raycrawl.testing.versioned import conditional_answer

FAST, NEVER, REMOVED = 4, 4, 2
Answer = tuple[int, list[tuple[str, str]], bytes]


def paths() -> list[str]:
    return ([f"/fast/{i}" for i in range(FAST)] + [f"/never/{i}" for i in range(NEVER)]
            + [f"/removed/{i}" for i in range(REMOVED)])  # fmt: skip


def version(path: str, age: float, period: float) -> int:
    """The page's version ``age`` seconds after the web's first page request (0: as it was then)."""
    return int(age // period) if path.startswith("/fast/") else 0


def has_validators(path: str) -> bool:
    return int(path.rsplit("/", 1)[1]) % 2 == 0


def answer(path: str, age: float, started: float, period: float, remove_after: float,
           request: dict[str, str]) -> Answer | None:  # fmt: skip
    """(status, headers, body) of a path, or None for paths this profile does not serve."""
    html = [("Content-Type", "text/html; charset=utf-8")]
    if path == "/":
        links = "".join(f'<a href="{p}">{p}</a> ' for p in paths())
        return 200, html, f"<html><body><h1>{request.get('host', '')}</h1>{links}</body></html>".encode()
    if path not in paths():
        return None
    if path.startswith("/removed/") and age >= remove_after:
        return 410, [], b"gone\n"
    v = version(path, age, period)
    host = request.get("host", "")  # (each host's pages its own: no payload is another host's duplicate)
    body = f"<html><body><p>{host}{path} version {v}</p>{'x' * 500}</body></html>".encode()
    if not has_validators(path):
        return 200, html, body
    return conditional_answer(body, formatdate(int(started + v * period), usegmt=True), html, request)
