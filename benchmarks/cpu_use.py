"""CPU time of every process of a crawl, by role, read from /proc while it runs.

A sampler thread lists the descendants of this process (the driver: Ray's daemons and workers are its
children when it starts Ray) every ``interval`` seconds and keeps each one's last user+system time and every
title Ray gave it (``ray::FrontierShardActor.lease``, ``ray::fetch_batch``, ``ray::IDLE`` ...). A process that
was there at the start counts from then; one born during the crawl counts from zero (its start-up is part of
the cost); one that dies counts until its last sample (at most ``interval`` of it is missed).

``mark()`` starts the steady-state count: from then on, each process counts from its CPU time at the mark (or
from zero if born later). The benchmarks mark once the crawl has fetched its first pages, so the figures per
page leave out what Ray and each actor spend starting (about a second of CPU per process, whatever the crawl's
size), and say that separately.
"""

from __future__ import annotations

import os
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
TASK_TITLES = ("ray::fetch_batch", "ray::warm_up", "ray::store_node_parts", "ray::IDLE", "ray::read_")
NOT_ACTORS = ("driver", "fetch workers", "ray daemons")
ACTOR_NAMES = {
    "Coordinator": "coordinator",
    "CoordinatorActor": "coordinator",
    "FrontierShardActor": "shard",
    "DedupActor": "dedup",
    "FetchLauncher": "fetch launcher",
}


@dataclass
class Process:
    pid: int
    first: float  # CPU seconds when first seen (0 for a process born after the start)
    last: float
    titles: set[str] = field(default_factory=set)
    marked: float | None = None  # CPU seconds at the mark

    @property
    def used(self) -> float:
        return self.last - self.first

    @property
    def since_mark(self) -> float:
        return self.last - (self.marked if self.marked is not None else 0.0)

    def role(self, driver: int) -> str:
        if self.pid == driver:
            return "driver"
        # (a named actor's title is its name, then ":" and its class)
        names = {
            t.split()[0].removeprefix("ray::").split(".")[0].rsplit(":", 1)[-1]
            for t in self.titles
            if t.startswith("ray::")
        }
        names.discard("IDLE")
        for name in names:
            if name in ACTOR_NAMES:
                return ACTOR_NAMES[name]
            if name.endswith("Actor"):  # (Ray's own actors, its dashboard and runtime-env agents, are daemons)
                return f"actor {name}"
        if any(t.startswith(TASK_TITLES) for t in self.titles):
            return "fetch workers"
        return "ray daemons"


