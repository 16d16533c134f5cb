"""Entrypoint for ``ray job submit --working-dir . -- python jobs/crawl.py SEED ... [flags]``.

Takes the same flags and TOML config as ``raycrawl crawl``; connects to the cluster the job runs on
(Ray sets RAY_ADDRESS for job drivers) and exits non-zero when the crawl fails.
"""

import sys

from raycrawl.cli import main

if __name__ == "__main__":
    sys.exit(main(["crawl", *sys.argv[1:]]))
