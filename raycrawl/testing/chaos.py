"""A chaos run (issue 50): a continuous crawl (``--revisit``) of the test web while a chaos thread SIGKILLs a random
raycrawl process every few seconds -- the coordinator, a frontier shard, a seen-set partition, a fetch worker, a
render actor (one host's pages are rendered), the fetch launcher -- then the crawl is stopped and judged by the
server's log and the committed output:

- **lost**: reachable URLs with no fetched record (must be 0);
- **written twice**: URLs with more records (or WARC responses) than the server saw requests for them -- a visit
  written twice (must be 0);
- **gaps under the delay**: consecutive requests to one host closer than its delay, at the server (must be 0);
- the crawl still running when the chaos stopped; the recoveries it noted (kind, seconds, pages fetched again).

Only this process's own processes are ever killed (its descendants: the Ray it started). ``benchmarks/chaos.py``
runs it for 10 minutes; ``tests/e2e/test_chaos.py`` for 2.
"""

from __future__ import annotations

import os
import random
import re
import signal
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from raycrawl.testing.graph import WebSpec
from raycrawl.testing.process import TestWeb, descendant_commands, gaps_by_host

# What the chaos kills, by the title Ray gives each process
TITLES = {
    "coordinator": "ray::Coordinator",
    "shard": "ray::FrontierShardActor",
    "partition": "ray::DedupActor",
    "fetch worker": "ray::fetch_batch",
    "render actor": "ray::RenderActor",
    "fetch launcher": "ray::FetchLauncher",
}


