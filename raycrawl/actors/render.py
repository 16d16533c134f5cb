"""The render pool (issue 35): actors that each drive a headless Chromium (adapters/browser.py), and the caller a
fetch task uses to hand them pages.

A render actor goes where the cluster has a ``browser`` resource (a node type of its own in ``cluster.yaml``, so
browsers never eat the machines that schedule): always on a cluster with an autoscaler (which adds such nodes for
the pool's actors), and on a static cluster when a node offers one; elsewhere, anywhere. It takes no CPU of Ray's
accounting: the page's fetch task waits for it holding its own. Ray restarts an actor whose process dies; the
page it held is tried once more on the next actor, then ends with the reason (the browser inside an actor is
replaced the same way by the actor itself).

The pool follows its own queue: the pages handed to it (rendering, or waiting for a browser) sampled every
second, ``core/demand.render_workers_wanted`` of them held over the last ``HOLD`` seconds, between
``render_workers`` and ``render_workers_max`` actors. An actor added is handed to fetch tasks once its browser
runs (on an autoscaling cluster, its pending ``browser`` resource is what brings a browser node); one let go is
retired first (pages sent to it after that go to another actor) and killed when it has nothing left.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

import ray
from ray.exceptions import GetTimeoutError

from raycrawl.actors.placement import ACTOR_LOST
from raycrawl.core.demand import RecentPeak, render_workers_wanted
from raycrawl.core.fetch_settings import FetchSettings
from raycrawl.core.render_jobs import RenderJob, RenderOutcome, RenderSettings
from raycrawl.errors import ServiceError

if TYPE_CHECKING:
    from raycrawl.adapters.browser import Renderer

BROWSER_RESOURCE = "browser"
READY_TIMEOUT = 120.0  # seconds for the pool's browsers to start (an autoscaler may have to add a node first)
SAMPLE_EVERY = 1.0  # seconds between samples of the actors' queues
HOLD = 30.0  # seconds the pool keeps an actor its queue no longer needs (a burst of shells may come back)
COUNTERS = ("rendered", "browser_restarts", "browsers_replaced", "browsers_launched")


@ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=0)
class RenderActor:
    def __init__(self, settings: RenderSettings, fetch: FetchSettings) -> None:
        # (imported here: every fetch worker imports this module for RenderCaller, and Playwright is heavy)
        from raycrawl.adapters.browser import BrowserUnavailable, Renderer

        self._renderer: Renderer | None = None
        self._problem: str | None = None
        self._pages = 0  # pages handed to this actor and not done (rendering, or waiting for a context)
        self._retired = False
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
        if self._retired:
            return RenderOutcome(reason="render actor retired", retired=True)
        if self._renderer is None:
            return RenderOutcome(reason=f"no browser: {self._problem}")
        self._pages += 1
        try:
            return await self._renderer.render(job)
        finally:
            self._pages -= 1

    def retire(self) -> None:
        """Take no more pages (the pool shrinks): those sent now are answered at once, to go to another actor."""
        self._retired = True

    def load(self) -> dict[str, int]:
        """Pages in hand now, and the counters so far."""
        r = self._renderer
        return {"pages": self._pages, "rendered": r.rendered if r else 0, "browser_restarts": r.restarts if r else 0,
                "browsers_replaced": r.replaced if r else 0, "browsers_launched": r.launched if r else 0}  # fmt: skip

    async def close(self) -> None:
        if self._renderer is not None:
            await self._renderer.close()


class RenderPool:
    """The crawl's render actors: the first ones started together before the crawl (or it does not start), more
    added and retired as the pages handed to them come and go, their counters kept, all closed at the end."""

    def __init__(
        self,
        settings: RenderSettings,
        fetch: FetchSettings,
        autoscaler: bool,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._settings, self._fetch, self._clock = settings, fetch, clock
        self.fewest = settings.render_workers
        self.most = max(settings.render_workers, settings.render_workers_max)
        on_browser_nodes = autoscaler or bool(ray.cluster_resources().get(BROWSER_RESOURCE))
        self.resources = {BROWSER_RESOURCE: 1} if on_browser_nodes else {}
        self.actors: list[Any] = []  # serving: handed to fetch tasks
        self._starting: dict[Any, tuple[Any, float]] = {}  # ready() ref -> (actor, since)
        self._retiring: list[Any] = []
        self._samples: tuple[list[Any], list[Any]] | None = None  # (actors, their load() refs) asked, not answered
        self._sampled = -float("inf")
        self._last: dict[Any, dict[str, int]] = {}  # each live actor's last load()
        self._gone = dict.fromkeys(COUNTERS, 0)  # the counters of actors retired and killed
        self._peak = RecentPeak(HOLD, clock)
        self.events = {"render_workers_added": 0, "render_workers_retired": 0, "render_workers_failed": 0}
        self.most_serving = 0
        first = [self._new_actor() for _ in range(self.fewest)]
        try:
            problems = ray.get([a.ready.remote() for a in first], timeout=READY_TIMEOUT)
        except GetTimeoutError:
            self._kill(first)
            raise ServiceError(
                f"render: the render pool did not start in {READY_TIMEOUT:g} s on {self._where()}"
            ) from None
        problem = next((p for p in problems if p), None)
        if problem is not None:
            self._kill(first)
            raise ServiceError(f"render: {problem}")
        self.actors = first
        self.most_serving = len(first)

    def _where(self) -> str:
        if not self.resources:
            return "the cluster"
        return (f"a node with a '{BROWSER_RESOURCE}' resource (with an autoscaler, a node type offering it: "
                "cluster.yaml's browser_worker)")  # fmt: skip

    def _new_actor(self) -> Any:
        return cast(Any, RenderActor).options(resources=self.resources).remote(self._settings, self._fetch)

    def follow(self) -> bool:
        """Called every round: take in actors whose browsers now run, sample the queues, grow or shrink. True when
        the actors handed to fetch tasks changed."""
        changed = self._take_started()
        if self._samples is not None:
            actors, refs = self._samples
            ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
            if len(ready) < len(refs):
                return changed
            self._samples = None
            try:
                loads: list[dict[str, int]] = ray.get(refs)
            except ACTOR_LOST:  # (Ray restarts it; the next sample counts it again)
                return changed
            self._last.update(zip(actors, loads, strict=True))
            changed |= self._resize()
        if self._clock() - self._sampled >= SAMPLE_EVERY:
            self._sampled = self._clock()
            actors = self.actors + self._retiring
            self._samples = (actors, [a.load.remote() for a in actors])
        return changed

    def _take_started(self) -> bool:
        if not self._starting:
            return False
        refs = list(self._starting)
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
        changed = False
        for ref in ready:
            actor, _ = self._starting.pop(ref)
            try:
                problem = ray.get(ref)
            except ACTOR_LOST as exc:
                problem = type(exc).__name__
            if problem:
                self.events["render_workers_failed"] += 1
                self._kill([actor])
            else:
                self.actors.append(actor)
                self.most_serving = max(self.most_serving, len(self.actors))
                changed = True
        now = self._clock()
        for ref, (actor, since) in list(self._starting.items()):
            if now - since > READY_TIMEOUT:  # (no node for it: asked again when the queue still wants it)
                del self._starting[ref]
                self.events["render_workers_failed"] += 1
                self._kill([actor])
        return changed

    def _resize(self) -> bool:
        for actor in [a for a in self._retiring if self._last.get(a, {}).get("pages", 1) == 0]:
            self._retiring.remove(actor)
            self._forget(actor)
            self._kill([actor])
        pages = sum(self._last.get(a, {}).get("pages", 0) for a in self.actors)
        wanted = self._peak.update(render_workers_wanted(pages, self._settings.render_pages, self.fewest, self.most))
        more = wanted - len(self.actors) - len(self._starting)
        for _ in range(max(0, more)):
            actor = self._new_actor()
            self._starting[actor.ready.remote()] = (actor, self._clock())
            self.events["render_workers_added"] += 1
        if wanted >= len(self.actors):
            return False
        leaving, self.actors = self.actors[wanted:], self.actors[:wanted]
        for actor in leaving:
            actor.retire.remote()
        self._retiring += leaving
        self.events["render_workers_retired"] += len(leaving)
        return True

    def _forget(self, actor: Any) -> None:
        last = self._last.pop(actor, {})
        for key in COUNTERS:
            self._gone[key] += last.get(key, 0)

    def stats(self) -> dict[str, int]:
        """The pool's counters as of the last samples, its actors now and at most, what it added and let go."""
        total = dict(self._gone)
        for last in self._last.values():
            for key in COUNTERS:
                total[key] += last.get(key, 0)
        return total | self.events | {"workers": len(self.actors), "workers_most": self.most_serving}

    def close(self) -> dict[str, int]:
        """The final counters (asked of every actor, a few seconds at most), then every actor closed and ended."""
        for ref, (actor, _) in list(self._starting.items()):
            del self._starting[ref]
            self._kill([actor])
        actors = self.actors + self._retiring
        refs = [a.load.remote() for a in actors]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=5.0)
        for actor, ref in zip(actors, refs, strict=True):
            if ref in ready:
                try:
                    self._last[actor] = ray.get(ref)
                except ACTOR_LOST:
                    continue
        final = self.stats()
        closing = [a.close.remote() for a in actors]
        ray.wait(closing, num_returns=len(closing), timeout=15.0)
        self._kill(actors)
        self.actors, self._retiring, self._last = [], [], {}
        return final

    def _kill(self, actors: Sequence[Any]) -> None:
        for actor in actors:
            ray.kill(actor)


class RenderCaller:
    """What a fetch task's fetcher awaits to have a page rendered: the next actor in turn; a page whose actor died
    under it is tried once more on another; one that finds an actor retired goes to the next."""

    def __init__(self, actors: Sequence[Any]) -> None:
        self._actors = list(actors)
        self._next = random.randrange(len(self._actors))

    async def __call__(self, job: RenderJob) -> RenderOutcome:
        lost = ""
        losses, turns = 0, 0
        while losses < 2 and turns < len(self._actors) + 2:
            turns += 1
            actor = self._actors[self._next % len(self._actors)]
            self._next += 1
            try:
                outcome: RenderOutcome = await actor.render.remote(job)
            except ACTOR_LOST as exc:
                losses += 1
                lost = type(exc).__name__
                # (the lost actor may have just sent one of the page's requests: the next waits the host's delay)
                job.not_before = max(job.not_before, time.time() + job.gap)
                continue
            if not outcome.retired:
                return outcome
        if losses < 2:
            return RenderOutcome(reason="every render actor this task knew was retired")
        return RenderOutcome(reason=f"render actor lost twice under the page ({lost})", restarts=2)
