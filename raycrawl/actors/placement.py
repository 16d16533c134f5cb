"""Where the crawl's stateful actors (frontier shards, seen-set partitions) go: the alive nodes in turn, each with a
hard node affinity, and never a node this crawl has seen lose an actor.

Why a hard affinity: Ray's SPREAD, and a soft node affinity, are hints that actors needing no CPU do not follow
(measured on a three-node test cluster: four shards on one node, and five of seven actors with a soft affinity
placed elsewhere than asked); a hard affinity is followed.

Why it must not outlive its node: Ray notices a lost node only after missed health checks, and lists it as alive
until then. An actor pinned to it meanwhile never starts; when Ray gives up it fails with
``ActorUnschedulableError``, which is not a ``RayActorError``. So every actor placed is asked its node before it is
used (``place``): one that does not answer in ``ANSWER_TIMEOUT`` marks its node as avoided, and the whole batch
is placed again elsewhere. The nodes of actors that died are avoided too (``avoid``), for the rest of the crawl.
When no node is left to ask for, Ray places the actors itself.

Which nodes: those offering the ``raycrawl_state`` resource (cluster.yaml gives it to the head: nodes an
autoscaler never removes) when any does; else, on a cluster with an autoscaler, the head (a node the autoscaler
takes away would cost a rollback each time: only stateless fetch tasks go to nodes that come and go); else every
node, spread (a static cluster: a lost node then takes fewer actors with it). The resource is only looked for,
never requested, so a cluster that declares none still crawls.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import ray
from ray.exceptions import ActorUnschedulableError, RayActorError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from raycrawl.core.checkpoint_sequence import rollback_pause

# What a call to an actor raises when the actor is gone or can never start: both mean "lost".
ACTOR_LOST: tuple[type[Exception], ...] = (RayActorError, ActorUnschedulableError)
ANSWER_TIMEOUT = 30.0  # seconds an actor placed may take to start (a new worker process) before its node is avoided
PLACE_ATTEMPTS = 3
STATE_RESOURCE = "raycrawl_state"  # a node offering it keeps the crawl's actors (cluster.yaml's head)
HEAD_RESOURCE = "node:__internal_head__"

# Makes one actor with the scheduling strategy it is given.
ActorMaker = Callable[[Any], Any]
Made = TypeVar("Made")


def made_despite_losses(make: Callable[[], Made], sleep: Callable[[float], None] = time.sleep) -> Made:
    """``make()`` -- a crew, made or restored -- tried again while an actor it makes dies under it (a process
    killed, a node Ray has not yet noticed is going), after a growing pause (core/checkpoint_sequence.py
    ``rollback_pause``); the last loss is raised when the tries are spent."""
    for attempt in itertools.count():
        try:
            return make()
        except ACTOR_LOST:
            pause = rollback_pause(attempt)
            if pause is None:
                raise
            sleep(pause)
    raise AssertionError("unreachable")  # (for mypy: the loop returns or raises)


class Placement:
    def __init__(self, answer_timeout: float = ANSWER_TIMEOUT) -> None:
        self.avoided: set[str] = set()  # node ids that lost an actor of this crawl, or never started one
        self.answer_timeout = answer_timeout
        self._addresses: dict[str, str] = {}  # node id -> its IP address, as last listed
        self.keep_on_head = False  # (an autoscaler runs: with no node offering STATE_RESOURCE, the head holds all)

    def avoid(self, nodes: Iterable[str | None]) -> None:
        self.avoided.update(n for n in nodes if n)

    def candidates(self) -> list[str]:
        """The nodes that may hold the crawl's actors (above), alive and not seen to fail, in a stable order."""
        alive = [n for n in self._list_nodes() if n.get("Alive")]
        stable = [n for n in alive if STATE_RESOURCE in (n.get("Resources") or {})]
        if not stable and self.keep_on_head:
            stable = [n for n in alive if HEAD_RESOURCE in (n.get("Resources") or {})]
        return sorted(n["NodeID"] for n in stable or alive if n["NodeID"] not in self.avoided)

    def addresses(self, nodes: list[str]) -> list[str]:
        """The IP address of each node id (what an operator recognises), "?" for one Ray no longer lists."""
        if any(n not in self._addresses for n in nodes):
            self._list_nodes()
        return [self._addresses.get(n, "?") for n in nodes]

    def _list_nodes(self) -> list[dict[str, Any]]:
        nodes: list[dict[str, Any]] = ray.nodes()
        self._addresses.update({n["NodeID"]: str(n.get("NodeManagerAddress", "?")) for n in nodes})
        return nodes

    def place(self, makers: list[ActorMaker]) -> tuple[list[Any], list[str]]:
        """One actor per maker, on the candidate nodes in turn, each answering; (actors, their node ids)."""
        if not makers:
            return [], []
        for _ in range(PLACE_ATTEMPTS):
            nodes = self.candidates()
            if not nodes:
                break
            if len(nodes) == 1 and not self.avoided and len(self._addresses) == 1:
                break  # one node in all and nothing lost: nothing to choose (Ray's own placement is the same)
            asked = list(itertools.islice(itertools.cycle(nodes), len(makers)))
            actors = [
                make(NodeAffinitySchedulingStrategy(node, soft=False)) for make, node in zip(makers, asked, strict=True)
            ]
            answers = answering_nodes(actors, self.answer_timeout)
            if all(answers):
                return actors, [a for a in answers if a]
            self.avoid(node for node, answer in zip(asked, answers, strict=True) if answer is None)
            for actor in actors:
                ray.kill(actor)
        actors = [make("SPREAD") for make in makers]
        return actors, [str(node) for node in ray.get([a.node.remote() for a in actors])]


def answering_nodes(actors: list[Any], timeout: float) -> list[str | None]:
    """Each actor's node id, or None for one that is lost or did not answer within ``timeout`` seconds."""
    refs = [a.node.remote() for a in actors]
    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=timeout)
    done = set(ready)
    found: list[str | None] = []
    for ref in refs:
        try:
            found.append(str(ray.get(ref)) if ref in done else None)
        except ACTOR_LOST:
            found.append(None)
    return found
