"""A crawl that discovers URLs much faster than it fetches them (issue 30): every page links to 50 new pages, so
the frontier grows by ~50 URLs per page fetched. raycrawl's real actors and tasks, answered in process by the test
web's generator (``raycrawl.testing.synthetic``: no sockets), 40 hosts, unthrottled (no delay), default settings
otherwise, 2 CPUs:

    python -m benchmarks.discovery [--queued 5000000] [--memory-queued 2500000]

Run twice, side by side: with the queue on disk (the default, ``--workbench 16``) until ``--queued`` URLs are queued,
and all in memory (``--workbench 0``) until ``--memory-queued`` are (or it sheds). Each run samples, every 2 s, the
URLs queued and the frontier shards' resident memory (their processes' RSS: anonymous, and the page cache they map),
and each checkpoint's pause (from the stop of leasing to the end of the cut) and its bytes; then stops the crawl
(a final checkpoint) and reports what was shed.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from benchmarks.local_ray import start_local_ray
from raycrawl.testing import WebSpec
from raycrawl.testing.synthetic import SyntheticWeb


def shard_memory() -> tuple[int, int]:
    """(anonymous, file-backed) resident bytes of every frontier shard process."""
    anon = file_backed = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if b"FrontierShardActor" not in Path(f"/proc/{pid}/cmdline").read_bytes():
                continue
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        anon += int(fields["RssAnon"].split()[0]) * 1024
        file_backed += int(fields["RssFile"].split()[0]) * 1024
    return anon, file_backed


def run(web: SyntheticWeb, target: int, time_limit: float, **settings: object) -> dict[str, object]:
    import ray

    from raycrawl.api import Crawl
    from raycrawl.config import CrawlConfig

    os.environ.update(web.env())
    start_local_ray()
    samples: list[dict[str, float]] = []
    cuts: dict[int, dict[str, float]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="raycrawl-discovery-") as out:
            cfg = CrawlConfig(
                seeds=tuple(web.graph.seeds()), out=out, delay=0.0, delay_factor=0.0,
                allow_network=("127.0.0.0/8",), quiet=True, **settings,
            )  # type: ignore[arg-type]  # fmt: skip
            crawl = Crawl(cfg).start()
            started = time.monotonic()
            while time.monotonic() - started < time_limit:
                status = crawl.status()
                anon, file_backed = shard_memory()
                samples.append(
                    {
                        "t": round(time.monotonic() - started, 1),
                        "queued": status.get("queued", 0),
                        "pages": status.get("pages", 0),
                        "shard_anon_mb": round(anon / 2**20, 1),
                        "shard_page_cache_mb": round(file_backed / 2**20, 1),
                    }
                )
                last = status.get("last_checkpoint")
                if last:
                    cuts[int(last["id"])] = last
                if samples[-1]["queued"] >= target or status.get("state") == "finished":
                    break
                time.sleep(2.0)
            crawl.stop("benchmark target reached")
            summary = crawl.wait()
            disk = sum(f.stat().st_size for f in Path(out, "frontier").rglob("*") if f.is_file())
    finally:
        ray.shutdown()
        for name in web.env():
            os.environ.pop(name, None)
    return {"samples": samples, "cuts": list(cuts.values()), "summary": summary, "frontier_files_bytes": disk}


def report(name: str, result: dict[str, object]) -> None:
    samples = result["samples"]
    assert isinstance(samples, list)
    summary = result["summary"]
    assert isinstance(summary, dict)
    print(f"== {name}")
    for s in samples[:: max(1, len(samples) // 12)] + samples[-1:]:
        print(json.dumps(s))
    # memory after the workbenches filled: from the first sample past 200,000 queued to the last
    filled = [s for s in samples if s["queued"] >= 200_000]
    if len(filled) >= 2 and filled[-1]["queued"] > filled[0]["queued"]:
        grew = (filled[-1]["shard_anon_mb"] - filled[0]["shard_anon_mb"]) * 2**20
        per_url = grew / (filled[-1]["queued"] - filled[0]["queued"])
        print(f"shard anon memory growth past 200,000 queued: {per_url:.1f} B per queued URL")
    cuts = result["cuts"]
    assert isinstance(cuts, list)
    for cut in cuts:  # (pause_s: from the stop of leasing until the crawl is at rest; then the cut itself)
        pause = float(cut["pause_s"]) + float(cut["seconds"])
        print(f"checkpoint {cut['id']}: crawl held {pause:.2f} s (cut {cut['seconds']} s), {cut['bytes']:,} B")
    frontier = summary.get("frontier", {})
    shed = {k: v for k, v in frontier.items() if k.startswith("shed_")}
    outcomes = summary.get("outcomes", {})
    print(
        f"pages {summary.get('outcomes', {}).get('fetched')}, {summary.get('pages_per_s')} pages/s; "
        f"left queued {summary.get('left_queued')}; shed {shed or 'nothing'}; "
        f"out_of_budget records {outcomes.get('out_of_budget', 0)}; frontier files {result['frontier_files_bytes']:,} B"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queued", type=int, default=5_000_000)
    parser.add_argument("--memory-queued", type=int, default=2_500_000)
    parser.add_argument("--time-limit", type=float, default=900.0)
    args = parser.parse_args()
    spec = WebSpec(hosts=40, pages_per_host=50_000_000, links_per_page=50, page_bytes=500, private_links=False)
    web = SyntheticWeb(spec)
    # (the per-host queue bound stays a trap policy: 40 hosts at its default of 100,000 would stop at 4 M queued)
    bound = {"max_queue_per_host": 1_000_000}
    report("in memory (--workbench 0)", run(web, args.memory_queued, args.time_limit, workbench=0, **bound))
    report("on disk (--workbench 16)", run(web, args.queued, args.time_limit, **bound))


if __name__ == "__main__":
    main()
