"""The coordinator as its callers see it (``Crawl``, the CLI's verbs, ``Crawl.list``): typed methods that never
show ``.remote()``, as ``ray.util.queue.Queue`` hides its actor. Every call to the coordinator, and every Ray
error it can raise, is here: a coordinator that is gone is ``CrawlNotFound``, once, for all of them.

Crawls are named actors in the ``raycrawl`` namespace, under their crawl id (``--crawl-id``, else the output's
name), so a notebook or the CLI anywhere that reaches the cluster finds one. A name is held while the crawl's
driver runs (the coordinator belongs to it: when a ``ray job`` ends, so does the name). Two crawls of one id
cannot run at once: they would write the same checkpoints.

Adding a command: a method on ``Coordinator`` (actors/coordinator.py) and its typed twin here; nothing else.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Sequence
from typing import Any

import ray
from ray.exceptions import GetTimeoutError, RayError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from raycrawl.actors import kept_summaries
from raycrawl.actors.coordinator import CoordinatorActor
from raycrawl.actors.placement import ACTOR_LOST
from raycrawl.config import CrawlConfig
from raycrawl.core.host_actions import HostAction
from raycrawl.errors import ConfigError, CrawlNotFound, RaycrawlError

NAMESPACE = "raycrawl"
NAME_RELEASE_S = 10.0  # how long a finished crawl's name may take to be let go (its actor being killed)
LIST_TIMEOUT_S = 10.0
ATTACH_TIMEOUT_S = 60.0
FINAL_POLL_S = 0.1  # how often the driver asks whether the run has ended


class CoordinatorClient:
    def __init__(self, actor: Any, crawl_id: str) -> None:
        self._actor = actor
        self.crawl_id = crawl_id
        self._drives = False  # whether this process started the crawl and waits for its end (not detached)

    # --- finding and starting ------------------------------------------------------------------------

    @classmethod
    def start(
        cls, crawl_id: str, cfg: CrawlConfig, seeds: Sequence[str], out_dir: str, detach: bool = False
    ) -> CoordinatorClient:
        """A new crawl's coordinator, on this node (it buffers page records on its disk: keep it where ``--out``
        was given), under the crawl's name, running. A finished crawl of that name still holding it (its driver
        has not let it go yet) is waited for; a running one is an error. ``detach``: owned by no driver -- it runs
        to its end whatever happens to this process, and is then reached by its id only (``drives`` is False)."""
        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        deadline = time.monotonic() + NAME_RELEASE_S
        while True:
            try:
                options = {"name": crawl_id, "namespace": NAMESPACE, "scheduling_strategy": here}
                if detach:
                    options["lifetime"] = "detached"
                actor = CoordinatorActor.options(**options).remote(cfg, seeds, out_dir, uuid.uuid4().hex[:8], detach)
                break
            except ValueError:  # the name is taken
                if not _ending(crawl_id) or time.monotonic() > deadline:
                    raise ConfigError(
                        f"crawl_id: a crawl named {crawl_id!r} is already running on this Ray cluster (see "
                        f"`raycrawl status --crawl-id {crawl_id}`); stop it first, or give this one another --crawl-id"
                    ) from None
                time.sleep(0.2)
        client = cls(actor, crawl_id)
        client._drives = not detach
        if detach:
            kept_summaries.forget(crawl_id)  # (an earlier detached crawl's of this id: not this one's)
        try:  # (returns once the coordinator is made and runs its loop on a thread of its own)
            ray.get(actor.start_run.remote(detach))
        except ACTOR_LOST as exc:
            raise RaycrawlError(f"the crawl {crawl_id!r} did not start: {str(exc).strip()[:500]}") from None
        return client

    @classmethod
    def ended(cls, crawl_id: str) -> CoordinatorClient:
        """The client of a detached crawl that has ended: every command says so (``CrawlNotFound``)."""
        return cls(_Ended(crawl_id), crawl_id)

    @classmethod
    def find(cls, crawl_id: str) -> CoordinatorClient | None:
        """The running crawl of that id on the cluster this process has joined, or None."""
        actor = _named(crawl_id)
        return None if actor is None else cls(actor, crawl_id)

    @staticmethod
    def running() -> list[dict[str, Any]]:
        """Every crawl on the cluster: its id and its status (asked of all at once)."""
        names = sorted(
            entry["name"]
            for entry in ray.util.list_named_actors(all_namespaces=True)
            if entry["namespace"] == NAMESPACE
        )
        actors = [(name, _named(name)) for name in names]
        refs = [(name, actor.status.remote()) for name, actor in actors if actor is not None]
        ready, _ = ray.wait([ref for _, ref in refs], num_returns=len(refs), timeout=LIST_TIMEOUT_S)
        answered = set(ready)
        crawls = []
        for name, ref in refs:
            status: dict[str, Any] = {"state": "not answering"}
            if ref in answered:
                try:
                    status = dict(ray.get(ref))
                except RayError:
                    continue  # (gone while we asked)
            crawls.append({"crawl_id": name, **status})
        return crawls

    # --- the run (only the driver that started it holds it) ------------------------------------------

    @property
    def drives(self) -> bool:
        """Whether this process started the crawl (and so waits for its run's end, and lets its actor go)."""
        return self._drives

    def run_ended(self, timeout: float) -> dict[str, Any] | None:
        """The run's summary once it has ended (waiting up to ``timeout`` seconds for it), else None. The run's
        own errors come as they are (the CLI says what they mean)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                summary = ray.get(self._actor.final.remote())
            except ACTOR_LOST as exc:
                raise RaycrawlError(f"the crawl {self.crawl_id!r} lost its coordinator: {type(exc).__name__}") from None
            left = deadline - time.monotonic()
            if summary is not None or left <= 0:
                return dict(summary) if summary is not None else None
            time.sleep(min(FINAL_POLL_S, left))

    def end(self) -> None:
        """Let the crawl's actors (and so its name) go: its run has ended."""
        # (if it cannot, its shards and partitions end by themselves once it is gone: actors/crew_registry.py)
        with contextlib.suppress(RayError, GetTimeoutError):
            ray.get(self._actor.end.remote(), timeout=ATTACH_TIMEOUT_S)
        ray.kill(self._actor)

    # --- the crawl's commands ------------------------------------------------------------------------

    def describe(self) -> tuple[CrawlConfig, str, str]:
        """(settings, output location, crawl id)."""
        config, out_dir, crawl_id = self._call(self._actor.describe.remote(), ATTACH_TIMEOUT_S)
        return config, str(out_dir), str(crawl_id)

    def status(self) -> dict[str, Any]:
        return dict(self._call(self._actor.status.remote()))

    def final(self) -> dict[str, Any] | None:
        """The crawl's summary once it has ended (None while it runs)."""
        final = self._call(self._actor.final.remote())
        return dict(final) if final is not None else None

    def hosts(self) -> list[dict[str, Any]]:
        return list(self._call(self._actor.hosts.remote()))

    def placement(self) -> dict[str, Any]:
        return dict(self._call(self._actor.placement.remote()))

    def pause(self, reason: str) -> None:
        self._call(self._actor.pause.remote(reason))

    def unpause(self) -> None:
        self._call(self._actor.unpause.remote())

    def stop(self, reason: str) -> None:
        self._call(self._actor.stop.remote(reason))

    def add_seeds(self, urls: Sequence[str]) -> None:
        self._call(self._actor.add_seeds.remote(list(urls)))

    def retry_errors(self, budget: bool) -> None:
        self._call(self._actor.retry_errors.remote(budget))

    def checkpoint_now(self) -> None:
        self._call(self._actor.checkpoint_now.remote())

    def control_host(self, action: HostAction) -> bool:
        return bool(self._call(self._actor.control_host.remote(action)))

    def _call(self, ref: Any, timeout: float | None = None) -> Any:
        try:
            return ray.get(ref, timeout=timeout)
        except ACTOR_LOST:
            raise CrawlNotFound(f"the crawl {self.crawl_id!r} has ended") from None
        except GetTimeoutError:
            raise CrawlNotFound(f"the crawl {self.crawl_id!r} does not answer (waited {timeout:.0f} s)") from None


class _Ended:
    """Stands for the coordinator of a crawl that has ended: any method asked of it is the error a call to a gone
    coordinator gives."""

    def __init__(self, crawl_id: str) -> None:
        self.crawl_id = crawl_id

    def __getattr__(self, name: str) -> Any:
        raise CrawlNotFound(f"the crawl {self.crawl_id!r} has ended")


def _named(crawl_id: str) -> Any | None:
    try:
        return ray.get_actor(crawl_id, namespace=NAMESPACE)
    except ValueError:  # (Ray: "Failed to look up actor with name ...")
        return None


def _ending(crawl_id: str) -> bool:
    """Whether the crawl holding the name has finished (or died) and only has to let the name go."""
    actor = _named(crawl_id)
    if actor is None:
        return True
    try:
        return bool(ray.get(actor.status.remote(), timeout=5.0).get("state") == "finished")
    except (RayError, GetTimeoutError):
        return True
