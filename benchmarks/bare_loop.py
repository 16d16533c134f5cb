"""The floor for CPU per page: one asyncio loop that only fetches with aiohttp and extracts links with selectolax.

    python -m benchmarks.bare_loop --user-agent UA SEED [SEED ...]

No robots.txt, no politeness clock, no records, no WARC, no checkpoints, no Ray: one request in flight per host
(a worker coroutine per host and a queue per host), links resolved with urljoin, fragment and query dropped (the
test web's pages have none of their own, so it fetches the pages a crawl fetches), every URL of a seed's host
fetched once (a Python set). What it spends per page is what a crawl cannot avoid spending; the
benchmark ``benchmarks.cpu_per_page`` reports raycrawl's CPU per page as a multiple of it. Prints one JSON line:
pages fetched and the process's own CPU seconds (interpreter start and imports included) and wall seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import time
from urllib.parse import urljoin, urlsplit


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def crawl(seeds: list[str], user_agent: str) -> int:
    import aiohttp
    from selectolax.lexbor import LexborHTMLParser

    hosts = {urlsplit(s).netloc for s in seeds}
    queues: dict[str, asyncio.Queue[str]] = {h: asyncio.Queue() for h in hosts}
    seen: set[str] = set()
    pages = pending = 0
    done = asyncio.Event()

    def admit(url: str) -> None:
        nonlocal pending
        netloc = urlsplit(url).netloc
        if netloc in queues and url not in seen:
            seen.add(url)
            pending += 1
            queues[netloc].put_nowait(url)

    async def worker(session: aiohttp.ClientSession, queue: asyncio.Queue[str]) -> None:
        nonlocal pages, pending
        while True:
            url = await queue.get()
            try:
                async with session.get(url, allow_redirects=False) as response:
                    body = await response.read()
                pages += 1
                for node in LexborHTMLParser(body).css("a[href]"):
                    href = node.attrs.get("href")
                    if href:
                        link = urljoin(url, href).split("#", 1)[0].split("?", 1)[0]
                        if link.startswith(("http://", "https://")):
                            admit(link)
            except (aiohttp.ClientError, TimeoutError):
                pass
            finally:
                pending -= 1
                if not pending:
                    done.set()

    for seed in seeds:
        admit(seed)
    connector = aiohttp.TCPConnector(limit=0, limit_per_host=1)
    async with aiohttp.ClientSession(connector=connector, headers={"User-Agent": user_agent}) as session:
        workers = [asyncio.create_task(worker(session, q)) for q in queues.values()]
        await done.wait()
        for task in workers:
            task.cancel()
    return pages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--user-agent", default="bare-loop/1.0")
    parser.add_argument("seeds", nargs="+")
    args = parser.parse_args()
    started = time.monotonic()
    pages = asyncio.run(crawl(args.seeds, args.user_agent))
    print(json.dumps({"pages": pages, "cpu_s": cpu_seconds(), "wall_s": time.monotonic() - started}))


if __name__ == "__main__":
    main()
