"""A loopback listener that counts every connection made to it: what a crawl must never reach (the address guard's
end-to-end check; nothing in a test ever connects outside loopback)."""

from __future__ import annotations

import socket
import threading
from types import TracebackType


class Canary:
    def __init__(self, ip: str = "127.0.0.99") -> None:
        self.ip = ip
        self.sock = socket.socket()
        self.sock.bind((ip, 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port: int = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        return f"{self.ip}:{self.port}"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()

    def __enter__(self) -> Canary:
        return self

    def __exit__(self, *exc: tuple[type[BaseException], BaseException, TracebackType] | None) -> None:
        self.close()


class UdpCanary:
    """A loopback UDP socket that counts every datagram sent to it (a browser's STUN/TURN must never reach one)."""

    def __init__(self, ip: str = "127.0.0.99") -> None:
        self.ip = ip
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((ip, 0))
        self.sock.settimeout(0.1)
        self.port: int = self.sock.getsockname()[1]
        self.datagrams = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._receive, daemon=True)
        self._thread.start()

    def _receive(self) -> None:
        while not self._stop.is_set():
            try:
                self.sock.recvfrom(65536)
            except TimeoutError:
                continue
            self.datagrams += 1

    def __enter__(self) -> UdpCanary:
        return self

    def __exit__(self, *exc: tuple[type[BaseException], BaseException, TracebackType] | None) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()
