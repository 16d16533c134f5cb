"""A small SOCKS5 proxy on loopback for tests (RFC 1928: no authentication, CONNECT only), in a thread of the test
process, logging the target of every connection it makes. Debian has no SOCKS server that starts without a system
configuration; this one speaks just enough of the protocol for a client library to be tested against."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
import struct
import threading
from types import TracebackType


class Socks5Proxy:
    """``with Socks5Proxy() as proxy: proxy.url ... proxy.targets``"""

    def __init__(self) -> None:
        self.targets: list[tuple[str, int]] = []  # (host, port) of each CONNECT, in order
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="socks5-proxy", daemon=True)
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return f"socks5://127.0.0.1:{self.port}"

    def __enter__(self) -> Socks5Proxy:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=10)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    async def _start(self) -> asyncio.Server:
        return await asyncio.start_server(self._handle, "127.0.0.1", 0)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            _, count = await reader.readexactly(2)
            await reader.readexactly(count)  # (the methods offered: "no authentication" is taken)
            writer.write(b"\x05\x00")
            _, command, _, kind = await reader.readexactly(4)
            if kind == 1:
                host = str(ipaddress.IPv4Address(await reader.readexactly(4)))
            elif kind == 3:
                host = (await reader.readexactly((await reader.readexactly(1))[0])).decode()
            else:
                host = str(ipaddress.IPv6Address(await reader.readexactly(16)))
            (port,) = struct.unpack("!H", await reader.readexactly(2))
            if command != 1 or not host.startswith("127."):  # (CONNECT only; loopback only: this is a test)
                writer.write(b"\x05\x02\x00\x01\x00\x00\x00\x00\x00\x00")
                return
            self.targets.append((host, port))
            try:
                up_reader, up_writer = await asyncio.open_connection(host, port)
            except OSError:
                writer.write(b"\x05\x05\x00\x01\x00\x00\x00\x00\x00\x00")
                return
            writer.write(b"\x05\x00\x00\x01" + socket.inet_aton("127.0.0.1") + struct.pack("!H", 0))
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            return
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        async def stop() -> None:
            if self._server is not None:
                self._server.close()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()
