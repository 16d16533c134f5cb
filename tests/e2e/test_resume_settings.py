"""Issue 14, through the CLI as a user runs it: a crawl's settings are part of the crawl, budgets are limits.

- A crawl with non-default settings stopped with SIGINT and continued with the command it printed keeps every
  setting (seen at the server: the delay, and a private host it was allowed to reach).
- A crawl stopped by --max-pages 50 and resumed with --max-pages 100 fetches exactly 50 more pages, each once.
- A resume that tries to change the scope is refused with exit code 2 and one line.
"""

from __future__ import annotations

import os
import shlex
import signal
import statistics
import subprocess
import sys
from collections import Counter
from pathlib import Path

from conftest import page_requests, wait_until

from raycrawl.adapters.output import read_pages
from raycrawl.testing import TestWeb, WebSpec
from raycrawl.testing.process import gaps_by_host

DELAY = 0.2  # far from the default (1 s): a resume that forgot it would show at the server


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"} | {"RAY_USAGE_STATS_ENABLED": "0"}


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "raycrawl.cli", *args]


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=300)


def _continue_command(stdout: str) -> list[str]:
    """The command the summary says to continue with, as argv for this Python."""
    line = next(line for line in stdout.splitlines() if "continue with: " in line)
    argv = shlex.split(line.split("continue with: ", 1)[1])
    assert argv[:2] == ["raycrawl", "crawl"], argv
    return _cli(*argv[1:])


def test_sigint_then_the_printed_command_keeps_every_setting(tmp_path: Path) -> None:
    spec = WebSpec(hosts=2, pages_per_host=60, private_links=False, cross_host_links=0.0)
    with TestWeb(spec) as web:
        first = subprocess.Popen(
            _cli("crawl", *web.graph.seeds(), "--out", str(tmp_path / "out"), "--allow-private-networks",
                 "--delay", str(DELAY), "--max-pages", "100", "--checkpoint-interval", "5", "--quiet"),
            cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        wait_until(lambda: len(page_requests(web.requests())) >= 20, timeout=120, what="20 pages")
        first.send_signal(signal.SIGINT)
        stdout, stderr = first.communicate(timeout=120)
        assert first.returncode == 0, stderr
        command = _continue_command(stdout)
        before = len(web.requests())
        second = _run(command, tmp_path)
        all_requests = web.requests()
        after = all_requests[before:]
    assert second.returncode == 0, second.stderr
    assert "Traceback" not in second.stderr + stderr
    records = read_pages(str(tmp_path / "out"))
    assert [u for u, n in Counter(r["url"] for r in records).items() if n > 1] == []
    # The private (loopback) hosts were still allowed, and --max-pages 100 still held.
    outcomes = Counter(r["outcome"] for r in records)
    assert outcomes["error"] == 0, [r for r in records if r["outcome"] == "error"][:3]
    assert outcomes["fetched"] == 100
    every = page_requests(all_requests)
    assert len(every) == 100 and max(Counter((r["host"], r["path"]) for r in every).values()) == 1
    assert page_requests(after), "the resumed crawl fetched nothing"
    # The delay: every gap at least DELAY, and not the default's 1 s either.
    gaps = [g for host_gaps in gaps_by_host(after).values() for g in host_gaps]
    assert gaps and min(gaps) >= DELAY
    assert statistics.median(gaps) < 0.8, statistics.median(gaps)


def test_a_budget_is_a_limit_that_a_resume_can_raise_and_the_scope_is_fixed(tmp_path: Path) -> None:
    spec = WebSpec(hosts=3, pages_per_host=80, private_links=False)
    out = str(tmp_path / "out")
    with TestWeb(spec) as web:
        common = ["--out", out, "--allow-network", "127.0.0.0/8", "--delay", "0", "--quiet"]
        first = _run(_cli("crawl", *web.graph.seeds(), *common, "--max-pages", "50"), tmp_path)
        assert first.returncode == 0, first.stderr
        assert "max-pages reached" in first.stdout and "continue with: " in first.stdout
        pages_first = page_requests(web.requests())
        resumed = _run([*_continue_command(first.stdout), "--max-pages", "100"], tmp_path)
        pages_all = page_requests(web.requests())
        refused = _run(_cli("crawl", "--resume", "--out", out, "--scope", "any"), tmp_path)
        requests_after_refusal = len(page_requests(web.requests()))
    assert len(pages_first) == 50
    assert resumed.returncode == 0, resumed.stderr
    assert len(pages_all) - len(pages_first) == 50  # exactly 50 more
    assert max(Counter((r["host"], r["path"]) for r in pages_all).values()) == 1  # each once
    records = read_pages(out)
    assert Counter(r["outcome"] for r in records)["fetched"] == 100
    assert Counter(r["outcome"] for r in records)["out_of_budget"] == 0
    assert [u for u, n in Counter(r["url"] for r in records).items() if n > 1] == []
    # The scope cannot change in flight: exit 2, one line naming the setting, no traceback, nothing requested.
    assert refused.returncode == 2, refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "scope" in lines[0] and "cannot change when resuming" in lines[0], lines
    assert requests_after_refusal == len(pages_all)


def test_a_per_host_budget_holds_the_rest_for_a_resume_with_a_larger_one(tmp_path: Path) -> None:
    spec = WebSpec(hosts=2, pages_per_host=40, private_links=False, cross_host_links=0.0)
    out = str(tmp_path / "out")
    with TestWeb(spec) as web:
        common = ["--out", out, "--allow-network", "127.0.0.0/8", "--delay", "0", "--quiet"]
        first = _run(_cli("crawl", *web.graph.seeds(), *common, "--max-pages-per-host", "10"), tmp_path)
        pages_first = page_requests(web.requests())
        second = _run([*_continue_command(first.stdout), "--max-pages-per-host", "20"], tmp_path)
        pages_all = page_requests(web.requests())
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert "max-pages-per-host reached" in first.stdout and "URLs still queued" in first.stdout
    assert Counter(r["ip"] for r in pages_first) == {web.graph.ip(0): 10, web.graph.ip(1): 10}
    assert Counter(r["ip"] for r in pages_all) == {web.graph.ip(0): 20, web.graph.ip(1): 20}  # 10 more per host
    assert max(Counter((r["host"], r["path"]) for r in pages_all).values()) == 1
    records = read_pages(out)
    assert Counter(r["outcome"] for r in records) == {"fetched": 40}  # nothing written off as out_of_budget