def _read(pid: int) -> tuple[int, float, str] | None:
    """(parent pid, CPU seconds, title) of a live process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode(errors="replace")
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            title = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / CLOCK_TICKS, title


class CpuSampler:
    def __init__(self, exclude: set[int] | None = None, interval: float = 0.2, root: int | None = None) -> None:
        self.driver = root if root is not None else os.getpid()  # (root: a command's process, for its tree)
        self.whole = root is not None  # a command started with the sampler: all of its processes' CPU counts
        self.exclude = exclude or set()
        self.interval = interval
        self.processes: dict[int, Process] = {}
        self.history: list[tuple[float, dict[int, float]]] = []  # (wall time, each process's CPU seconds then)
        self._marked = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="cpu-sampler")

    def __enter__(self) -> CpuSampler:
        self._sample(initial=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample(initial=False)

    def mark(self) -> None:
        """Start the steady-state count now."""
        self._sample(initial=False)
        for proc in self.processes.values():
            proc.marked = proc.last
        self._marked = True

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample(initial=False)

    def _sample(self, initial: bool) -> None:
        seen: dict[int, tuple[int, float, str]] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                info = _read(int(entry))
                if info is not None:
                    seen[int(entry)] = info
        ours = {self.driver}
        grew = True
        while grew:  # descendants of the driver, whatever their depth
            grew = False
            for pid, (ppid, _, _) in seen.items():
                if ppid in ours and pid not in ours and pid not in self.exclude:
                    ours.add(pid)
                    grew = True
        now: dict[int, float] = {}
        self.history.append((time.time(), now))
        for pid in ours:
            if pid not in seen:
                continue  # (the root has ended)
            now[pid] = seen[pid][1]
            _, cpu, title = seen[pid]
            proc = self.processes.get(pid)
            if proc is None:
                proc = self.processes[pid] = Process(pid, cpu if initial and not self.whole else 0.0, cpu)
                if self._marked:
                    proc.marked = 0.0  # (born after the mark: all of it counts)
            proc.last = cpu
            proc.titles.add(title[:80])

    def _used(self, proc: Process, steady: bool) -> float:
        return proc.since_mark if steady and self._marked else proc.used

    def by_role(self, steady: bool = True) -> dict[str, float]:
        out: dict[str, float] = defaultdict(float)
        for proc in self.processes.values():
            out[proc.role(self.driver)] += self._used(proc, steady)
        return dict(out)

    def between(self, start: float, end: float) -> dict[str, float]:
        """CPU seconds by role spent from wall time ``start`` to ``end`` (each process: its CPU at the last sample
        by ``end`` less that at the last sample by ``start``, or its start's if it was not there yet)."""
        at_start: dict[int, float] = {}
        at_end: dict[int, float] = {}
        for when, cpus in self.history:
            if when <= start:
                at_start.update(cpus)
            if when <= end:
                at_end.update(cpus)
        out: dict[str, float] = defaultdict(float)
        for pid, cpu in at_end.items():
            proc = self.processes[pid]
            out[proc.role(self.driver)] += cpu - at_start.get(pid, proc.first)
        return dict(out)

    def busiest_actor(self) -> tuple[str, float]:
        actors = [p for p in self.processes.values() if p.role(self.driver) not in NOT_ACTORS]
        if not actors:
            return "none", 0.0
        top = max(actors, key=lambda p: self._used(p, True))
        return top.role(self.driver), self._used(top, True)

    def report(self, pages: int, total_pages: int | None = None) -> str:
        """CPU milliseconds per page by role, all actors together, the busiest actor, and the total: since the
        mark for ``pages`` pages; and every process from the start, start-up included, for ``total_pages``."""
        roles = self.by_role()
        actors = sum(v for k, v in roles.items() if k not in NOT_ACTORS)
        role, busiest = self.busiest_actor()
        what = "since the mark" if self._marked else "from the start"
        lines = [f"CPU per fetched page ({pages} pages {what}), ms:"]
        for name, seconds in sorted(roles.items(), key=lambda kv: -kv[1]):
            lines.append(f"  {name:<22}{1000 * seconds / pages:8.3f}   ({seconds:.2f} s)")
        lines.append(f"  {'all actors':<22}{1000 * actors / pages:8.3f}")
        lines.append(f"  {'busiest actor':<22}{1000 * busiest / pages:8.3f}   ({role})")
        lines.append(f"  {'every process':<22}{1000 * sum(roles.values()) / pages:8.3f}")
        if self._marked and total_pages:
            whole = sum(self.by_role(steady=False).values())
            per_page = 1000 * whole / total_pages
            lines.append(f"  {'(with start-up)':<22}{per_page:8.3f}   ({whole:.2f} s, {total_pages} pages)")
        return "\n".join(lines)


def mark_when_crawling(crawl: Any, cpu: CpuSampler, pages: int = 200, timeout: float = 120.0) -> int:
    """Mark ``cpu`` once ``crawl`` has fetched ``pages`` pages (every process is up by then); the pages at the
    mark (0 if it never got there: then the whole crawl counts)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = crawl.status()
        if status.get("state") == "finished":
            return 0
        if status.get("pages", 0) >= pages:
            cpu.mark()
            return int(status["pages"])
        time.sleep(0.05)
    return 0
