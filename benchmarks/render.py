"""Rendered pages against plain fetches: pages/s and CPU per page of ``raycrawl crawl`` on two test webs of the same
shape, in one run, rounds alternating (issue 35).

    python -m benchmarks.render [--rounds 2] [--hosts 8] [--pages 15] [--workers 1] [--render-pages 2]

- plain: the graph test web (``--hosts`` x ``--pages`` light pages), ``--render never``;
- rendered: the scripted test web of the same shape (``testing/scripted.py``: every page a shell whose script asks
  for ``/app.js`` and ``/data/{i}.json`` and writes its links), ``--render always``.

No delay (``--delay 0 --delay-factor 0``), one request in flight per host. Every process of each command is
counted from its start to its end (``benchmarks/cpu_use.py``), the browsers (Chromium and Playwright's driver)
apart; pages are what the test web's log saw (``/`` and ``/p/N``), the scripts' requests counted beside them.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from benchmarks.cpu_use import CpuSampler
from raycrawl.testing import TestWeb, WebSpec

BROWSER_TITLES = ("/chrom", "playwright")  # (in a process's command line)


@dataclass
class Run:
    name: str
    pages: int
    other_requests: int  # the scripts' requests (rendered), robots.txt left out
    wall: float
    cpu: float
    browsers: float  # of cpu: Chromium's processes and Playwright's driver

    def line(self) -> str:
        per_page = 1000 * self.cpu / self.pages if self.pages else float("nan")
        browsers = 1000 * self.browsers / self.pages if self.pages else float("nan")
        rate = self.pages / self.wall
        return (f"{self.name:<9} {self.pages:5d} pages ({self.other_requests} scripts' requests) in {self.wall:6.1f} s"
                f" = {rate:6.1f} pages/s, CPU {per_page:7.1f} ms/page (browsers {browsers:6.1f})")  # fmt: skip


def crawl(name: str, web: TestWeb, ua: str, extra: list[str]) -> Run:
    with tempfile.TemporaryDirectory(prefix="raycrawl-render-bench-") as out:
        cmd = [sys.executable, "-m", "raycrawl.cli", "crawl", *web.graph.seeds(), "--out", out, "--quiet",
               "--delay", "0", "--delay-factor", "0", "--per-host-concurrency", "1", "--user-agent", ua,
               "--allow-network", "127.0.0.0/8", *extra]  # fmt: skip
        started = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        with CpuSampler(root=proc.pid, exclude={web.pid} if web.pid else set(), interval=0.1) as sampler:
            stdout, stderr = proc.communicate(timeout=1800)
        wall = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"{name} failed ({proc.returncode}):\n{stdout[-2000:]}\n{stderr[-4000:]}")
    seen = [r for r in web.requests() if r["ua"] == ua and r["path"] != "/robots.txt"]
    pages = sum(1 for r in seen if r["path"] == "/" or r["path"].startswith("/p/"))
    browsers = sum(p.used for p in sampler.processes.values()
                   if any(mark in t.lower() for t in p.titles for mark in BROWSER_TITLES))  # fmt: skip
    return Run(name, pages, len(seen) - pages, wall, sum(sampler.by_role(steady=False).values()), browsers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--hosts", type=int, default=8)
    parser.add_argument("--pages", type=int, default=15, help="pages per host")
    parser.add_argument("--workers", type=int, default=1, help="--render-workers")
    parser.add_argument("--render-pages", type=int, default=2, help="--render-pages")
    args = parser.parse_args()
    plain_spec = WebSpec(hosts=args.hosts, pages_per_host=args.pages, page_bytes=500, private_links=False)
    scripted_spec = WebSpec(hosts=args.hosts, pages_per_host=args.pages, profiles=("scripted",) * args.hosts)
    render_flags = ["--render", "always", "--render-workers", str(args.workers),
                    "--render-pages", str(args.render_pages)]  # fmt: skip
    results: list[tuple[Run, Run]] = []
    with TestWeb(plain_spec) as plain_web, TestWeb(scripted_spec) as scripted_web:
        for i in range(args.rounds):
            plain = crawl("plain", plain_web, f"render-bench-plain/{i}", ["--render", "never"])
            rendered = crawl("rendered", scripted_web, f"render-bench-rendered/{i}", render_flags)
            results.append((plain, rendered))
            print(f"round {i + 1}:\n  {plain.line()}\n  {rendered.line()}", flush=True)
    for plain, rendered in results:
        rate = (rendered.pages / rendered.wall) / (plain.pages / plain.wall)
        cpu = (rendered.cpu / rendered.pages) / (plain.cpu / plain.pages)
        print(f"rendered / plain: pages/s x{rate:.3f}, CPU per page x{cpu:.1f}")


if __name__ == "__main__":
    main()
