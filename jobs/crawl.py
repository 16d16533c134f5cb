"""Entrypoint for ``ray job submit --working-dir . -- python jobs/crawl.py SEED ... [flags]``.

Takes the same flags and TOML config as ``raycrawl crawl``; connects to the cluster the job runs on
(Ray sets RAY_ADDRESS for job drivers), logs progress lines to the job's log, and exits non-zero when the
crawl fails (2: bad input, 3: Ray or Redis unreachable; see the README's exit codes).
"""

import sys
from pathlib import Path

# `python jobs/crawl.py` puts jobs/ first on sys.path: put the working directory's raycrawl there instead,
# so the job runs the code it was submitted with even where an older raycrawl is installed.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from raycrawl.cli import main

if __name__ == "__main__":
    sys.exit(main(["crawl", *sys.argv[1:]]))
