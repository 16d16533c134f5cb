"""Issue 17, acceptance 3: with fetch capacity scarce (one URL in flight), higher-scored hosts and URLs are fetched
first -- read from the server's own log -- and no host's gap falls under its delay."""

from __future__ import annotations

from pathlib import Path
from statistics import mean

import pytest
from conftest import assert_each_url_once, local_config, page_requests, run

from raycrawl.testing import TestWeb, WebSpec
from raycrawl.testing.process import gaps_by_host

pytestmark = pytest.mark.usefixtures("ray_local")
DELAY = 0.05
PAGES = 20


def test_scarce_capacity_goes_to_the_best_scored_hosts_and_urls_first(tmp_path: Path) -> None:
    spec = WebSpec(hosts=5, pages_per_host=PAGES, page_bytes=200, private_links=False, cross_host_links=0.0)
    with TestWeb(spec) as web:
        gold = web.graph.ip(2)
        seeds = tmp_path / "seeds.txt"  # every page a seed: every host always has work, so order is the frontier's
        seeds.write_text("".join(web.graph.url(h, p) + "\n" for h in range(spec.hosts) for p in range(PAGES)))
        cfg = local_config(
            seeds_file=str(seeds), out=str(tmp_path / "out"), delay=DELAY, max_tasks_in_flight=1, fetch_batch_size=1,
            shards=2,  # (a shard ranks its hosts; spare capacity goes to the shard whose waiting host scores best)
            priority=(rf"^http://{gold}:=10", r"/p/1\d$=3"),
        )  # fmt: skip
        _, records = run(cfg)
        requests = page_requests(web.requests())

    assert_each_url_once(records)
    assert len(requests) == spec.hosts * PAGES
    order = {h: [i for i, r in enumerate(requests) if r["ip"] == web.graph.ip(h)] for h in range(spec.hosts)}
    # The gold host's requests come first: its mean position, and its last, before every other host's.
    others = [h for h in range(spec.hosts) if web.graph.ip(h) != gold]
    assert all(mean(order[2]) < mean(order[h]) for h in others), {h: mean(p) for h, p in order.items()}
    assert max(order[2]) < min(max(order[h]) for h in others)
    # Within each host, the pages the rule favours (/p/10 ... /p/19) before the others.
    for h in range(spec.hosts):
        paths = [r["path"] for r in requests if r["ip"] == web.graph.ip(h)]
        favoured = [i for i, p in enumerate(paths) if p.startswith("/p/1") and len(p) == 5]
        assert favoured == list(range(len(favoured))) and len(favoured) == 10, paths
    # Priority never beats politeness.
    assert min(min(g) for g in gaps_by_host(requests).values()) >= DELAY
