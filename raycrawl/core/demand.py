"""How many fetch tasks a crawl is worth now, and how many CPUs to ask the cluster for (pure: clock injected).

A fetch task carries up to ``fetch_batch_size`` URLs and fetches them at once, so the tasks worth running are the
URLs that could be in flight now, in full batches: the URLs leased (in tasks, staged, or due within the lease
horizon) and the hosts due now that the round's quota left unleased (each a URL more; a host with per-host
concurrency above one comes back due as soon as a slot frees). Hosts that wait on their delays are not in either
count until they are due: a crawl whose hosts all wait needs only what their next slots need. Always at least one
task while anything is queued or leased (a host comes due), never more than ``max_tasks`` -- the operator's
ceiling, ``--max-tasks-in-flight``.

Launching follows ``min(demand, tasks the cluster's CPUs hold)``: more would only wait in Ray's queue while their
leases age. On a cluster with an autoscaler, ``CpuRequest`` asks for the CPUs demand needs (a bundle per task),
at once when demand grows, and only after it has stayed lower for ``hold`` seconds when it falls (hysteresis: a
crawl between two bursts keeps its nodes); when nothing is due it withdraws the request, and the autoscaler's
idle timeout releases the nodes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

BACKLOG_CAP = 4096  # hosts due and not leased, counted per shard up to this: more than any ceiling of tasks fetches


def fetch_demand(leased: int, due_backlog: int, queued: int, batch: int, max_tasks: int) -> int:
    """Fetch tasks worth running: (URLs leased + hosts due and not leased) in full batches, at least 1 while
    anything is queued or leased, at most ``max_tasks``."""
    urls = leased + due_backlog
    floor = 1 if (urls or queued) else 0
    return max(floor, min(max_tasks, math.ceil(urls / batch)))


def task_capacity(cluster_cpus: float, task_cpus: float, max_tasks: int) -> int:
    """Tasks the cluster's CPUs hold at once (at least one: a cluster that has not said yet still crawls)."""
    return max(1, min(max_tasks, int(cluster_cpus / task_cpus + 1e-9)))


def workers_to_warm(cluster_cpus: float, task_cpus: float, max_tasks: int) -> int:
    """Fetch worker processes to start with the crawl: one per CPU, at most one per task the CPUs hold. Tasks
    beyond that (``--fetch-task-cpus`` under 1) start theirs only when demand first asks for them, so a small crawl
    never pays for processes it does not use (~1 s of CPU each to start)."""
    return min(task_capacity(cluster_cpus, task_cpus, max_tasks), max(1, int(cluster_cpus + 1e-9)))


@dataclass(frozen=True, slots=True)
class Bundles:
    """What to ask the autoscaler for: ``count`` bundles of ``cpus`` each (0: withdraw the request)."""

    count: int
    cpus: float

    def as_list(self) -> list[dict[str, float]]:
        return [{"CPU": self.cpus}] * self.count


class RecentPeak:
    """The highest value of the last ``hold`` seconds: a level that follows demand up at once and down only after
    demand has stayed lower that long (hysteresis, so a crawl between two bursts keeps what it has)."""

    def __init__(self, hold: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.hold = hold
        self._clock = clock
        self._recent: list[tuple[float, int]] = []  # (when, value): the last ``hold`` seconds

    def update(self, value: int) -> int:
        now = self._clock()
        self._recent = [(t, v) for t, v in self._recent if t > now - self.hold] + [(now, value)]
        return max(v for _, v in self._recent)

    def clear(self) -> None:
        self._recent = []


class CpuRequest:
    """The autoscaler's request, following demand with hysteresis: up at once (at most every ``every`` seconds),
    down to the highest demand of the last ``hold`` seconds, withdrawn (0 bundles) once nothing has been due for
    ``hold`` seconds."""

    def __init__(
        self, task_cpus: float, every: float = 5.0, hold: float = 30.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.task_cpus, self.every = task_cpus, every
        self._clock = clock
        self._peak = RecentPeak(hold, clock)
        self._sent: int | None = None  # bundles last asked for
        self._sent_at = -math.inf

    @property
    def requested(self) -> int:
        """Bundles asked for now (0 when none, or none yet)."""
        return self._sent or 0

    def update(self, demand: int) -> Bundles | None:
        """The crawl's demand now; the request to send, or None when the last one stands."""
        now = self._clock()
        wanted = self._peak.update(demand)
        if wanted == self._sent:
            return None
        if self._sent is not None and wanted > self._sent and now - self._sent_at < self.every:
            return None  # (up again soon: not more often than every few seconds)
        self._sent, self._sent_at = wanted, now
        return Bundles(wanted, self.task_cpus)

    def withdraw(self) -> Bundles | None:
        """The crawl ended: ask for nothing (None when nothing was asked)."""
        if not self._sent:
            return None
        self._sent = 0
        self._peak.clear()
        return Bundles(0, self.task_cpus)


def render_workers_wanted(pages_rendering: int, pages_per_worker: int, fewest: int, most: int) -> int:
    """Render actors worth running for the pages handed to rendering now (rendering or waiting for a browser):
    enough to render them all at once, between the pool's ``fewest`` and ``most``."""
    return max(fewest, min(most, math.ceil(pages_rendering / pages_per_worker)))
