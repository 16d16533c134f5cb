"""Issue 30: the disk under a shard's queue store fills up (a small tmpfs as --frontier-dir, mounted in a mount
namespace of the crawl's own). The crawl says so, stops cleanly with a checkpoint (exit code 6), sheds nothing; a
--resume with room goes on and every reachable page is recorded and archived exactly once."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import assert_each_url_once, warc_page_responses

from raycrawl.adapters.output import read_pages
from raycrawl.adapters.storage import resolve
from raycrawl.cli import DISK_FULL
from raycrawl.testing import TestWeb, WebSpec


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "needs root: the small disk is a tmpfs mounted in a mount namespace (unshare --mount)"
    if shutil.which("unshare") is None:
        return "needs unshare (util-linux)"
    return None


pytestmark = pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))


def test_a_full_disk_stops_the_crawl_cleanly_and_a_resume_with_room_loses_nothing(tmp_path: Path) -> None:
    # Every page links to 30 others: URLs are discovered 30 times faster than they are fetched.
    spec = WebSpec(hosts=4, pages_per_host=800, links_per_page=30, page_bytes=100, cross_host_links=0.2)
    small, out = tmp_path / "small", tmp_path / "out"
    small.mkdir()
    with TestWeb(spec) as web:
        crawl = [
            sys.executable,
            "-m",
            "raycrawl.cli",
            "crawl",
            *web.graph.seeds(),
            "--out",
            str(out),
            "--delay",
            "0",
            "--checkpoint-interval",
            "2",
            "--allow-network",
            "127.0.0.0/8",
            "--quiet",
        ]
        # (the tmpfs exists only in the namespace the crawl -- its driver and its own Ray -- runs in)
        mount = f'mount -t tmpfs -o size=256k tmpfs {small} && exec "$@"'
        first = subprocess.run(
            [
                "unshare",
                "--mount",
                "--propagation",
                "private",
                "sh",
                "-c",
                mount,
                "sh",
                *crawl,
                "--frontier-dir",
                str(small),
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert first.returncode == DISK_FULL, first.stderr[-3000:]
        assert "disk is full" in first.stderr and "--resume" in first.stderr
        assert "Traceback" not in first.stderr
        stats = json.loads(resolve(str(out)).read("stats.json") or b"{}")
        assert stats["disk_full"] and stats["stop_reason"].startswith("disk full")
        assert stats["left_queued"] > 0 and stats["frontier"].get("shed_frontier_full", 0) == 0
        assert not any(r["outcome"] == "out_of_budget" for r in read_pages(str(out)))  # nothing shed

        second = subprocess.run([*crawl, "--resume"], capture_output=True, text=True, timeout=600)
        assert second.returncode == 0, second.stderr[-3000:]
    reachable = set(web.graph.reachable([(h, 0) for h in range(spec.hosts)]))
    records = read_pages(str(out))
    assert_each_url_once(records)
    assert {r["url"] for r in records if r["outcome"] == "fetched"} == reachable
    warc = warc_page_responses(out)
    assert set(warc) == reachable and max(warc.values()) == 1
    print(f"first run: {first.stderr.strip().splitlines()[-1][:200]}; pages {len(reachable)}")
