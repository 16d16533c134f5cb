"""raycrawl's CPU per page as a multiple of the bare loop's, on one test web, in one run: whole runs, and at the
margin (the steady window of each run: what each additional page costs).

    python -m benchmarks.cpu_per_page [--rounds 2] [--hosts 40] [--pages 500] [--before DIR] [-- CRAWL FLAGS]
    python -m benchmarks.cpu_per_page --articles --also "--extract builtin:meta" --also "--extract builtin:article"

The big light test web (40 hosts, 500 pages each, ~0.5 KB pages), no delay, one request in flight per host.
The bare loop, ``python -m benchmarks.bare_loop`` (``benchmarks/bare_loop.py``: aiohttp + selectolax and nothing
else), runs before the first round and after each; each round runs ``raycrawl crawl`` -- the command a user runs,
with its own Ray and default settings but ``--delay 0 --delay-factor 0`` -- against the same test web, and with
``--before DIR`` another checkout's ``raycrawl crawl`` too (e.g. ``git worktree add DIR <commit before a
change>``). A round's crawls are measured against the loop runs either side of them, pooled (their CPU over their
pages): this machine's speed drifts over minutes (the loop alone went from 0.41 to 0.51 ms a page within one
session's rounds: benchmarks/README.md, issue 51 step 12), and a crawl between two loop runs sees their mean (the
loop runs' own figures are printed, so the drift shows). The crawls' order turns each round: whichever crawl
runs first in a round does better on this machine.
Every process of each command is counted from its start to its end (``benchmarks/cpu_use.py`` samples /proc
every 0.1 s; a process that ends is counted to its last sample; the bare loop reports its own CPU exactly): Ray's
start-up, the crawl's checkpoints and its end are in it. Pages are what the test web's log saw (robots.txt
excluded); pages/s is pages over the command's wall time.

At the margin: each run's steady window, from 10 s after its first page request to 3 s before its last (by the
web's log), the CPU every process spent in it (the samples' differences) over the pages requested in it: what an
additional page costs once everything is up, which decides how many machines a large crawl needs. In the same
window, the share of the hosts' time between two of their requests more than ``RUN_GAP`` (30 ms) apart, and the
median such gap: a no-delay host waiting between its runs, where the loop's hosts never wait. A 10-minute run is
``--pages 28000`` (raycrawl's ~2,000 pages/s on this machine).

``--also FLAGS`` (repeatable) runs ``raycrawl crawl`` again each round with those flags added, side by side (e.g. an
extractor: issue 47); ``--articles`` serves the test web's articles (``raycrawl/testing/articles.py``, ~4-5 KB pages
of an article among boilerplate) instead of its light pages.

Each round also runs the same ``raycrawl crawl`` stopped after one page (``--max-pages 1``): its CPU and wall time
are what any crawl costs before and after its pages (Ray's daemons, each process's start, the last checkpoint,
Ray's shutdown) -- the floor under the whole-run ratio, reported as a multiple of the loop's whole run.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from benchmarks.cpu_use import NOT_ACTORS, CpuSampler
from benchmarks.local_ray import THIS_CHECKOUT, compile_package
from raycrawl.testing import TestWeb, WebSpec

MARGIN_AFTER_FIRST = 10.0  # seconds after a run's first request before its steady window starts ...
MARGIN_BEFORE_LAST = 3.0  # ... and before its last that the window ends
# Two requests of a host further apart than this are in two runs (the next run waited to be leased and launched):
# within a run a no-delay host is asked again as soon as its answer is in (~5-10 ms here; the loop never waits)
RUN_GAP = 0.03


@dataclass
class Run:
    name: str
    pages: int
    wall: float
    cpu: float  # every process of the command
    roles: dict[str, float] = field(default_factory=dict)  # CPU seconds by role, from /proc samples
    output: str = ""
    # At the margin: the steady window (MARGIN_AFTER_FIRST s after the run's first request to MARGIN_BEFORE_LAST s
    # before its last), its pages (by the web's log), its seconds and its CPU by role
    margin_pages: int = 0
    margin_seconds: float = 0.0
    margin_roles: dict[str, float] = field(default_factory=dict)
    # In the same window: the share of its hosts' time between two requests more than RUN_GAP apart, and the
    # median of those gaps (what a host waits between its runs: issue 51, benchmarks/README.md)
    idle_share: float = float("nan")
    median_gap: float = float("nan")

    def per_page(self, seconds: float) -> float:
        return 1000 * seconds / self.pages if self.pages else float("nan")

    def per_page_at_margin(self, seconds: float) -> float:
        return 1000 * seconds / self.margin_pages if self.margin_pages else float("nan")

    @property
    def margin_cpu(self) -> float:
        return sum(self.margin_roles.values())


def run_command(
    name: str, cmd: list[str], web: TestWeb, ua: str, env: dict[str, str] | None = None, cwd: str | None = None
) -> Run:
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
    with CpuSampler(root=proc.pid, exclude={web.pid} if web.pid else set(), interval=0.1) as sampler:
        out, err = proc.communicate(timeout=1800)
    wall = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"{name} failed ({proc.returncode}):\n{out[-2000:]}\n{err[-4000:]}")
    pages = [r for r in web.requests() if r["ua"] == ua and r["path"] != "/robots.txt"]  # (one read of the log)
    times = sorted(r["t"] for r in pages)
    roles = sampler.by_role(steady=False)
    run = Run(name, len(times), wall, sum(roles.values()), roles, out)
    if times:
        start, end = times[0] + MARGIN_AFTER_FIRST, times[-1] - MARGIN_BEFORE_LAST
        if end > start:
            run.margin_pages = sum(1 for t in times if start <= t <= end)
            run.margin_seconds = end - start
            run.margin_roles = sampler.between(start, end)
            hosts: dict[str, list[float]] = {}
            for r in pages:
                hosts.setdefault(r["host"], []).append(r["t"])
            run.idle_share, run.median_gap = host_gaps(hosts.values(), start, end)
    return run


def host_gaps(hosts: Iterable[list[float]], start: float, end: float) -> tuple[float, float]:
    """(the share of the hosts' time in [start, end] spent in gaps longer than RUN_GAP, the median such gap) from
    each host's request times: where a no-delay host's time goes when it is not being fetched."""
    total = idle = 0.0
    gaps: list[float] = []
    for times in hosts:
        times = sorted(times)
        for a, b in itertools.pairwise(times):
            if start <= a <= end:
                total += b - a
                if b - a > RUN_GAP:
                    idle += b - a
                    gaps.append(b - a)
    return (idle / total if total else float("nan")), (statistics.median(gaps) if gaps else 0.0)


def bare(web: TestWeb, round_: int) -> Run:
    ua = f"bare-loop/{round_}"
    cmd = [sys.executable, "-m", "benchmarks.bare_loop", "--user-agent", ua, *web.graph.seeds()]
    run = run_command("bare loop", cmd, web, ua)
    # Its own account of its CPU is exact (a sampler misses what a process spends after its last sample).
    return dataclasses.replace(run, cpu=json.loads(run.output)["cpu_s"])


def raycrawl(
    web: TestWeb, round_: int, extra: list[str], source: str | None = None, tag: str = "", name: str = ""
) -> Run:
    """``source``: a checkout of another raycrawl (e.g. before a change) to run instead of this one; ``tag``: told
    apart in the web's log from the round's other runs."""
    ua = f"raycrawl-cpu/{round_}{'-before' if source else ''}{f'-{tag}' if tag else ''}"
    with tempfile.TemporaryDirectory(prefix="raycrawl-cpu-") as out:
        cmd = [sys.executable, "-m", "raycrawl.cli", "crawl", *web.graph.seeds(), "--out", out, "--quiet",
               "--delay", "0", "--delay-factor", "0", "--per-host-concurrency", "1", "--user-agent", ua,
               "--allow-network", "127.0.0.0/8", *extra]  # fmt: skip
        # (run from the checkout: ``-m`` puts the working directory first on the path, and Ray's workers take the
        # driver's path and environment)
        env = dict(os.environ, PYTHONPATH=source) if source else None
        compile_package(source or THIS_CHECKOUT)
        label = name or ("raycrawl" if source is None else "before")
        return run_command(label, cmd, web, ua, env, cwd=source)


def pooled(before: Run, after: Run) -> Run:
    """The loop runs either side of a round as one: their CPU over their pages (at the margin, too)."""
    return Run(
        "bare loop", before.pages + after.pages, before.wall + after.wall, before.cpu + after.cpu,
        _summed(before.roles, after.roles), "", before.margin_pages + after.margin_pages,
        before.margin_seconds + after.margin_seconds, _summed(before.margin_roles, after.margin_roles),
        (before.idle_share + after.idle_share) / 2, (before.median_gap + after.median_gap) / 2,
    )  # fmt: skip


def _summed(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    """CPU seconds by role, added up (a role either lacks counts as 0)."""
    return {role: a.get(role, 0.0) + b.get(role, 0.0) for role in a | b}


def drift(before: Run, after: Run) -> str:
    """The two loop runs' own figures: how far the machine moved during the round."""
    whole = [run.per_page(run.cpu) for run in (before, after)]
    margin = [run.per_page_at_margin(run.margin_cpu) for run in (before, after)]
    return (
        f"  the loop before and after the round: {whole[0]:.3f} / {whole[1]:.3f} ms CPU a page (whole runs), "
        f"{margin[0]:.3f} / {margin[1]:.3f} at the margin"
    )


def fixed_costs(loop: Run, one_page: Run) -> str:
    """A one-page crawl's cost against the loop's whole run: what no per-page work can take back."""
    roles = ", ".join(f"{role} {seconds:.2f}" for role, seconds in sorted(one_page.roles.items(), key=lambda x: -x[1]))
    share = one_page.cpu / loop.cpu
    return (
        f"  a crawl stopped after one page ({one_page.pages} fetched): {one_page.cpu:.2f} s CPU ({share:.2f}x the "
        f"loop's whole run of {loop.pages} pages, {loop.cpu:.2f} s), {one_page.wall:.1f} s wall (the loop's: "
        f"{loop.wall:.1f} s) -- {roles}"
    )


def table(floor: Run, runs: list[Run]) -> str:
    """The bare loop's figures, then each raycrawl run's CPU per page by role, in ms and as a multiple of the loop's."""
    base = floor.per_page(floor.cpu)
    lines = [f"bare loop (its runs before and after, pooled): {floor.pages} pages in {floor.wall:.1f} s = "
             f"{floor.pages / floor.wall:.0f} pages/s, {base:.3f} ms CPU/page"]  # fmt: skip
    roles = sorted({role for run in runs for role in run.roles}, key=lambda r: -max(x.roles.get(r, 0) for x in runs))
    lines.append(f"  {'ms CPU per page (x loop)':<26}" + "".join(f"{run.name:>18}" for run in runs))
    for role in [*roles, "all actors", "every process"]:
        cells = []
        for run in runs:
            if role == "all actors":
                seconds = sum(v for k, v in run.roles.items() if k not in NOT_ACTORS)
            else:
                seconds = run.cpu if role == "every process" else run.roles.get(role, 0.0)
            cells.append(f"{run.per_page(seconds):8.3f} ({run.per_page(seconds) / base:5.2f}x)")
        lines.append(f"  {role:<26}" + "".join(f"{c:>18}" for c in cells))
    rates = "".join(f"{f'{run.pages / run.wall:.0f} ({run.pages / run.wall / (floor.pages / floor.wall):.0%})':>18}"
                    for run in runs)  # fmt: skip
    lines.append(f"  {'pages/s (share of loop)':<26}" + rates)
    lines.append(f"  {'pages':<26}" + "".join(f"{run.pages:>18}" for run in runs))
    return "\n".join(lines)


def margin_table(floor: Run, runs: list[Run]) -> str:
    """CPU per page in each run's steady window (the margin), by role, in ms and as a multiple of the loop's."""
    base = floor.per_page_at_margin(floor.margin_cpu)
    rate = floor.margin_pages / floor.margin_seconds if floor.margin_seconds else float("nan")
    lines = [f"at the margin ({MARGIN_AFTER_FIRST:g} s after the first request to {MARGIN_BEFORE_LAST:g} s before the "
             f"last): bare loop {floor.margin_pages} pages in {floor.margin_seconds:.1f} s = {rate:.0f} pages/s, "
             f"{base:.3f} ms CPU/page"]  # fmt: skip
    roles = sorted({role for run in runs for role in run.margin_roles},
                   key=lambda r: -max(x.margin_roles.get(r, 0) for x in runs))  # fmt: skip
    lines.append(f"  {'ms CPU per page (x loop)':<26}" + "".join(f"{run.name:>18}" for run in runs))
    for role in [*roles, "every process"]:
        cells = []
        for run in runs:
            seconds = run.margin_cpu if role == "every process" else run.margin_roles.get(role, 0.0)
            ms = run.per_page_at_margin(seconds)
            cells.append(f"{ms:8.3f} ({ms / base:5.2f}x)")
        lines.append(f"  {role:<26}" + "".join(f"{c:>18}" for c in cells))
    rates = [run.margin_pages / run.margin_seconds if run.margin_seconds else float("nan") for run in runs]
    lines.append(f"  {'pages/s (x loop)':<26}" + "".join(f"{f'{r:.0f} ({r / rate:.2f}x)':>18}" for r in rates))
    gaps = [f"{run.idle_share:.0%}, {1000 * run.median_gap:.0f} ms" for run in runs]
    lines.append(f"  {'host time in gaps, median':<26}" + "".join(f"{g:>18}" for g in gaps))
    lines.append(f"  (the loop's hosts: {floor.idle_share:.0%} of their time in gaps over {1000 * RUN_GAP:g} ms)")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--hosts", type=int, default=40)
    parser.add_argument("--pages", type=int, default=500, help="pages per host")
    parser.add_argument("--before", help="a checkout of raycrawl to run too, alternating (e.g. a git worktree)")
    parser.add_argument("--json", help="also write the runs here")
    parser.add_argument("--also", action="append", default=[], help="flags of another raycrawl run each round")
    parser.add_argument("--articles", action="store_true", help="the test web's articles instead of light pages")
    parser.add_argument("extra", nargs="*", help="more raycrawl crawl flags (after --)")
    args = parser.parse_args()
    profiles = ("articles",) * args.hosts if args.articles else ()
    spec = WebSpec(hosts=args.hosts, pages_per_host=args.pages, page_bytes=500, private_links=False, profiles=profiles)
    rounds: list[tuple[Run, list[Run]]] = []
    with TestWeb(spec) as web:
        loops = [bare(web, 0)]
        for i in range(args.rounds):
            crawls: list[Callable[[], Run]] = []
            if args.before:
                crawls.append(functools.partial(raycrawl, web, i, args.extra, os.path.abspath(args.before)))
            crawls.append(functools.partial(raycrawl, web, i, args.extra))
            for n, flags in enumerate(args.also):
                also = [*args.extra, *flags.split()]
                crawls.append(functools.partial(raycrawl, web, i, also, tag=f"also{n}", name=flags.split()[-1]))
            # The crawl that runs first in a round does better on this machine (measured: benchmarks/README.md,
            # step 13), so the order turns each round.
            order = list(range(len(crawls)))[:: 1 if i % 2 == 0 else -1]
            done = {k: crawls[k]() for k in order}
            runs = [done[k] for k in range(len(crawls))]
            one_page = raycrawl(web, i, [*args.extra, "--max-pages", "1"], tag="one-page")
            loops.append(bare(web, i + 1))
            floor = pooled(loops[i], loops[i + 1])
            rounds.append((floor, runs))
            print(f"round {i + 1}: " + table(floor, runs) + "\n" + margin_table(floor, runs), flush=True)
            print(drift(loops[i], loops[i + 1]), flush=True)
            print(fixed_costs(loops[i + 1], one_page), flush=True)
    for name in dict.fromkeys(run.name for _, runs in rounds for run in runs):
        ratios = [run.per_page(run.cpu) / floor.per_page(floor.cpu) for floor, runs in rounds for run in runs
                  if run.name == name]  # fmt: skip
        print(f"{name} / bare loop, CPU per page (whole runs): " + ", ".join(f"{r:.2f}" for r in ratios))
        margins = [run.per_page_at_margin(run.margin_cpu) / floor.per_page_at_margin(floor.margin_cpu)
                   for floor, runs in rounds for run in runs if run.name == name]  # fmt: skip
        print(f"{name} / bare loop, CPU per page at the margin: " + ", ".join(f"{r:.2f}" for r in margins)
              + (f" (mean {statistics.mean(margins):.2f})" if len(margins) > 1 else ""))  # fmt: skip
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            rows = [[vars(run) | {"output": ""} for run in [floor, *runs]] for floor, runs in rounds]
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
