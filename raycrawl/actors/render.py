"""The render pool (issue 35): actors that each drive a headless Chromium (adapters/browser.py), and the caller a
fetch task uses to hand them pages.

A render actor goes where the cluster has a ``browser`` resource (a node type of its own in ``cluster.yaml``, so
browsers never eat the machines that schedule); on a cluster without one, anywhere. It takes no CPU of Ray's
accounting: the page's fetch task waits for it holding its own. Ray restarts an actor whose process dies; the
page it held is tried once more on the next actor, then ends with the reason (the browser inside an actor is
replaced the same way by the actor itself).
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from typing import Any, cast

import ray
from ray.exceptions import GetTimeoutError

from raycrawl.actors.placement import ACTOR_LOST
from raycrawl.adapters.browser import BrowserUnavailable, Renderer
from raycrawl.core.fetch_settings import FetchSettings
from raycrawl.core.render_jobs import RenderJob, RenderOutcome, RenderSettings
from raycrawl.errors import ServiceError

BROWSER_RESOURCE = "browser"
READY_TIMEOUT = 120.0  # seconds for the pool's browsers to start (an autoscaler may have to add a node first)


@ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=0)
class RenderActor:
    def __init__(self, settings: RenderSettings, fetch: FetchSettings) -> None:
        self._renderer: Renderer | None = None
        self._problem: str | None = None
        try:
            self._renderer = Renderer(settings, fetch)
        except BrowserUnavailable as exc:
            self._problem = str(exc)

    async def ready(self) -> str | None:
        """Start the browser: None when it runs, else why not."""
        if self._renderer is None:
            return self._problem
        try:
            await self._renderer.start()
        except Exception as exc:  # (Playwright's launch errors: a browser that cannot run here)
            return f"Chromium did not start: {str(exc).strip().splitlines()[0][:300]}"
        return None

    async def render(self, job: RenderJob) -> RenderOutcome:
        if self._renderer is None:
            return RenderOutcome(reason=f"no browser: {self._problem}")
        return await self._renderer.render(job)

    def stats(self) -> dict[str, int]:
        r = self._renderer
        return {"rendered": r.rendered if r else 0, "browser_restarts": r.restarts if r else 0,
                "browsers_replaced": r.replaced if r else 0, "browsers_launched": r.launched if r else 0}  # fmt: skip

    async def close(self) -> None:
        if self._renderer is not None:
            await self._renderer.close()


class RenderPool:
    """The crawl's render actors: made and started together, asked for their counters, closed at the end."""

    def __init__(self, settings: RenderSettings, fetch: FetchSettings) -> None:
        resources = {BROWSER_RESOURCE: 1} if ray.cluster_resources().get(BROWSER_RESOURCE) else {}
        actor = cast(Any, RenderActor).options(resources=resources)
        self.actors: list[Any] = [actor.remote(settings, fetch) for _ in range(settings.render_workers)]
        try:
            problems = ray.get([a.ready.remote() for a in self.actors], timeout=READY_TIMEOUT)
        except GetTimeoutError:
            self.kill()
            where = f"a node with a '{BROWSER_RESOURCE}' resource" if resources else "the cluster"
            raise ServiceError(f"render: the render pool did not start in {READY_TIMEOUT:g} s on {where}") from None
        problem = next((p for p in problems if p), None)
        if problem is not None:
            self.kill()
            raise ServiceError(f"render: {problem}")

    def stats(self) -> dict[str, int]:
        """The pool's counters, summed (actors that do not answer are left out)."""
        total = {"rendered": 0, "browser_restarts": 0, "browsers_replaced": 0, "browsers_launched": 0}
        refs = [a.stats.remote() for a in self.actors]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=5.0)
        for ref in ready:
            try:
                for key, value in ray.get(ref).items():
                    if key in total:
                        total[key] += value
            except ACTOR_LOST:
                continue
        return total

    def close(self) -> None:
        refs = [a.close.remote() for a in self.actors]
        ray.wait(refs, num_returns=len(refs), timeout=15.0)
        self.kill()

    def kill(self) -> None:
        for actor in self.actors:
            ray.kill(actor)


class RenderCaller:
    """What a fetch task's fetcher awaits to have a page rendered: the next actor in turn; a page whose actor died
    under it is tried once more on another."""

    def __init__(self, actors: Sequence[Any]) -> None:
        self._actors = list(actors)
        self._next = random.randrange(len(self._actors))

    async def __call__(self, job: RenderJob) -> RenderOutcome:
        lost = ""
        for _ in range(2):
            actor = self._actors[self._next % len(self._actors)]
            self._next += 1
            try:
                outcome: RenderOutcome = await actor.render.remote(job)
                return outcome
            except ACTOR_LOST as exc:
                lost = type(exc).__name__
                # (the lost actor may have just sent one of the page's requests: the next waits the host's delay)
                job.not_before = max(job.not_before, time.time() + job.gap)
        return RenderOutcome(reason=f"render actor lost twice under the page ({lost})", restarts=2)
