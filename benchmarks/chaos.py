"""The chaos run (issue 50, acceptance 4): a continuous crawl of the test web while a random raycrawl process --
the coordinator, a frontier shard, a seen-set partition, a fetch worker, a render actor -- is SIGKILLed every
15-30 s, the kinds in shuffled rounds; the report
as raycrawl/testing/chaos.py says.

    python -m benchmarks.chaos [--minutes 10] [--every 15 30] [--seed 1]
"""

from __future__ import annotations

import argparse
import json

from benchmarks.local_ray import start_local_ray
from raycrawl.testing.chaos import chaos_crawl


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--every", type=float, nargs=2, default=(15.0, 30.0), metavar=("LEAST", "MOST"))
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    start_local_ray()
    print(json.dumps(chaos_crawl(args.minutes * 60, tuple(args.every), args.seed), indent=1))


if __name__ == "__main__":
    main()
