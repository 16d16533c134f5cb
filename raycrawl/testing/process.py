"""Run the test web in a child process and read what its server saw."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import os
import select
import socket
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from types import TracebackType
from typing import Any

from raycrawl.testing.graph import WebGraph, WebSpec


def stop_process(proc: subprocess.Popen[Any]) -> None:
    """SIGTERM a server process we started, SIGKILL it if it is still there after 10 s; reaped either way."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def kill_descendants(name_part: str) -> int:
    """SIGKILL every process under this one whose name holds ``name_part`` (a test's own browsers, say); how many."""
    import psutil

    killed = 0
    for child in psutil.Process().children(recursive=True):
        try:
            if name_part in child.name().lower():
                child.kill()
                killed += 1
        except psutil.NoSuchProcess:
            continue
    return killed


def descendant_commands() -> dict[int, str]:
    """This process's descendants: pid -> command line (a Ray worker's is the title Ray gave it, ``ray::...``)."""
    import psutil

    commands: dict[int, str] = {}
    for child in psutil.Process().children(recursive=True):
        try:
            commands[child.pid] = " ".join(child.cmdline())
        except psutil.Error:
            continue
    return commands


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """``count`` distinct free loopback ports. The sockets are held until all are bound: asked one at a time, the
    kernel may hand out the same just-closed port twice (a `ray start` once got it for its GCS and its raylet)."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]


class TestWeb:
    __test__ = False  # not a pytest test class
    """``with TestWeb(WebSpec(hosts=20)) as web: ... web.requests()``"""

    def __init__(self, spec: WebSpec | None = None, log_dir: str | None = None, startup_timeout: float = 30.0):
        self.spec = spec or WebSpec()
        self._tmp = None if log_dir else tempfile.TemporaryDirectory(prefix="raycrawl-testweb-")
        self.log_path = Path(log_dir or self._tmp.name) / "requests.jsonl"  # type: ignore[union-attr]
        self._startup_timeout = startup_timeout
        self._proc: subprocess.Popen[str] | None = None
        self.port = 0
        self.graph = WebGraph(self.spec, 0)

    def start(self) -> TestWeb:
        args = [sys.executable, "-m", "raycrawl.testing.server", "--log", str(self.log_path)]
        for f in dataclasses.fields(WebSpec):
            value = getattr(self.spec, f.name)
            flag = "--" + f.name.replace("_", "-")
            if isinstance(value, bool):
                args += [flag] if value else []
            elif isinstance(value, tuple):
                args += [flag, ",".join(value)] if value else []
            elif value is not None:
                args += [flag, str(value)]
        self._proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True, env=os.environ.copy())
        assert self._proc.stdout is not None
        ready, _, _ = select.select([self._proc.stdout], [], [], self._startup_timeout)
        line = self._proc.stdout.readline() if ready else ""
        if not line:
            self.stop()
            raise RuntimeError("the test web did not start (see its stderr above)")
        info = json.loads(line)
        self.port = int(info["port"])
        self.graph = WebGraph(self.spec, self.port)
        return self

    @property
    def pid(self) -> int | None:
        """The server's process id (benchmarks leave its CPU out of the crawler's)."""
        return self._proc.pid if self._proc is not None else None

    def stop(self) -> None:
        if self._proc is not None:
            stop_process(self._proc)
        self._proc = None

    def __enter__(self) -> TestWeb:
        return self.start()

    def __exit__(self, *exc: tuple[type[BaseException], BaseException, TracebackType] | None) -> None:
        self.stop()
        if self._tmp is not None:
            self._tmp.cleanup()

    # --- what the server saw -------------------------------------------------------------------------

    def events(self) -> list[dict[str, Any]]:
        """What the server saw besides requests (e.g. ``{"event": "cut", "t": ..., "ip": ..., "path": ...}``)."""
        return whole_lines(Path(events_path(str(self.log_path))))

    def requests(self) -> list[dict[str, Any]]:
        return whole_lines(self.log_path)


def events_path(log_path: str) -> str:
    """Where the server writes events other than requests, beside its request log (``TestWeb.events()`` reads them)."""
    return str(Path(log_path).with_name("events.jsonl"))


def whole_lines(path: Path) -> list[dict[str, Any]]:
    """The JSON lines the server has written whole to ``path`` so far. Read in one go and split here: iterating the
    file line by line while the server appends reads its last, half-written line as one line and the rest of it
    as the next (a line that starts mid-record: a CI run's kill helper died on one)."""
    if not path.exists():
        return []
    with path.open(encoding="utf-8") as f:
        text = f.read()
    return [json.loads(line) for line in text.split("\n")[:-1]]


def gaps_by_host(requests: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Seconds between consecutive requests to each host, as the server saw them."""
    times: dict[str, list[float]] = defaultdict(list)
    for r in requests:
        times[r["ip"]].append(r["t"])
    out: dict[str, list[float]] = {}
    for host, ts in times.items():
        ts.sort()
        out[host] = [b - a for a, b in itertools.pairwise(ts)]
    return out
