"""A crawl whose URLs are scored by a Python function, shipped by Ray to the frontier shards:
``ray job submit --working-dir . -- python jobs/scored_crawl.py SEED ... [the flags of raycrawl crawl]``.

Edit ``score`` for your crawl: higher scores are fetched first, within each host and, when fetch capacity is
scarce, across hosts; never sooner than a host's delay allows. ``--priority PATTERN=WEIGHT`` rules add to it.
"""

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # (the submitted raycrawl, as in jobs/crawl.py)

from raycrawl.cli import main

FAVOURED = re.compile(r"/p/1\d$")


def score(url: str, depth: int) -> float:
    """Pages /p/10 to /p/19 first (the test web's), then breadth-first as by default."""
    return (10.0 if FAVOURED.search(url) else 0.0) - depth


if __name__ == "__main__":
    sys.exit(main(["crawl", *sys.argv[1:]], score=score))
