"""raycrawl's CPU per page as a multiple of the bare loop's, on one test web, in one run, whole runs counted.

    python -m benchmarks.cpu_per_page [--rounds 2] [--hosts 40] [--pages 500]

The big light test web (40 hosts, 500 pages each, ~0.5 KB pages), no delay, one request in flight per host.
Each round runs ``python -m benchmarks.bare_loop`` (``benchmarks/bare_loop.py``: aiohttp + selectolax and nothing
else) and then ``raycrawl crawl`` -- the command a user runs, with its own Ray and default settings but
``--delay 0 --delay-factor 0`` -- against the same test web; rounds alternate so both see the same machine.
Every process of each command is counted from its start to its end (``benchmarks/cpu_use.py`` samples /proc
every 0.1 s; a process that ends is counted to its last sample; the bare loop reports its own CPU exactly): Ray's
start-up, the crawl's checkpoints and its end are in it. Pages are what the test web's log saw (robots.txt
excluded); pages/s is pages over the command's wall time.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

from benchmarks.cpu_use import NOT_ACTORS, CpuSampler
from raycrawl.testing import TestWeb, WebSpec


@dataclass
class Run:
    name: str
    pages: int
    wall: float
    cpu: float  # every process of the command
    roles: dict[str, float] = field(default_factory=dict)  # CPU seconds by role, from /proc samples
    output: str = ""

    def per_page(self, seconds: float) -> float:
        return 1000 * seconds / self.pages if self.pages else float("nan")


def run_command(name: str, cmd: list[str], web: TestWeb, ua: str) -> Run:
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with CpuSampler(root=proc.pid, exclude={web.pid} if web.pid else set(), interval=0.1) as sampler:
        out, err = proc.communicate(timeout=1800)
    wall = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"{name} failed ({proc.returncode}):\n{out[-2000:]}\n{err[-4000:]}")
    pages = sum(1 for r in web.requests() if r["ua"] == ua and r["path"] != "/robots.txt")
    roles = sampler.by_role(steady=False)
    return Run(name, pages, wall, sum(roles.values()), roles, out)


def bare(web: TestWeb, round_: int) -> Run:
    ua = f"bare-loop/{round_}"
    cmd = [sys.executable, "-m", "benchmarks.bare_loop", "--user-agent", ua, *web.graph.seeds()]
    run = run_command("bare loop", cmd, web, ua)
    # Its own account of its CPU is exact (a sampler misses what a process spends after its last sample).
    return dataclasses.replace(run, cpu=json.loads(run.output)["cpu_s"])


def raycrawl(web: TestWeb, round_: int, extra: list[str]) -> Run:
    ua = f"raycrawl-cpu/{round_}"
    with tempfile.TemporaryDirectory(prefix="raycrawl-cpu-") as out:
        cmd = [sys.executable, "-m", "raycrawl.cli", "crawl", *web.graph.seeds(), "--out", out, "--quiet",
               "--delay", "0", "--delay-factor", "0", "--per-host-concurrency", "1", "--user-agent", ua,
               "--allow-network", "127.0.0.0/8", *extra]  # fmt: skip
        return run_command("raycrawl", cmd, web, ua)


def table(runs: list[tuple[Run, Run]]) -> str:
    lines = []
    for i, (floor, ours) in enumerate(runs, 1):
        base = floor.per_page(floor.cpu)
        lines.append(f"round {i}: bare loop {floor.pages} pages in {floor.wall:.1f} s = {floor.pages / floor.wall:.0f}"
                     f" pages/s, {base:.3f} ms CPU/page; raycrawl {ours.pages} pages in {ours.wall:.1f} s = "
                     f"{ours.pages / ours.wall:.0f} pages/s ({ours.pages / ours.wall / (floor.pages / floor.wall):.0%}"
                     " of the loop's)")  # fmt: skip
        lines.append(f"  {'raycrawl, ms CPU per page':<30}{'ms':>8}{'x loop':>9}")
        actors = sum(v for k, v in ours.roles.items() if k not in NOT_ACTORS)
        rows = sorted(ours.roles.items(), key=lambda kv: -kv[1])
        rows += [("all actors", actors), ("every process", ours.cpu)]
        for role, seconds in rows:
            ms = ours.per_page(seconds)
            lines.append(f"  {role:<30}{ms:8.3f}{ms / base:9.2f}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--hosts", type=int, default=40)
    parser.add_argument("--pages", type=int, default=500, help="pages per host")
    parser.add_argument("--json", help="also write the runs here")
    parser.add_argument("extra", nargs="*", help="more raycrawl crawl flags (after --)")
    args = parser.parse_args()
    spec = WebSpec(hosts=args.hosts, pages_per_host=args.pages, page_bytes=500, private_links=False)
    runs = []
    with TestWeb(spec) as web:
        for i in range(args.rounds):
            runs.append((bare(web, i), raycrawl(web, i, args.extra)))
            print(table(runs[-1:]).replace("round 1", f"round {i + 1}"), flush=True)
    ratios = [ours.per_page(ours.cpu) / floor.per_page(floor.cpu) for floor, ours in runs]
    print("raycrawl / bare loop, CPU per page (whole runs): " + ", ".join(f"{r:.2f}" for r in ratios))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            rows = [[vars(run) | {"output": ""} for run in pair] for pair in runs]
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
