"""The test web's HTTP server: many hosts on 127.0.0.x, one port, every request logged with a timestamp.

Run in its own process (``python -m raycrawl.testing.server --hosts 20 ...``) so the crawler's load never
slows the clock that judges it. It prints one JSON line when ready: ``{"port": ..., "seeds": [...]}``.
The request log (JSON lines: t, ip, host, method, path, ua) is what the tests assert on; ``t`` is taken
when the request's headers have been read, before any response byte is sent.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import time
from typing import IO

from raycrawl.testing.graph import WebGraph, WebSpec

MAX_HEADER_BYTES = 16 * 1024


class TestWebServer:
    __test__ = False  # not a pytest test class

    def __init__(self, spec: WebSpec, log: IO[str]) -> None:
        self.spec = spec
        self.log = log
        self.graph = WebGraph(spec, 0)
        self._ip_to_host = {self.graph.ip(h): h for h in range(spec.hosts)}

    def route(self, host: int, path: str) -> tuple[int, str, bytes]:
        """(status, content type, body) for a path on a host."""
        path = path.split("?", 1)[0]
        if path == "/robots.txt":
            return 200, "text/plain", self.graph.robots_txt(host)
        page: int | None = None
        if path == "/":
            page = 0
        elif path.startswith("/p/") and path[3:].isdigit():
            page = int(path[3:])
        if page is not None and page < self.spec.pages_per_host:
            return 200, "text/html; charset=utf-8", self.graph.html(host, page)
        return 404, "text/plain", b"not found\n"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        local_ip = writer.get_extra_info("sockname")[0]
        host = self._ip_to_host.get(local_ip, -1)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                received = time.time()
                lines = head.decode("latin-1").split("\r\n")
                method, _, rest = lines[0].partition(" ")
                target = rest.rpartition(" ")[0]
                headers = {}
                for line in lines[1:]:
                    name, sep, value = line.partition(":")
                    if sep:
                        headers[name.strip().lower()] = value.strip()
                record = {
                    "t": received,
                    "ip": local_ip,
                    "host": headers.get("host", ""),
                    "method": method,
                    "path": target,
                    "ua": headers.get("user-agent", ""),
                }
                self.log.write(json.dumps(record) + "\n")
                self.log.flush()
                status, ctype, body = self.route(host, target)
                reason = {200: "OK", 404: "Not Found"}.get(status, "Status")
                writer.write(
                    f"HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\n"
                    f"Content-Length: {len(body)}\r\n\r\n".encode()
                    + (body if method != "HEAD" else b"")
                )
                await writer.drain()
                if headers.get("connection", "").lower() == "close":
                    return
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def serve(self, port: int) -> tuple[int, list[asyncio.Server]]:
        """Bind every host's address on one port (a free one when port is 0)."""
        for _ in range(20):
            servers: list[asyncio.Server] = []
            chosen = port
            try:
                for h in range(self.spec.hosts):
                    server = await asyncio.start_server(
                        self.handle, self.graph.ip(h), chosen, limit=MAX_HEADER_BYTES, reuse_address=True
                    )
                    chosen = server.sockets[0].getsockname()[1]
                    servers.append(server)
                self.graph = WebGraph(self.spec, chosen)  # pages link across hosts on this port
                return chosen, servers
            except OSError:
                for server in servers:
                    server.close()
                if port:
                    raise
        raise OSError("no free port found for the test web")


async def _main(spec: WebSpec, port: int, log_path: str) -> None:
    with open(log_path, "a", encoding="utf-8") as log:
        server = TestWebServer(spec, log)
        port, _servers = await server.serve(port)
        graph = WebGraph(spec, port)
        ready = {"port": port, "seeds": graph.seeds(), "resolve": graph.resolve_entries()}
        print(json.dumps(ready), flush=True)
        await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve the raycrawl test web on 127.0.0.x")
    for f in dataclasses.fields(WebSpec):
        flag = "--" + f.name.replace("_", "-")
        if f.type in ("bool", bool):
            parser.add_argument(flag, action="store_true")
        elif f.name == "crawl_delay":
            parser.add_argument(flag, type=float)
        else:
            parser.add_argument(flag, type=type(f.default), default=f.default)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log", required=True)
    args = vars(parser.parse_args(argv))
    port, log_path = args.pop("port"), args.pop("log")
    spec = WebSpec(**args)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_main(spec, port, log_path))


if __name__ == "__main__":
    main()
