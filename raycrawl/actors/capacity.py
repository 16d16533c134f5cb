"""The cluster as a crawl sees it: its CPUs (how many fetch tasks may run at once) and nodes, and -- on a cluster
with an autoscaler -- the CPUs the crawl's demand asks for (core/demand.py decides; this only asks Ray).

Read at most every few seconds (two calls to Ray's control store); the request is sent only when it changes. On a
Ray without an autoscaler (a local one, a plain ``ray start``) nothing is asked: there is no one to ask.

With an autoscaler, fetch tasks are packed: while demand fits one node's CPUs, every task prefers that node (a soft
affinity: when it is full they go elsewhere) -- the node that keeps the crawl's actors first, then the others in a
stable order. So when demand falls the other nodes really go idle and an autoscaler can release them; spread over
every node, a few tasks would keep them all busy.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from typing import Any

import ray

from raycrawl.actors.placement import HEAD_RESOURCE, STATE_RESOURCE
from raycrawl.core.demand import Bundles, CpuRequest, task_capacity, workers_to_warm

REFRESH = 5.0  # seconds between looks at the cluster
FOLLOW = 1.0  # seconds between demand samples for the request (its hysteresis is over the last 30 s of them)
_AUTOSCALER_STATUS = "__autoscaling_status"  # (Ray's autoscaler monitor writes its status here on every update)


class ClusterCapacity:
    def __init__(self, task_cpus: float, max_tasks: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.task_cpus, self.max_tasks = task_cpus, max_tasks
        self.request = CpuRequest(task_cpus, clock=clock)
        self._clock = clock
        self.cpus = 0.0
        self.nodes = 0
        self.autoscaler = False
        self.demand = 0
        self._node_cpus: list[tuple[str, float]] = []  # alive nodes offering CPUs, in the order tasks fill them
        self.peaks: dict[str, float] = {"tasks_wanted": 0, "cpus_requested": 0.0, "nodes": 0}
        self._looked = -math.inf
        self._followed = -math.inf

    @property
    def tasks(self) -> int:
        """Fetch tasks the cluster's CPUs hold at once (as of the last look)."""
        return task_capacity(self.cpus, self.task_cpus, self.max_tasks)

    @property
    def warm_workers(self) -> int:
        """Fetch worker processes to start with the crawl (core/demand.py ``workers_to_warm``)."""
        return workers_to_warm(self.cpus, self.task_cpus, self.max_tasks)

    def look(self) -> None:
        """The cluster's CPUs and live nodes, and whether an autoscaler runs (no more often than REFRESH)."""
        now = self._clock()
        if now - self._looked < REFRESH:
            return
        self._looked = now
        self.cpus = float(ray.cluster_resources().get("CPU", 0.0))
        alive = [node for node in ray.nodes() if node.get("Alive")]
        self.nodes = len(alive)
        keeps = [STATE_RESOURCE, HEAD_RESOURCE]
        order = sorted(alive, key=lambda n: (not any(k in n.get("Resources", {}) for k in keeps), n["NodeID"]))
        cpus = [(str(n["NodeID"]), float(n.get("Resources", {}).get("CPU", 0.0))) for n in order]
        self._node_cpus = [(node, c) for node, c in cpus if c > 0]
        self.autoscaler = _has_autoscaler()
        self.peaks["nodes"] = max(self.peaks["nodes"], self.nodes)

    def home(self) -> str | None:
        """The node every fetch task should prefer now, with an autoscaler: the first (in filling order) whose CPUs
        hold all that demand wants; None when none does, or with no autoscaler (a static cluster: Ray spreads
        them, and a lost node takes fewer with it)."""
        if not self.autoscaler:
            return None
        wanted = max(1, self.demand) * self.task_cpus
        return next((node for node, cpus in self._node_cpus if cpus >= wanted), None)

    def follow(self, demand: int) -> None:
        """The crawl's demand now (fetch tasks worth running): the autoscaler is asked for their CPUs."""
        self.demand = demand
        self.peaks["tasks_wanted"] = max(self.peaks["tasks_wanted"], demand)
        now = self._clock()
        if not self.autoscaler or now - self._followed < FOLLOW:
            return
        self._followed = now
        _send(self.request.update(demand))
        self.peaks["cpus_requested"] = max(self.peaks["cpus_requested"], self.request.requested * self.task_cpus)

    def withdraw(self) -> None:
        """The crawl is over: ask for nothing, so that the autoscaler's idle timeout releases the nodes."""
        _send(self.request.withdraw())

    def view(self, tasks_running: int) -> dict[str, Any]:
        return {
            "tasks_wanted": self.demand,
            "tasks_running": tasks_running,
            "tasks_ceiling": min(self.max_tasks, self.tasks),
            "cpus_requested": round(self.request.requested * self.task_cpus, 2),
            "cluster_cpus": self.cpus,
            "nodes": self.nodes,
            "autoscaler": self.autoscaler,
            "peaks": dict(self.peaks),
        }


def _send(bundles: Bundles | None) -> None:
    if bundles is None:
        return
    from ray.autoscaler.sdk import request_resources

    request_resources(bundles=bundles.as_list())


def _has_autoscaler() -> bool:
    from ray.experimental.internal_kv import _internal_kv_get

    try:
        status = _internal_kv_get(_AUTOSCALER_STATUS)
        if status is None:
            return False
        # Every Ray head runs a monitor; without an autoscaling config its provider is a read-only one that names
        # each node's type after the node ("node_<id>"): nothing to scale.
        report = json.loads(status).get("autoscaler_report") or {}
        types = report.get("node_type_mapping") or {}
        return any(kind != f"node_{node}" for node, kind in types.items())
    except Exception:  # (an internal API: if it moves, the crawl asks for nothing rather than fail)
        return False
