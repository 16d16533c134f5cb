"""A warning said once per process about the operator's code (a score function, score_links): it would otherwise
repeat for every URL or page it fails on. A shard's or a worker's stderr reaches the driver's log. (Not in core/,
which says nothing itself: core code is handed a function to warn with.)"""

from __future__ import annotations

import sys

said: set[str] = set()  # the topics said in this process


def say_once(topic: str, message: str) -> None:
    if topic not in said:
        said.add(topic)
        print(f"raycrawl: {message}", file=sys.stderr, flush=True)
