"""The README starts with the two commands that do all set-up, and .ci/run runs exactly its test command."""

from __future__ import annotations

import re

from conftest import REPO


def readme_commands() -> list[str]:
    block = re.search(r"```sh\n(.*?)```", (REPO / "README.md").read_text(encoding="utf-8"), re.S)
    assert block is not None
    return [line.split("  #")[0].strip() for line in block.group(1).splitlines() if line.strip()]


def test_the_readme_starts_with_a_crawl_and_the_tests_and_ci_runs_that_test_command() -> None:
    crawl, tests = readme_commands()[:2]
    assert crawl.endswith("raycrawl demo") and tests.endswith("python3 -m pytest -q")
    assert tests.startswith("sh tests/system-packages.sh && python3 -m venv .venv")  # (system packages included)
    ci = [line for line in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines() if line and line[0] != "#"]
    assert ci[-1] == tests
