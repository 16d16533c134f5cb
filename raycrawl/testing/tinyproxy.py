"""A real HTTP proxy on loopback for tests: Debian's ``tinyproxy``, started in the foreground on a free port with a
configuration of its own (a name it puts in ``Via``, optional Basic credentials, a log of every request)."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from raycrawl.testing.process import free_port, stop_process


class TinyProxy:
    """``with TinyProxy("proxy-a") as proxy: proxy.url ... proxy.requests()``"""

    def __init__(self, name: str, user: str | None = None, password: str | None = None) -> None:
        if shutil.which("tinyproxy") is None:
            raise RuntimeError("tinyproxy is not installed (apt-get install -y tinyproxy)")
        self.name = name
        self.user, self.password = user, password
        self.port = free_port()
        self._dir = tempfile.TemporaryDirectory(prefix=f"raycrawl-tinyproxy-{name}-")
        self.log_path = Path(self._dir.name) / "tinyproxy.log"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The proxy's URL without credentials."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> TinyProxy:
        conf = Path(self._dir.name) / "tinyproxy.conf"
        lines = [
            f"Port {self.port}",
            "Listen 127.0.0.1",
            "Timeout 30",
            "MaxClients 200",
            "Allow 127.0.0.1",
            f'ViaProxyName "{self.name}"',
            f'LogFile "{self.log_path}"',
            "LogLevel Connect",
            "DisableViaHeader No",
        ]
        if self.user is not None:
            lines.append(f"BasicAuth {self.user} {self.password}")
        conf.write_text("\n".join(lines) + "\n")
        self.log_path.touch()
        self.log_path.chmod(0o666)  # (tinyproxy started as root writes as nobody)
        self._proc = subprocess.Popen(["tinyproxy", "-d", "-c", str(conf)], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)  # fmt: skip
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"tinyproxy exited at start: {self.log_path.read_text()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"tinyproxy did not listen on {self.port} within 20 s")

    def stop(self) -> None:
        """The proxy dies (a test's dead proxy): connections to its port are refused from now on."""
        if self._proc is not None:
            stop_process(self._proc)

    def requests(self) -> list[str]:
        """The absolute URLs it was asked for (its log's ``Request`` lines)."""
        text = self.log_path.read_text(errors="replace")
        return re.findall(r"Request \(file descriptor \d+\): \w+ (\S+) HTTP", text)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def __enter__(self) -> TinyProxy:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
        self._dir.cleanup()

    def __del__(self, _tb: TracebackType | None = None) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
