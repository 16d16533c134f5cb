"""A chaos run (issue 50): a continuous crawl (``--revisit``) of the test web while a chaos thread SIGKILLs a random
raycrawl process every few seconds -- the coordinator, a frontier shard, a seen-set partition, a fetch worker, a
render actor (one host's pages are rendered), the fetch launcher -- then the crawl is stopped and judged by the
server's log and the committed output:

- **lost**: reachable URLs with no fetched record (must be 0) once the chaos has stopped and the crawl has caught
  up (each roll-back fetches its slowest host's pages since the checkpoint again: a run the chaos hit late may end
  with some still queued -- held, not lost; the crawl gets ``catch_up`` seconds, and the report says how long it
  took);
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

CATCH_UP = 60.0  # seconds the crawl has, after the chaos, to have every reachable URL's first visit committed
CATCH_UP_POLL = 2.0

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
                delay: float = 0.1, render: bool = True, catch_up: float = CATCH_UP) -> dict[str, Any]:  # fmt: skip
    """Run the chaos on a continuous crawl for ``seconds``, then let it catch up (``catch_up`` seconds at most:
    until every reachable URL's visit is committed); the report (see the module's docstring)."""
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
        reachable = set(web.graph.reachable([(h, 0) for h in range(spec.hosts)]))
        caught_up = _caught_up(out, reachable, catch_up)
        crawl.stop("the chaos run is over")
        summary = crawl.wait(timeout=600)
        records = read_pages(out)
        warc = _warc_responses(out)
        every_request = web.requests()
    ran = {"seconds": seconds, "delay": delay, "began": began, "state": state, "caught_up": caught_up}
    return _report(ran, chaos, summary, records, warc, every_request, reachable)


def _caught_up(out: str, reachable: set[str], bound: float) -> float | None:
    """Seconds until every reachable URL has a committed first visit (a crawl the chaos left behind -- its slowest
    host's pages fetched again after each roll-back -- catches up), or None when it has not within ``bound``."""
    from raycrawl.adapters.output import read_pages

    started = time.monotonic()
    while True:
        fetched = {r["url"] for r in read_pages(out) if r["outcome"] == "fetched"}
        if reachable <= fetched:
            return round(time.monotonic() - started, 1)
        if time.monotonic() - started >= bound:
            return None
        time.sleep(CATCH_UP_POLL)


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
    caught_up = ran["caught_up"]
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
        # (seconds after the chaos until every reachable URL's first visit was committed; None: not within the bound)
        "caught_up_after": caught_up,
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
