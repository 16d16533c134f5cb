"""ruff and mypy --strict run as tests, so the one test command checks style and types too."""

import subprocess
import sys

import pytest
from conftest import REPO

ROOT = REPO


@pytest.mark.parametrize(
    "command",
    [
        [sys.executable, "-m", "ruff", "check", "raycrawl", "tests", "jobs"],
        [sys.executable, "-m", "mypy"],
    ],
    ids=["ruff", "mypy-strict"],
)
def test_tool_is_clean(command: list[str]) -> None:
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
