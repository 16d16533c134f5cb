"""ruff and mypy --strict run as tests, so the one test command checks style and types too."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


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
