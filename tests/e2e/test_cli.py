"""The command line as a user meets it: subprocesses, exit codes, messages, and the README's demo."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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


def test_a_seed_the_address_guard_refuses_is_reported_at_start_with_the_flag_that_allows_it(tmp_path: Path) -> None:
    done = raycrawl("crawl", "http://127.0.0.2:9/", "--out", "out", cwd=tmp_path, timeout=60)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "http://127.0.0.2:9/ is on 127.0.0.2" in line and "--allow-private-networks" in line
    assert "--allow-network 127.0.0.2/32" in line
    done = raycrawl("crawl", "http://localhost:9/", "--out", "out", cwd=tmp_path, timeout=60)
    assert done.returncode == 2 and "--allow-private-networks" in done.stderr
    assert not (tmp_path / "out" / "pages").exists()


def test_version(tmp_path: Path) -> None:
    from importlib.metadata import version

    done = raycrawl("--version", cwd=tmp_path, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == f"raycrawl {version('raycrawl')}"


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


def test_crawl_help_reads_like_a_good_cli(tmp_path: Path) -> None:
    done = raycrawl("crawl", "--help", cwd=tmp_path, timeout=60)
    assert done.returncode == 0
    text = done.stdout
    for group in ("scope and limits:", "politeness:", "output and durability:", "fetching and bounds:", "cluster:"):
        assert group in text
    for placeholder in ("--max-pages N", "--delay SECONDS", "--deny REGEX", "--out DIR", "--allow-network CIDR"):
        assert placeholder in text, placeholder
    assert "VALUE" not in text and "MAX_PAGES" not in text and "--no-quiet" not in text
    options = text.split("scope and limits:", 1)[1].split("examples:", 1)[0]
    for entry in options.split("\n  --")[1:]:  # every value option shows its default
        flag = entry.split()[0]
        takes_value = len(entry.split("\n", 1)[0].split()) > 1 and not entry.split()[1][0].islower()
        if takes_value and "(repeatable" not in entry:
            assert "(default:" in entry, flag
    assert "examples:" in text and "exit codes:" in text and "130" in text


RESULTS_SCRIPT = """
import sys
from raycrawl import Crawl, CrawlConfig
crawl = Crawl(CrawlConfig(seeds=tuple(sys.argv[2:]), out=sys.argv[1], delay=0.0, allow_network=("127.0.0.0/8",),
                          quiet=True)).start()
summary = crawl.wait()
results = crawl.results()
types = dict(zip(results.schema().names, results.schema().types))
print("raycrawl-test:", len(results.to_pandas()), "records, status", types["status"], "fetched_at", types["fetched_at"])
"""


def test_only_raycrawls_own_lines_reach_the_terminal_and_the_last_figure_is_the_summarys(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_AUTH_MODE")}
    with TestWeb(WebSpec(hosts=3, pages_per_host=40)) as web:
        done = subprocess.run(
            [sys.executable, "-m", "raycrawl.cli", "crawl", *web.graph.seeds(), "--out", "out", "--delay", "0",
             "--allow-network", "127.0.0.0/8"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        analysed = subprocess.run(
            [sys.executable, "-c", RESULTS_SCRIPT, str(tmp_path / "out2"), *web.graph.seeds()],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert analysed.returncode == 0, analysed.stderr
    for proc in (done, analysed):
        lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
        strangers = [line for line in lines if not line.startswith("raycrawl")]
        assert strangers == [], strangers  # no Ray warning, INFO line or progress bar of Ray Data
    # The progress display's last figure (lines mode: stderr is not a terminal) is the summary's.
    progress = [line for line in done.stderr.splitlines() if line.startswith("raycrawl: [")]
    summary = json.loads((tmp_path / "out" / "stats.json").read_text())
    pages = sum(summary["outcomes"].get(k, 0) for k in ("fetched", "error", "too_large"))
    assert progress and f"finished: pages {pages} " in progress[-1], progress[-1:]
    assert "records, status int32 fetched_at timestamp[ms, tz=UTC]" in analysed.stdout
