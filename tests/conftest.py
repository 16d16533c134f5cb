"""Shared fixtures: one small local Ray per test module, the test web, and crawl helpers."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


@pytest.fixture(scope="module")
def ray_local() -> Iterator[None]:
    import ray

    ray.init(
        num_cpus=2,
        include_dashboard=False,
        logging_level="WARNING",
        log_to_driver=False,
        _node_ip_address="127.0.0.1",  # tests touch loopback only, Ray included
    )
    try:
        yield
    finally:
        ray.shutdown()


LOOPBACK = ("127.0.0.0/8",)


def local_config(**kw: Any) -> Any:
    """A CrawlConfig for the test web: loopback is opted in explicitly, as a user would have to."""
    from raycrawl.config import CrawlConfig

    kw.setdefault("quiet", True)
    return CrawlConfig(allow_network=LOOPBACK, **kw)


def run(cfg: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run a crawl to its end; (summary, records)."""
    from raycrawl.api import Crawl

    crawl = Crawl(cfg).start()
    summary = crawl.wait(timeout=600)
    return summary, crawl.results()


def page_requests(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in requests if r["path"] != "/robots.txt"]


def assert_each_url_once(records: list[dict[str, Any]]) -> None:
    counts = Counter(r["url"] for r in records)
    assert [u for u, n in counts.items() if n > 1] == []
