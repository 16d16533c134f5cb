"""The floor peer for the polite benchmark: the least a client can do and still be polite at the server.

One asyncio loop, one keep-alive connection per host, raw HTTP/1.1 (no parsing, no output), and each host's
next request sent ``delay`` after its previous answer's status line was read: the same safe rule raycrawl
follows (a slot counted from the answer, never from the send). What it reaches on this machine is how close
answer-paced politeness can get here at all; raycrawl's share divided by it is the cost of everything else.
"""

from __future__ import annotations

import asyncio
import time

from raycrawl.testing import TestWeb


async def _host_loop(web: TestWeb, host: int, pages: int, delay: float) -> None:
    netloc = web.graph.netloc(host)
    address, port = netloc.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(address, int(port))
    try:
        for page in range(pages):
            path = web.graph.url(host, page).split(netloc, 1)[1] or "/"
            writer.write(f"GET {path} HTTP/1.1\r\nHost: {netloc}\r\nUser-Agent: floor\r\n\r\n".encode())
            await writer.drain()
            await reader.readline()  # the status line: the answer has begun
            answered = time.time()
            length = 0
            while (line := await reader.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            await reader.readexactly(length)
            await asyncio.sleep(max(0.0, answered + delay - time.time()))
    finally:
        writer.close()


def crawl_floor(web: TestWeb, hosts: int, pages: int, delay: float) -> None:
    """Fetch pages 0..pages-1 of every host, answer-paced at ``delay``."""

    async def main() -> None:
        await asyncio.gather(*(_host_loop(web, h, pages, delay) for h in range(hosts)))

    asyncio.run(main())