@dataclass
class Chaos:
    """Every ``every`` seconds (drawn between the two), SIGKILL one process of the next kind in a shuffled round of
    the kinds (a kind with no process running now waits for the next round): every kind is hit, in random order."""

    every: tuple[float, float] = (15.0, 30.0)
    seed: int = 1
    kills: list[tuple[float, str]] = field(default_factory=list)  # (when, what)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> Chaos:
        self._thread = threading.Thread(target=self._run, name="chaos", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        rng = random.Random(self.seed)
        turn: list[str] = []
        while not self._stop.wait(rng.uniform(*self.every)):
            running = descendant_commands()
            present = {
                kind: [pid for pid, cmd in running.items() if cmd.startswith(title)] for kind, title in TITLES.items()
            }
            if not turn or not any(present[kind] for kind in turn):
                turn = sorted(TITLES)
                rng.shuffle(turn)
            kind = next((kind for kind in turn if present[kind]), "")
            if not kind:
                continue
            turn.remove(kind)
            try:
                os.kill(rng.choice(present[kind]), signal.SIGKILL)
            except OSError:
                continue  # (it ended meanwhile)
            self.kills.append((time.time(), kind))


def chaos_crawl(seconds: float, every: tuple[float, float], seed: int = 1, hosts: int = 10, pages: int = 60,
                delay: float = 0.1, render: bool = True) -> dict[str, Any]:  # fmt: skip
    """Run the chaos on a continuous crawl for ``seconds``; the report (see the module's docstring)."""
    from raycrawl.adapters.output import read_pages
    from raycrawl.api import Crawl
    from raycrawl.config import CrawlConfig

    spec = WebSpec(hosts=hosts, pages_per_host=pages, page_bytes=200, private_links=False)
    with TestWeb(spec) as web, tempfile.TemporaryDirectory(prefix="raycrawl-chaos-") as out:
        seeds = tuple(web.graph.seeds())
        # (a tenth of the first host's pages go to a browser: the render actors are among what the chaos kills; a
        # browser on this machine is slow enough that more would not be crawled in a short run)
        rendered = (rf"^{re.escape(seeds[0].rstrip('/'))}/p/\d*7$=always",) if render else ()
        cfg = CrawlConfig(seeds=seeds, out=out, delay=delay, revisit=True, revisit_after=20.0,
                          revisit_min=10.0, revisit_max=40.0, checkpoint_interval=5.0, render_rules=rendered,
                          allow_network=("127.0.0.0/8",), quiet=True)  # fmt: skip
        began = time.time()
        crawl = Crawl(cfg).start()
        chaos = Chaos(every, seed).start()
        started = time.monotonic()
        try:
            while time.monotonic() - started < seconds:
                time.sleep(1.0)
        finally:
            chaos.stop()
        state = crawl.status().get("state")
        crawl.stop("the chaos run is over")
        summary = crawl.wait(timeout=600)
        records = read_pages(out)
        warc = _warc_responses(out)
        every_request = web.requests()
        reachable = set(web.graph.reachable([(h, 0) for h in range(spec.hosts)]))
    ran = {"seconds": seconds, "delay": delay, "began": began, "state": state}
    return _report(ran, chaos, summary, records, warc, every_request, reachable)


def _report(
    ran: dict[str, Any],
    chaos: Chaos,
    summary: dict[str, Any],
    records: list[dict[str, Any]],
    warc: Counter[str],
    every_request: list[dict[str, Any]],
    reachable: set[str],
) -> dict[str, Any]:
    """The run judged (see the module's docstring)."""
    seconds, delay, began, state = ran["seconds"], ran["delay"], ran["began"], ran["state"]
    requests = [r for r in every_request if r["path"] != "/robots.txt"]
    # (pages are asked for as their links spell them: the test web's only query is a tracking one, the canonical
    # URL's the same without it)
    asked = Counter(f"http://{r['host']}{r['path'].split('?')[0]}" for r in every_request)  # (robots.txt: WARC)
    written = Counter(r["url"] for r in records)
    fetched = {r["url"] for r in records if r["outcome"] == "fetched"}
    lost = sorted(reachable - fetched)
    too_close = sum(1 for g in gaps_by_host(every_request).values() for gap in g if gap < delay - 0.005)
    return {
        "seconds": seconds,
        "kills": dict(Counter(kind for _, kind in chaos.kills)),
        "recoveries": dict(Counter(r["kind"] for r in summary.get("recoveries", []))),
        "recovery_seconds": [r["seconds"] for r in summary.get("recoveries", [])],
        "pages_again_at_most": sum(r.get("pages_again_at_most", 0) for r in summary.get("recoveries", [])),
        "running_when_the_chaos_stopped": state in ("running", "paused", "starting"),
        "state_when_the_chaos_stopped": state,
        "requests": len(requests),
        "records": len(records),
        "outcomes": dict(Counter(r["outcome"] for r in records)),
        # (URLs whose every record is an error: dead letters -- their links never found)
        "errors": sorted({r["url"]: r.get("error") for r in records if r["url"] not in fetched}.items())[:20],
        "reachable": len(reachable),
        "lost": len(lost),
        # (a few of them, with the outcomes their records say, if any: what to look at first)
        "lost_for_example": {url: [r["outcome"] for r in records if r["url"] == url] for url in lost[:5]},
        # (a lost URL the server saw was fetched and its record lost; one it never saw was lost from the frontier)
        "lost_but_asked": sum(1 for url in lost if asked.get(url)),
        "lost_urls": lost[:100],
        # (what happened when, in seconds from the start: a loss is read against it)
        "timeline": sorted(
            [(round(at - began, 1), f"killed: {kind}") for at, kind in chaos.kills]
            + [(round(r["at"] - began, 1), f"{r['kind']}: {r['cause']}") for r in summary.get("recoveries", [])]
        ),
        "written_twice": sum(1 for url, n in written.items() if n > asked.get(url, 0)),
        "warc_written_twice": sum(1 for url, n in warc.items() if n > asked.get(url, 0)),
        "gaps_under_the_delay": too_close,
        "stop_reason": summary.get("stop_reason"),
        # (what the crawl still held at its stop: a lost URL queued there was stuck, not lost)
        "left": {k: summary.get(k) for k in ("left_queued", "paused_hosts", "closed_hosts")}
        | {"events": {k: v for k, v in summary.get("events", {}).items() if "recover" in k or "roll" in k}},
    }


def _warc_responses(out: str) -> Counter[str]:
    """Response and revisit records in the committed WARC, by target URL."""
    import io

    from warcio.archiveiterator import ArchiveIterator

    from raycrawl.adapters.output import WARC_DIR, committed_parts
    from raycrawl.adapters.storage import resolve

    storage = resolve(out, None)
    found: Counter[str] = Counter()
    for part in committed_parts(storage, WARC_DIR):
        for record in ArchiveIterator(io.BytesIO(storage.read(part) or b"")):
            if record.rec_type in ("response", "revisit"):
                found[str(record.rec_headers.get_header("WARC-Target-URI")).split("?")[0]] += 1
    return found
