"""The command line's answers to user mistakes, in process (``cli.main(argv)``): exit 2 and one line naming the
setting and where its value came from, no traceback, nothing started. The same entry point as a subprocess, with the
crawls it runs: tests/e2e/test_cli.py."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from raycrawl import cli


def raycrawl(*args: str, cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``raycrawl ARGS`` run in this process, in ``cwd``, with ``env`` added."""
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        patch.chdir(cwd)
        for key, value in (env or {}).items():
            patch.setenv(key, value)
        try:
            code = cli.main(list(args))
        except SystemExit as exc:  # (argparse's own errors)
            code = exc.code if isinstance(exc.code, int) else 2
    return code, out.getvalue(), err.getvalue()


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
    returncode, _, stderr = raycrawl(*args, cwd=tmp_path)
    assert returncode == code
    assert message in stderr
    assert "Traceback" not in stderr and "hunter2" not in stderr


# (args, environment, files to write first, what the one line must say) -- every user mistake: exit 2, one line
# naming the flag or field and where the value came from, no traceback, nothing started.
MISTAKES = [
    (["--delay", "soon"], {}, {}, ["delay = 'soon'", "expected a number", "--delay on the command line"]),
    (["--delay", "-1"], {}, {}, ["delay = -1.0", "seconds >= 0", "--delay on the command line"]),
    (["--scope", "planet"], {}, {}, ["scope = 'planet'", "one of host, domain, any", "--scope on the command line"]),
    (["--max-delay", "0.1", "--delay", "2"], {}, {}, ["max_delay = 0.1", "--max-delay on the command line"]),
    (["--allow-network", "10.0.0.0/33"], {}, {}, ["allow_network", "CIDR", "--allow-network on the command line"]),
    (["--deny", "(unclosed"], {}, {}, ["deny", "not a valid regular expression", "--deny on the command line"]),
    (["--user-agent", "Mozilla/5.0"], {}, {}, ["user_agent", "product token", "--user-agent on the command line"]),
    ([], {"RAYCRAWL_MAX_DEPTH": "deep"}, {}, ["max_depth = 'deep'", "environment variable RAYCRAWL_MAX_DEPTH"]),
    ([], {"RAYCRAWL_DELAY_FACTR": "2"}, {}, ["unknown setting", "delay_factor"]),
    (["--config", "c.toml"], {}, {"c.toml": "delay = 0.5\n\nmax-pages = -3\n"}, ["max_pages = -3", "c.toml, line 3"]),
    (["--config", "c.toml"], {}, {"c.toml": "scope = 7\n"}, ["scope = 7", "c.toml, line 1"]),
    (["--config", "c.toml"], {}, {"c.toml": "delay = [\n"}, ["c.toml is not valid TOML"]),
    (["--out", "taken"], {}, {"taken": "a file"}, ["out:", "taken is a file"]),
    (["--out", "taken/sub"], {}, {"taken": "a file"}, ["out:", "which is a file"]),
    (["--resume", "--fresh"], {}, {}, ["resume", "not both"]),
    (["--shared-politeness", "redis://:hunter2/x@127.0.0.1:1/0"], {}, {}, ["shared_politeness", "percent-encode"]),
    (["--max-body-bytes", "1" + "0" * 30], {}, {}, ["max_body_bytes", "--max-body-bytes on the command line"]),
]


@pytest.mark.parametrize(
    ("args", "env", "files", "says"), MISTAKES, ids=[" ".join(m[0]) or str(m[1]) for m in MISTAKES]
)
def test_every_user_mistake_is_one_line_naming_the_setting_and_its_source(
    tmp_path: Path, args: list[str], env: dict[str, str], files: dict[str, str], says: list[str]
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    returncode, stdout, stderr = raycrawl("crawl", "http://a.test/", *args, cwd=tmp_path, env=env)
    assert returncode == 2, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("raycrawl: error: "), stderr
    for words in says:
        assert words in lines[0], (words, lines[0])
    assert stdout == ""


def test_a_detached_crawl_without_a_cluster_to_outlive_the_command_is_refused_before_anything_starts(
    tmp_path: Path,
) -> None:
    """--detach on a Ray the command would start itself (no --ray-address, no RAY_ADDRESS): the crawl would end with
    the command. Exit 2, saying how to start a cluster; no Ray started here."""
    import os
    import sys

    saved = os.environ.pop("RAY_ADDRESS", None)
    try:
        returncode, stdout, stderr = raycrawl("crawl", "http://a.test/", "--detach", "--out", "o", cwd=tmp_path)
    finally:
        if saved is not None:
            os.environ["RAY_ADDRESS"] = saved
    assert returncode == 2 and stdout == ""
    assert stderr.startswith("raycrawl: error: detach: ") and "ray start --head" in stderr and "--ray-address" in stderr
    assert "Traceback" not in stderr
    ray = sys.modules.get("ray")
    assert ray is None or not ray.is_initialized()
