"""The Python API, for notebooks and scripts (the CLI is built on it): ``Crawl``, a handle on one crawl.

from raycrawl import Crawl, CrawlConfig
crawl = Crawl(CrawlConfig(seeds=("https://example.com/",), out="out")).start()
crawl.status(); crawl.hosts(); summary = crawl.wait()

A crawl running anywhere on a cluster (started by ``ray job submit``, another notebook ...) is reached by its id:
crawl = Crawl.attach("my-crawl", address="ray://head:10001")  # the same object, every method working
Crawl.list(address=...)  # the crawls running there, with their state

Seeds are read in seeds.py, Ray is started or joined in ray_runtime.py, and every call to the running crawl goes
through its coordinator's client (actors/coordinator_client.py).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Collection, Iterable
from typing import TYPE_CHECKING, Any

from raycrawl.adapters.output import read_pages
from raycrawl.config import CrawlConfig, resumed_config
from raycrawl.core.host_actions import HostAction, PauseHost, ResumeHost, SetDelay
from raycrawl.core.urls import redact_credentials
from raycrawl.errors import ConfigError, CrawlNotFound, ServiceError
from raycrawl.output_location import check_output_shared, check_recrawl_source, prepare_out_dir, store_of
from raycrawl.proxies import proxy_plan
from raycrawl.ray_runtime import check_outlives_this_process, connect_ray, ensure_ray, where
from raycrawl.results import read_items, read_results
from raycrawl.seeds import SeedProblem, check_seed_addresses, load_seeds, seed_urls

if TYPE_CHECKING:
    from raycrawl.actors.coordinator_client import CoordinatorClient

Progress = Callable[[dict[str, Any]], None]


def resume_config(cfg: CrawlConfig, named: Collection[str] | None = None) -> CrawlConfig:
    """The settings a ``--resume`` runs with: the crawl's own (saved in its checkpoint), with what the user named
    this time on top (``config.resumed_config``); a fixed setting changed is refused, before anything starts."""
    from raycrawl.actors.checkpoints import saved_state
    from raycrawl.adapters.snapshots import CorruptCheckpoint, StoreUnavailable

    store = store_of(cfg)
    try:
        state = saved_state(store)
    except StoreUnavailable as exc:
        raise ServiceError(str(exc)) from None
    except (CorruptCheckpoint, ValueError, KeyError, OSError) as exc:
        raise ConfigError(f"resume: the checkpoint in {store.describe()} cannot be read ({exc})") from None
    return resumed_config(cfg, state.saved_settings if state is not None else {}, named)


def read_stats(out_dir: str, filesystem: Any = None) -> dict[str, Any] | None:
    """A crawl's stats.json (its summary, final once it has ended), or None if it cannot be read from here."""
    import json

    from raycrawl.adapters.storage import StorageError, resolve

    try:
        data = resolve(out_dir, filesystem).read("stats.json")
        return dict(json.loads(data)) if data else None
    except (StorageError, OSError, ValueError):
        return None


