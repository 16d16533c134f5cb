"""The command line as a user meets it: subprocesses, exit codes, messages, and the README's demo."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from raycrawl.adapters.output import read_pages
from raycrawl.testing import TestWeb, WebSpec


def raycrawl(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "raycrawl.cli", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["crawl", "http://a.test/", "--delay", "soon"], 2, "delay = 'soon': expected a number"),
        (["crawl"], 2, "no usable seed"),
        (["crawl", "ftp://a.test/", "--strict"], 2, "not an http(s) URL"),
        (["crawl", "ftp://bob:hunter2@a.test/", "--strict"], 2, "'ftp://a.test/'"),  # no credential echoed
        (["crawl", "http://a.test/", "--config", "missing.toml"], 2, "missing.toml does not exist"),
    ],
)
def test_bad_input_is_one_line_and_an_exit_code(tmp_path: Path, args: list[str], code: int, message: str) -> None:
    done = raycrawl(*args, cwd=tmp_path)
    assert done.returncode == code
    assert message in done.stderr
    assert "Traceback" not in done.stderr and "hunter2" not in done.stderr


def test_redis_unreachable_at_start_is_one_line_and_exit_3(tmp_path: Path) -> None:
    from raycrawl.testing import free_port

    url = f"redis://:hunter2@127.0.0.1:{free_port()}/0"  # nothing listens there
    done = raycrawl("crawl", "http://a.test/", "--redis-url", url, "--out", "out", cwd=tmp_path)
    assert done.returncode == 3
    lines = [line for line in done.stderr.splitlines() if "raycrawl:" in line]
    assert len(lines) == 1 and "Redis at redis://127.0.0.1" in lines[0] and "unavailable" in lines[0]
    assert "Traceback" not in done.stderr and "hunter2" not in done.stderr


def test_resume_without_a_checkpoint_is_refused(tmp_path: Path) -> None:
    done = raycrawl("crawl", "--resume", "--out", "nothing-here", cwd=tmp_path)
    assert done.returncode == 2 and "resume: no checkpoint to resume" in done.stderr


def test_bad_env_value_is_reported(tmp_path: Path) -> None:
    done = raycrawl("crawl", "http://a.test/", cwd=tmp_path, env={"RAYCRAWL_MAX_DEPTH": "deep"})
    assert done.returncode == 2 and "max_depth = 'deep'" in done.stderr


def test_cli_crawl_with_toml_config(tmp_path: Path) -> None:
    with TestWeb(WebSpec(hosts=2, pages_per_host=20)) as web:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("\n".join(web.graph.seeds()) + "\nthis is not a url\n")
        (tmp_path / "crawl.toml").write_text('delay = 0.05\nmax-pages = 15\nuser-agent = "testbot/9"\n')
        done = raycrawl(
            "crawl",
            "--seeds-file",
            str(seeds),
            "--config",
            "crawl.toml",
            "--out",
            "out",
            "--allow-network",
            "127.0.0.0/8",
            cwd=tmp_path,
        )
        requests = web.requests()
    assert done.returncode == 0, done.stderr
    assert "seeds.txt:3: not an http(s) URL" in done.stderr
    assert "max-pages reached" in done.stdout
    assert {r["ua"] for r in requests} == {"testbot/9"}
    assert len([r for r in requests if r["path"] != "/robots.txt"]) == 15
    stats = json.loads((tmp_path / "out" / "stats.json").read_text())
    assert stats["outcomes"]["fetched"] == 15
    assert len([r for r in read_pages(str(tmp_path / "out")) if r["outcome"] == "fetched"]) == 15


def test_readme_demo_command(tmp_path: Path) -> None:
    done = raycrawl("demo", "--hosts", "3", "--pages", "20", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    records = read_pages(str(tmp_path / "raycrawl-demo"))
    assert len([r for r in records if r["outcome"] == "fetched"]) == 60
    assert "frontier exhausted" in done.stdout
