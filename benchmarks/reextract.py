"""Extraction again from WARC (issue 48) against extraction in the crawl: rows/s and CPU per page, in one run.

    python -m benchmarks.reextract [--rounds 2] [--hosts 20] [--pages 250] [--extract builtin:article]

The articles test web (``raycrawl/testing/articles.py``: ~4-5 KB pages, an article among boilerplate), no delay, one
request in flight per host. Each round, side by side, every process of each command counted from its start to its
end (``benchmarks/cpu_use.py``):

- ``crawl``: ``raycrawl crawl`` with no extractor (its output is what the other commands read);
- ``crawl + extract``: the same crawl with ``--extract SPEC``: the extractor's cost in the crawl is the difference;
- ``read_warc``: a Ray Data job reading every row of the crawl's committed WARC (bodies included) and nothing else;
- ``raycrawl extract``: the extractor and contract over those rows (``--into`` a fresh directory), nothing fetched;
- and the two WARC commands again over a crawl of one page: their fixed cost (Ray's start, the job's planning), taken
  off to give the per-page figures of a big re-extraction ("net").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from benchmarks.cpu_use import CpuSampler
from raycrawl.testing import TestWeb, WebSpec

READ_ROWS = """
import sys, raycrawl
from raycrawl.ray_runtime import ensure_ray
ensure_ray(None)
rows = bytes_ = 0
for batch in raycrawl.read_warc(sys.argv[1]).iter_batches(batch_size=512, batch_format="pyarrow"):
    rows += batch.num_rows
    bytes_ += sum(len(b) for b in batch.column("body").to_pylist() if b)
print(rows, bytes_)
"""


@dataclass
class Run:
    name: str
    rows: int  # pages crawled, or rows read / pages judged
    wall: float
    cpu: float

    def per_row_ms(self, fixed: Run | None = None) -> float:
        cpu = self.cpu - (fixed.cpu if fixed is not None else 0.0)
        return 1000 * cpu / self.rows if self.rows else float("nan")

    def rate(self, fixed: Run | None = None) -> float:
        wall = self.wall - (fixed.wall if fixed is not None else 0.0)
        return self.rows / wall if wall > 0 else float("nan")


def measured(cmd: list[str], exclude: set[int]) -> tuple[str, float, float]:
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with CpuSampler(root=proc.pid, exclude=exclude, interval=0.1) as sampler:
        out, err = proc.communicate(timeout=1800)
    wall = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[:5]} failed ({proc.returncode}):\n{out[-2000:]}\n{err[-4000:]}")
    return out, wall, sum(sampler.by_role(steady=False).values())


def crawl(web: TestWeb, out: str, ua: str, extra: list[str]) -> Run:
    cmd = [sys.executable, "-m", "raycrawl.cli", "crawl", *web.graph.seeds(), "--out", out, "--quiet", "--delay", "0",
           "--delay-factor", "0", "--per-host-concurrency", "1", "--user-agent", ua, "--allow-network", "127.0.0.0/8",
           *extra]  # fmt: skip
    _, wall, cpu = measured(cmd, {web.pid} if web.pid else set())
    pages = sum(1 for r in web.requests() if r["ua"] == ua and r["path"] != "/robots.txt")
    return Run("crawl + extract" if extra and "--max-pages" not in extra else "crawl", pages, wall, cpu)


def read_rows(out: str, name: str) -> Run:
    stdout, wall, cpu = measured([sys.executable, "-c", READ_ROWS, out], set())
    rows = int(stdout.split()[-2])
    return Run(name, rows, wall, cpu)


def reextract(out: str, spec: str, name: str) -> Run:
    with tempfile.TemporaryDirectory(prefix="raycrawl-reextract-") as into:
        cmd = [sys.executable, "-m", "raycrawl.cli", "extract", out, "--extract", spec, "--into", into, "--quiet"]
        _, wall, cpu = measured(cmd, set())
        with open(os.path.join(into, "stats.json"), encoding="utf-8") as f:
            judged = json.load(f)["pages_judged"]
    return Run(name, judged, wall, cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--pages", type=int, default=250, help="articles per host")
    parser.add_argument("--extract", default="builtin:article")
    args = parser.parse_args()
    profiles = ("articles",) * args.hosts
    spec = WebSpec(hosts=args.hosts, pages_per_host=args.pages, private_links=False, profiles=profiles)
    with TestWeb(spec) as web, tempfile.TemporaryDirectory(prefix="raycrawl-reextract-bench-") as tmp:
        for i in range(args.rounds):
            plain_out, one_out = os.path.join(tmp, f"plain{i}"), os.path.join(tmp, f"one{i}")
            plain = crawl(web, plain_out, f"reextract-bench/{i}", [])
            extracting = crawl(web, os.path.join(tmp, f"ext{i}"), f"reextract-bench/{i}-x", ["--extract", args.extract])
            crawl(web, one_out, f"reextract-bench/{i}-one", ["--max-pages", "1"])
            read = read_rows(plain_out, "read_warc")
            read_one = read_rows(one_out, "read_warc, 1 page")
            again = reextract(plain_out, args.extract, "raycrawl extract")
            again_one = reextract(one_out, args.extract, "raycrawl extract, 1 page")
            in_crawl = extracting.per_row_ms() - plain.per_row_ms()
            print(f"round {i + 1} ({args.extract}, {plain.rows} pages crawled):")
            for run in (plain, extracting, read, read_one, again, again_one):
                print(f"  {run.name:<26} {run.rows:>6} rows  {run.wall:6.1f} s wall  {run.cpu:7.2f} s CPU"
                      f"  {run.per_row_ms():7.3f} ms CPU/row  {run.rate():7.0f} rows/s")  # fmt: skip
            print(f"  extraction in the crawl: +{in_crawl:.3f} ms CPU a page (crawl + extract - crawl)")
            print(f"  read_warc, net of its fixed cost: {read.per_row_ms(read_one):.3f} ms CPU a row,"
                  f" {read.rate(read_one):.0f} rows/s")  # fmt: skip
            print(f"  raycrawl extract, net of its fixed cost: {again.per_row_ms(again_one):.3f} ms CPU a page,"
                  f" {again.rate(again_one):.0f} pages/s; against the crawl's +{in_crawl:.3f}:"
                  f" {again.per_row_ms(again_one) / in_crawl:.2f}x", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