class Crawl:
    """A crawl running on Ray, driven from this process (started here, or attached to by its id)."""

    def __init__(self, config: CrawlConfig, named: Collection[str] | None = None) -> None:
        """``named``: the settings the user gave (the CLI knows); with ``--resume`` only these override the crawl's
        saved settings. None: every setting that differs from its default counts as named."""
        self.config = config
        self._named = named
        self.seeds: list[str] = []
        self.seed_problems: list[SeedProblem] = []
        self.out_dir = ""
        self.crawl_id = ""
        self._client: CoordinatorClient | None = None
        self._summary: dict[str, Any] | None = None
        self._final_hosts: list[dict[str, Any]] = []  # host rows as the crawl ended (its actors are gone then)

    @classmethod
    def attach(cls, crawl_id: str, address: str | None = None) -> Crawl:
        """The crawl running under ``crawl_id`` on the Ray cluster at ``address`` (else RAY_ADDRESS, else the one
        this machine is part of), as ``start()`` returned it where it was started: every method works from here.
        ``wait()`` waits for it to end; it ends when it finishes or is stopped, not when this process does."""
        from raycrawl.actors.coordinator_client import CoordinatorClient

        connect_ray(address)
        client = CoordinatorClient.find(crawl_id)
        if client is None:
            return cls._ended_detached(crawl_id, address)
        try:
            config, out_dir, _ = client.describe()
        except CrawlNotFound:
            raise CrawlNotFound(f"the crawl {crawl_id!r} ended as it was being attached to") from None
        crawl = cls(config)
        crawl._client, crawl.out_dir, crawl.crawl_id = client, out_dir, crawl_id
        return crawl

    @classmethod
    def _ended_detached(cls, crawl_id: str, address: str | None) -> Crawl:
        """A detached crawl that has ended, as its summary on the cluster says (actors/kept_summaries.py)."""
        from raycrawl.actors import kept_summaries
        from raycrawl.actors.coordinator_client import CoordinatorClient

        summary = kept_summaries.kept(crawl_id)
        if summary is None:
            raise CrawlNotFound(f"no running crawl named {crawl_id!r} on the Ray cluster{where(address)}")
        crawl = cls(CrawlConfig(crawl_id=crawl_id))
        crawl._client, crawl.out_dir, crawl.crawl_id = CoordinatorClient.ended(crawl_id), summary["out_dir"], crawl_id
        crawl._summary = summary
        return crawl

    @property
    def attached(self) -> bool:
        """Reached by ``attach()``, not started here: the crawl's driver is elsewhere."""
        return self._client is not None and not self._client.drives

    def start(self, detach: bool | None = None) -> Crawl:
        """Validate seeds and output, start Ray if needed, and start the coordinator. Returns at once.
        ``detach`` (default: the config's): the crawl is owned by no driver and runs to its end whatever happens
        to this process; it needs a Ray cluster that outlives it (``ray_address``). Reach it by its id
        (``Crawl.attach``), which this object then does too."""
        from raycrawl.actors.coordinator_client import CoordinatorClient
        from raycrawl.actors.settings import crawl_id_of

        self.seeds, self.seed_problems = load_seeds(self.config)
        self.out_dir = prepare_out_dir(self.config)
        if self.config.recrawl:
            check_recrawl_source(self.config)
        if self.config.resume:
            self.config = resume_config(self.config, self._named)
            self.seeds, self.seed_problems = load_seeds(self.config)  # (with the crawl's own tracking parameters)
        check_seed_addresses(self.seeds, self.config)
        egress = proxy_plan(self.config)  # (credentials from this process's environment: checked before Ray starts)
        detach = self.config.detach if detach is None else detach
        if detach:
            check_outlives_this_process(self.config.ray_address)
        ensure_ray(self.config.ray_address)
        check_output_shared(self.out_dir, self.config)
        self.crawl_id = crawl_id_of(self.config, self.out_dir)
        config = self.config.replace(egress=egress)
        self._client = CoordinatorClient.start(self.crawl_id, config, self.seeds, self.out_dir, detach)
        return self

    def _running(self) -> CoordinatorClient:
        """The client of a crawl that was started (or attached to)."""
        if self._client is None:
            raise RuntimeError("the crawl has not been started: call start() first")
        return self._client

    @property
    def coordinator(self) -> CoordinatorClient:
        """The running crawl's coordinator, as its typed client: every command it takes, including those this
        class has no shortcut for (a new command is reachable here as soon as the client has it)."""
        return self._running()

    def status(self) -> dict[str, Any]:
        client = self._running()
        if self._summary is None and self.attached:
            try:
                status = client.status()
            except CrawlNotFound:
                status = {"state": "finished"}
            if status.get("state") == "finished":
                self._summary = self._ended(client)
        if self._summary is not None:
            return {"state": "finished", **self._summary}
        return client.status()

    def _ended(self, client: CoordinatorClient) -> dict[str, Any] | None:
        """An attached crawl's summary once it has ended: from its coordinator while it is still there, else from
        stats.json in its output (None while it runs)."""
        from raycrawl.actors import kept_summaries

        try:
            return client.final()
        except CrawlNotFound:
            final = kept_summaries.kept(self.crawl_id) or read_stats(self.out_dir, self.config.filesystem)
            if final is None:
                raise CrawlNotFound(
                    f"the crawl {self.crawl_id!r} has ended (its summary, {self.out_dir}/stats.json, is not readable"
                    " from here)"
                ) from None
            return final

    def placement(self) -> dict[str, Any]:
        """Where the running crawl's actors are: ``{"coordinator": node, "shards": [node, ...], "partitions":
        [node, ...]}`` (Ray node ids; shard i and partition i in order)."""
        client = self._running()
        if self._summary is not None:
            raise RuntimeError("the crawl has ended: its actors are gone")
        return client.placement()

    def host_rows(self) -> list[dict[str, Any]]:
        """Per-host state, one dict per host: queue, in flight, delay and why, wait, robots, paused, counts.
        (Attached to a crawl that has ended: the busiest hosts its summary lists.)"""
        client = self._running()
        if self._summary is None and self.attached:
            self.status()  # (an attached crawl that has ended: its summary is read now)
        if self._summary is not None:
            listed: list[dict[str, Any]] = self._summary.get("hosts", [])
            return list(self._final_hosts or listed)
        return client.hosts()

    def hosts(self) -> Any:
        """host_rows() as a pandas DataFrame indexed by host, busiest first."""
        import pandas as pd

        rows = sorted(self.host_rows(), key=lambda h: (-h["requests"], -h["queued"]))
        return pd.DataFrame(rows).set_index("host") if rows else pd.DataFrame()

    def add_seeds(self, urls: Iterable[str]) -> int:
        """Crawl these URLs too (as seeds: depth 0, their hosts join the scope). Returns how many were new to
        this call's list; malformed ones raise ValueError naming them (nothing is added then)."""
        client = self._running()
        if self.done():
            raise RuntimeError("the crawl has finished: start a new one (or resume this one) to add seeds")
        seeds, problems = seed_urls(
            (("add_seeds", i + 1, url) for i, url in enumerate(urls)), self.config.tracking_params
        )
        if problems:
            raise ValueError(f"not http(s) URLs: {[redact_credentials(p.text) for p in problems]!r}")
        client.add_seeds(seeds)
        return len(seeds)

    def retry_errors(self, budget: bool = False) -> None:
        """Crawl again the URLs whose records ended in ``error`` (``budget``: ``out_of_budget`` too), with fresh
        attempts, after the checkpoint this takes next; their new records replace the old ones in the output.
        (For a crawl that has ended: ``--resume --retry-errors``, or ``resume=True, retry_errors=True``.)"""
        client = self._running()
        if self.done():
            raise RuntimeError("the crawl has finished: resume it with retry_errors=True to retry its errors")
        client.retry_errors(budget)

    def pause(self, reason: str = "paused by operator") -> None:
        """Start no new requests (fetches under way finish); queued URLs wait for unpause()."""
        self._running().pause(reason)

    def unpause(self) -> None:
        """Undo pause()."""
        self._running().unpause()

    def resume(self) -> None:
        """Deprecated: unpause(). ("Resume" is a crawl restarted from its checkpoint: ``CrawlConfig(resume=True)``.)"""
        warnings.warn("Crawl.resume() is now Crawl.unpause()", DeprecationWarning, stacklevel=2)
        self.unpause()

    def pause_host(self, host: str, reason: str = "paused by operator") -> bool:
        """Stop sending to ``host`` (a netloc as in hosts()); its URLs stay queued. False if unknown."""
        return self.control_host(PauseHost(host, reason))

    def resume_host(self, host: str) -> bool:
        return self.control_host(ResumeHost(host))

    def set_delay(self, host: str, seconds: float | None) -> bool:
        """Fix ``host``'s delay (None: back to the model: configured / robots / latency)."""
        return self.control_host(SetDelay(host, seconds))

    def control_host(self, action: HostAction) -> bool:
        """An action on one host (``PauseHost``, ``ResumeHost``, ``SetDelay``); False if the crawl has no such
        host."""
        return self._running().control_host(action)

    def stop(self, reason: str = "stopped by request") -> None:
        """Stop leasing; in-flight fetches finish, a checkpoint is taken, and the crawl ends with its queue
        kept for a later ``--resume`` / ``CrawlConfig(resume=True)``. Then wait()."""
        client = self._running()
        if self._summary is None:
            client.stop(reason)

    def done(self) -> bool:
        self._running()
        return self._summary is not None or self._ended_within(0.0)

    def _ended_within(self, seconds: float) -> bool:
        """Whether the crawl has ended, waiting up to ``seconds`` for it; its summary is kept once it has."""
        client = self._running()
        if self._summary is not None:
            return True
        if self.attached:  # (its driver waits for the run: here, the status says when it has ended)
            self.status()
            if self._summary is not None:  # (finished; or, for a detached crawl, failed)
                return True
            time.sleep(seconds)
            return False
        summary = client.run_ended(seconds)
        if summary is None:
            return False
        self._final_hosts = client.hosts()
        self._summary = summary
        client.end()
        return True

    def wait(
        self, timeout: float | None = None, progress: Progress | None = None, every: float = 0.5
    ) -> dict[str, Any]:
        """Block until the crawl ends (or ``timeout``); return its summary (stats.json's content)."""
        self._running()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            step = every if deadline is None else max(0.0, min(every, deadline - time.monotonic()))
            if self._ended_within(step) and self._summary is not None:
                return self._summary
            if progress is not None:
                progress(self.status())
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"the crawl did not finish within {timeout} s")

    def records(self) -> list[dict[str, Any]]:
        """The committed records (as of the last checkpoint; all of them once the crawl ended), as dicts."""
        return read_pages(self.out_dir, self.config.filesystem)

    def results(self) -> Any:
        """The committed records as a lazy Ray Dataset read from the output's parts in Ray tasks, never through
        this process (``.to_pandas()``, ``.filter()``, ``.write_parquet()``), with integer status and timings and
        ``fetched_at`` as a UTC timestamp. Works while the crawl runs (up to its last checkpoint), and after."""
        self._running()
        return read_results(self.out_dir, self.config.filesystem)

    def items(self, rejected: bool = False) -> Any:
        """The committed items (with an extractor) as a lazy Ray Dataset with their columns (results.read_items);
        ``rejected``: the rejected and quarantined pages' items, with their reasons."""
        self._running()
        return read_items(self.out_dir, self.config.filesystem, rejected)

    @staticmethod
    def list(address: str | None = None) -> list[dict[str, Any]]:
        """(Last in the class: its name would hide the built-in ``list`` from the annotations after it.)
        The crawls running on the Ray cluster at ``address``: ``crawl_id`` and status (state, pages ...) each."""
        from raycrawl.actors.coordinator_client import CoordinatorClient

        connect_ray(address)
        return CoordinatorClient.running()


def crawl(config: CrawlConfig, progress: Progress | None = None) -> dict[str, Any]:
    """Run a crawl to its end and return its summary."""
    return Crawl(config).start().wait(progress=progress)
