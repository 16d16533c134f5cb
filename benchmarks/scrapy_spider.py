"""The peer: a plain Scrapy crawl of the same seeds, run in its own process by benchmarks/vs_scrapy.py.

    python -m benchmarks.scrapy_spider --delay 0.25 --concurrency 1 SEED ...

Same politeness knobs as raycrawl (per-host delay, per-host concurrency, robots.txt obeyed), Scrapy's own
link extraction (LinkExtractor, kept to the seeds' hosts) and its default duplicate filter.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from scrapy import Request, Spider
from scrapy.crawler import CrawlerProcess
from scrapy.linkextractors import LinkExtractor

USER_AGENT = "scrapy-bench/1.0"


class SiteSpider(Spider):  # type: ignore[misc]
    name = "bench"

    def __init__(self, seeds: list[str], **kw: Any) -> None:
        super().__init__(**kw)
        self.start_urls = seeds
        self.netlocs = {urlsplit(u).netloc for u in seeds}  # (allow_domains ignores ports: filter here)
        self.links = LinkExtractor()

    def parse(self, response: Any) -> Iterator[Request]:
        for link in self.links.extract_links(response):
            if urlsplit(link.url).netloc in self.netlocs:
                yield Request(link.url, callback=self.parse)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("seeds", nargs="+")
    parser.add_argument("--delay", type=float, required=True)
    parser.add_argument("--concurrency", type=int, default=1)
    args = parser.parse_args()
    hosts = len({urlsplit(u).netloc for u in args.seeds})
    process = CrawlerProcess(
        settings={
            "USER_AGENT": USER_AGENT,
            "ROBOTSTXT_OBEY": True,
            "DOWNLOAD_DELAY": args.delay,
            "RANDOMIZE_DOWNLOAD_DELAY": False,
            "AUTOTHROTTLE_ENABLED": False,
            "CONCURRENT_REQUESTS_PER_DOMAIN": args.concurrency,
            "CONCURRENT_REQUESTS": max(16, hosts * args.concurrency),
            "COOKIES_ENABLED": False,
            "TELNETCONSOLE_ENABLED": False,
            "LOG_LEVEL": "WARNING",
            "DOWNLOAD_MAXSIZE": 10 * 1024 * 1024,
        }
    )
    process.crawl(SiteSpider, seeds=args.seeds)
    process.start()


if __name__ == "__main__":
    main()
