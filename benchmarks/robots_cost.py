"""What a hostile robots.txt costs: parse time and the slowest decision, for raycrawl's parser and protego side by side.

    python -m benchmarks.robots_cost

Files (each at the 512 KiB read limit), decided against URLs of up to 2,083 characters (MAX_URL_LENGTH):
- ``plain``: a realistic large file (thousands of prefix rules for one group);
- ``wildcards``: every rule full of ``*`` whose pieces all occur in the URL except the last (the greedy matcher's
  worst case: each rule searches the whole path before failing);
- ``long-lines``: rules of 16 KiB each.
The budget this checks (README, "What a hostile robots.txt can cost"): parse < 200 ms per file and every decision
< 1 ms, on this 2-core machine.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from raycrawl.core.robots import MAX_ROBOTS_BYTES
from raycrawl.core.robots_txt import parse_robots

TOKEN = "raycrawl"


def _fill(header: str, line: Callable[[int], str]) -> bytes:
    out, i = [header], 0
    size = len(header)
    while size < MAX_ROBOTS_BYTES:
        text = line(i)
        out.append(text)
        size += len(text)
        i += 1
    return "".join(out).encode()[:MAX_ROBOTS_BYTES]


def files() -> dict[str, bytes]:
    piece = "ab"
    return {
        "plain": _fill("User-agent: *\n", lambda i: f"Disallow: /section-{i}/page-{i * 7}/\n"),
        "wildcards": _fill("User-agent: *\n", lambda i: "Disallow: /" + f"*{piece}" * 40 + f"*zz{i}\n"),
        "long-lines": _fill("User-agent: *\n", lambda i: "Disallow: /" + "a*" * 8000 + f"{i}\n"),
    }


def paths() -> list[str]:
    return ["/" + "ab" * 1040, "/section-99999/page-1/", "/" + "a" * 2080, "/x?" + "ab" * 1039]


def _time(fn: Callable[[], object], repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    try:
        from protego import Protego
    except ImportError:  # (pip install -e '.[bench]')
        Protego = None
    print(f"{'file':<12}{'raycrawl parse':>16}{'worst decision':>16}{'protego parse':>16}{'worst decision':>16}")
    for name, body in files().items():
        print(_row(name, body, Protego))


def _row(name: str, body: bytes, protego: Any) -> str:
    parse = _time(lambda: parse_robots(body, TOKEN))
    group = parse_robots(body, TOKEN)
    worst = max(_time(lambda p=p: group.allows(p), 20) for p in paths())  # type: ignore[misc]
    row = f"{name:<12}{parse * 1e3:>13.1f} ms{worst * 1e6:>13.1f} µs"
    if protego is not None:
        text = body.decode()
        p_parse = _time(lambda: protego.parse(text), 2)
        parser = protego.parse(text)
        p_worst = max(_time(lambda p=p: parser.can_fetch("http://h" + p, TOKEN), 3) for p in paths())  # type: ignore[misc]
        row += f"{p_parse * 1e3:>13.1f} ms{p_worst * 1e6:>13.1f} µs"
    return row + f"  (rules kept {len(group.rules)}, simplified {group.simplified})"


if __name__ == "__main__":
    main()
