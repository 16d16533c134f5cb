"""The Python API, for notebooks and scripts (the CLI is built on it).

from raycrawl import Crawl, CrawlConfig
crawl = Crawl(CrawlConfig(seeds=("https://example.com/",), out="out")).start()
crawl.status(); crawl.hosts(); summary = crawl.wait()

A crawl running anywhere on a cluster (started by ``ray job submit``, another notebook ...) is reached by its id:
crawl = Crawl.attach("my-crawl", address="ray://head:10001")  # the same object, every method working
Crawl.list(address=...)  # the crawls running there, with their state
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raycrawl.adapters.output import read_pages
from raycrawl.config import CrawlConfig, resumed_config
from raycrawl.core.addresses import address_allowed, is_ip_literal, parse_networks
from raycrawl.core.urls import canonicalize, host_key, hostname, redact_credentials, request_form
from raycrawl.errors import ConfigError, CrawlNotFound, SeedError, ServiceError
from raycrawl.output_location import check_output_shared, check_recrawl_source, prepare_out_dir, store_of
from raycrawl.ray_tuning import RAY_SYSTEM_CONFIG
from raycrawl.results import read_results

Progress = Callable[[dict[str, Any]], None]


@dataclass(frozen=True, slots=True)
class SeedProblem:
    source: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: not an http(s) URL: {redact_credentials(self.text)!r}"


def seed_urls(
    raw: Iterable[tuple[str, int, str]], tracking_params: tuple[str, ...]
) -> tuple[list[str], list[SeedProblem]]:
    """(source, line, text) seeds as they will be requested (``urls.request_form``: a seed, like a link, is sent
    as written), the first of each canonical URL kept, in order; and the ones that are not http(s) URLs."""
    seeds: list[str] = []
    kept: set[str] = set()
    problems: list[SeedProblem] = []
    for source, number, text in raw:
        canonical = canonicalize(text, tracking_params)
        requested = request_form(text) if canonical is not None else None
        if canonical is None or requested is None:
            problems.append(SeedProblem(source, number, text))
        elif canonical not in kept:
            kept.add(canonical)
            seeds.append(requested)
    return seeds, problems


def load_seeds(cfg: CrawlConfig) -> tuple[list[str], list[SeedProblem]]:
    """Canonical seeds from the config and the seeds file; malformed lines are returned, not raised."""
    raw: list[tuple[str, int, str]] = [("argument", i + 1, s) for i, s in enumerate(cfg.seeds)]
    if cfg.seeds_file:
        try:
            text = Path(cfg.seeds_file).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise SeedError(f"seeds_file: cannot read {cfg.seeds_file} ({exc.strerror})") from None
        for number, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if line and not line.startswith("#"):
                raw.append((cfg.seeds_file, number, line))
    seeds, problems = seed_urls(raw, cfg.tracking_params)
    if problems and cfg.strict:
        raise SeedError("; ".join(map(str, problems)))
    if not seeds and not cfg.resume and not cfg.recrawl:
        detail = f" ({problems[0]})" if problems else ""
        raise SeedError(f"no usable seed URL: give seeds as arguments or with --seeds-file{detail}")
    return seeds, problems


def check_seed_addresses(seeds: Iterable[str], cfg: CrawlConfig) -> None:
    """Seeds the address guard would refuse are a mistake to report now, with the flag that allows them -- not a
    crawl that ends at once with "robots.txt unreachable (BlockedAddress)". Checked without DNS (a lookup could
    hang on a machine without a resolver): IP literals, ``--resolve`` entries, and localhost names."""
    networks = parse_networks(cfg.allow_network)
    overrides = cfg.resolve_map()
    for url in seeds:
        host = hostname(host_key(url))
        address = overrides.get(host)
        if address is None and (host == "localhost" or host.endswith(".localhost")):
            address = "127.0.0.1"
        if address is None and is_ip_literal(host):
            address = host
        if address is not None and not address_allowed(address, cfg.allow_private_networks, networks):
            raise SeedError(
                f"seeds: {redact_credentials(url)} is on {address}, an address this crawl may not connect to "
                f"(loopback, private, link-local ...); allow it with --allow-private-networks "
                f"(allow_private_networks=True) or --allow-network {address}/32"
            )


def resume_config(cfg: CrawlConfig, named: Collection[str] | None = None) -> CrawlConfig:
    """The settings a ``--resume`` runs with: the crawl's own (saved in its checkpoint), with what the user named
    this time on top (``config.resumed_config``); a fixed setting changed is refused, before anything starts."""
    from raycrawl.actors.checkpoints import saved_state
    from raycrawl.adapters.snapshots import CorruptCheckpoint, StoreUnavailable

    store = store_of(cfg)
    try:
        state = saved_state(store) or {}
    except StoreUnavailable as exc:
        raise ServiceError(str(exc)) from None
    except (CorruptCheckpoint, ValueError, KeyError, OSError) as exc:
        raise ConfigError(f"resume: the checkpoint in {store.describe()} cannot be read ({exc})") from None
    # (checkpoints from before settings were saved hold only the seen-set's kind)
    saved = state.get("config") or ({"dedup": state["dedup"]} if "dedup" in state else {})
    return resumed_config(cfg, saved, named)


SINGLE_MACHINE_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


@contextlib.contextmanager
def loopback_only() -> Iterator[None]:
    """While our own Ray starts: Ray 2.60 swaps the 127.0.0.1 it is given for the machine's outward address, and
    its servers then listen on every interface. Its switch for single-machine Ray (``RAY_ENABLE_WINDOWS_OR_OSX_
    CLUSTER=0``) keeps 127.0.0.1: set for this process (Ray read it at import) and for the processes ``ray.init``
    starts (they inherit it), then put back, so that a later connection to a real cluster is not affected."""
    from ray._private import ray_constants

    saved_env, saved_flag = os.environ.get(SINGLE_MACHINE_SWITCH), ray_constants.ENABLE_RAY_CLUSTER
    os.environ[SINGLE_MACHINE_SWITCH] = "0"
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = saved_flag
        if saved_env is None:
            os.environ.pop(SINGLE_MACHINE_SWITCH, None)
        else:
            os.environ[SINGLE_MACHINE_SWITCH] = saved_env


def ensure_ray(address: str | None) -> None:
    import ray

    if ray.is_initialized():
        return
    options: dict[str, Any] = {}
    own = address is None and not os.environ.get("RAY_ADDRESS")
    if own:
        # A Ray of our own: keep it on loopback (anyone who reaches Ray's ports can run code).
        options["_node_ip_address"] = "127.0.0.1"
        options["_system_config"] = dict(RAY_SYSTEM_CONFIG)
    # Ray turns token authentication on for a new local cluster and says so on every run, as a WARNING: a line a
    # raycrawl user can do nothing about (it is the safe default). Only that logger, only while starting.
    auth_log = logging.getLogger("ray._private.authentication.authentication_token_setup")
    level = auth_log.level
    auth_log.setLevel(logging.ERROR)
    try:
        with loopback_only() if own else contextlib.nullcontext():
            ray.init(
                # "local": a Ray of our own even when another runs on this machine (a bare None would join the
                # machine's "current" cluster, whoever started it).
                address="local" if own else address,
                include_dashboard=False,
                logging_level="WARNING",
                log_to_driver=False,  # worker chatter would garble the progress line; errors come back as values
                **options,
            )
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = address or "a local Ray instance"
        raise ServiceError(f"cannot start or reach Ray at {where}: {exc}") from None
    finally:
        auth_log.setLevel(level)


def connect_ray(address: str | None) -> None:
    """Join the running Ray cluster at ``address`` (else RAY_ADDRESS, else the one this machine is part of) to reach
    a crawl there; never starts one."""
    import ray

    if ray.is_initialized():
        return
    target = address or os.environ.get("RAY_ADDRESS") or "auto"
    problem = _unreachable(target)
    if problem is not None:  # (ray.init would retry an address that does not answer for minutes)
        raise ServiceError(f"cannot reach a Ray cluster at {target}: {problem}")
    try:
        ray.init(address=target, namespace=None, logging_level="WARNING", log_to_driver=False)
    except Exception as exc:  # (ConnectionError, or Ray's own errors for an address it cannot use)
        raise ServiceError(f"cannot reach a Ray cluster at {target}: {_first_line(exc)}") from None


def _unreachable(target: str, timeout: float = 5.0) -> str | None:
    """Why nothing answers at a ``host:port`` (or ``ray://host:port``) Ray address, or None (or not such an
    address: Ray's own checks decide)."""
    import socket

    address = target.split("://", 1)[1] if "://" in target else target
    host, _, port = address.rstrip("/").rpartition(":")
    if not host or not port.isdigit():
        return None
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        return exc.strerror or str(exc) or type(exc).__name__
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _at(address: str | None) -> str:
    target = address or os.environ.get("RAY_ADDRESS")
    return f" at {target}" if target else ""


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
    """A crawl running on Ray, driven from this process."""

    def __init__(self, config: CrawlConfig, named: Collection[str] | None = None) -> None:
        """``named``: the settings the user gave (the CLI knows); with ``--resume`` only these override the crawl's
        saved settings. None: every setting that differs from its default counts as named."""
        self.config = config
        self._named = named
        self.seeds: list[str] = []
        self.seed_problems: list[SeedProblem] = []
        self.out_dir = ""
        self._actor: Any = None
        self._run_ref: Any = None
        self._summary: dict[str, Any] | None = None
        self._final_hosts: list[dict[str, Any]] = []  # host rows as the crawl ended (its actors are gone then)
        self.crawl_id = ""

    @classmethod
    def attach(cls, crawl_id: str, address: str | None = None) -> Crawl:
        """The crawl running under ``crawl_id`` on the Ray cluster at ``address`` (else RAY_ADDRESS, else the one
        this machine is part of), as ``start()`` returned it where it was started: every method works from here.
        ``wait()`` waits for it to end; it ends when it finishes or is stopped, not when this process does."""
        import ray
        from ray.exceptions import RayError

        from raycrawl.named import find

        connect_ray(address)
        actor = find(crawl_id)
        if actor is None:
            raise CrawlNotFound(f"no running crawl named {crawl_id!r} on the Ray cluster{_at(address)}")
        try:
            config, out_dir, _ = ray.get(actor.describe.remote(), timeout=60)
        except RayError:
            raise CrawlNotFound(f"the crawl {crawl_id!r} ended as it was being attached to") from None
        crawl = cls(config)
        crawl._actor, crawl.out_dir, crawl.crawl_id = actor, out_dir, crawl_id
        return crawl

    @property
    def attached(self) -> bool:
        """Reached by ``attach()``, not started here: the crawl's driver is elsewhere."""
        return self._actor is not None and self._run_ref is None

    def _ask(self, method: str, *args: Any) -> Any:
        """A call to the coordinator, waited for. An attached crawl that has ended says so (its actor is gone)."""
        import ray
        from ray.exceptions import RayActorError

        try:
            return ray.get(getattr(self._actor, method).remote(*args))
        except RayActorError:
            if not self.attached:
                raise
            raise CrawlNotFound(f"the crawl {self.crawl_id!r} has ended") from None

    def _ended(self) -> dict[str, Any] | None:
        """An attached crawl's summary once it has ended: from its coordinator while it is still there, else from
        stats.json in its output (None while it runs)."""
        import ray
        from ray.exceptions import RayActorError

        try:
            final = ray.get(self._actor.final.remote())
        except RayActorError:
            final = read_stats(self.out_dir, self.config.filesystem)
            if final is None:
                raise CrawlNotFound(
                    f"the crawl {self.crawl_id!r} has ended (its summary, {self.out_dir}/stats.json, is not readable"
                    " from here)"
                ) from None
        return dict(final) if final is not None else None

    def start(self) -> Crawl:
        """Validate seeds and output, start Ray if needed, and start the coordinator. Returns at once."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from raycrawl.actors.coordinator import CoordinatorActor
        from raycrawl.actors.settings import crawl_id_of
        from raycrawl.named import start_named

        self.seeds, self.seed_problems = load_seeds(self.config)
        self.out_dir = prepare_out_dir(self.config)
        if self.config.recrawl:
            check_recrawl_source(self.config)
        if self.config.resume:
            self.config = resume_config(self.config, self._named)
            self.seeds, self.seed_problems = load_seeds(self.config)  # (with the crawl's own tracking parameters)
        check_seed_addresses(self.seeds, self.config)
        ensure_ray(self.config.ray_address)
        check_output_shared(self.out_dir, self.config)
        # The coordinator buffers page records on its node's disk: keep it here, where --out was given.
        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        self.crawl_id = crawl_id_of(self.config, self.out_dir)
        # (named: Crawl.attach and the CLI find it by its id; raycrawl/named.py)
        self._actor = start_named(
            CoordinatorActor, self.crawl_id, {"scheduling_strategy": here}, self.config, self.seeds, self.out_dir
        )
        self._run_ref = self._actor.run.remote()
        return self

    def _require_started(self) -> None:
        if self._actor is None:
            raise RuntimeError("the crawl has not been started: call start() first")

    def status(self) -> dict[str, Any]:
        self._require_started()
        if self._summary is None and self.attached:
            try:
                status = dict(self._ask("status"))
            except CrawlNotFound:
                status = {"state": "finished"}
            if status.get("state") == "finished":
                self._summary = self._ended()
        if self._summary is not None:
            return {"state": "finished", **self._summary}
        return dict(self._ask("status"))

    def placement(self) -> dict[str, Any]:
        """Where the running crawl's actors are: ``{"coordinator": node, "shards": [node, ...], "partitions":
        [node, ...]}`` (Ray node ids; shard i and partition i in order)."""
        self._require_started()
        if self._summary is not None:
            raise RuntimeError("the crawl has ended: its actors are gone")
        return dict(self._ask("placement"))

    def host_rows(self) -> list[dict[str, Any]]:
        """Per-host state, one dict per host: queue, in flight, delay and why, wait, robots, paused, counts.
        (Attached to a crawl that has ended: the busiest hosts its summary lists.)"""
        self._require_started()
        if self._summary is None and self.attached:
            self.status()  # (an attached crawl that has ended: its summary is read now)
        if self._summary is not None:
            listed: list[dict[str, Any]] = self._summary.get("hosts", [])
            return list(self._final_hosts or listed)
        return list(self._ask("hosts"))

    def hosts(self) -> Any:
        """host_rows() as a pandas DataFrame indexed by host, busiest first."""
        import pandas as pd

        rows = sorted(self.host_rows(), key=lambda h: (-h["requests"], -h["queued"]))
        return pd.DataFrame(rows).set_index("host") if rows else pd.DataFrame()

    def add_seeds(self, urls: Iterable[str]) -> int:
        """Crawl these URLs too (as seeds: depth 0, their hosts join the scope). Returns how many were new to
        this call's list; malformed ones raise ValueError naming them (nothing is added then)."""
        self._require_started()
        if self.done():
            raise RuntimeError("the crawl has finished: start a new one (or resume this one) to add seeds")
        seeds, problems = seed_urls(
            (("add_seeds", i + 1, url) for i, url in enumerate(urls)), self.config.tracking_params
        )
        if problems:
            raise ValueError(f"not http(s) URLs: {[redact_credentials(p.text) for p in problems]!r}")
        self._ask("add_seeds", seeds)
        return len(seeds)

    def retry_errors(self, budget: bool = False) -> None:
        """Crawl again the URLs whose records ended in ``error`` (``budget``: ``out_of_budget`` too), with fresh
        attempts, after the checkpoint this takes next; their new records replace the old ones in the output.
        (For a crawl that has ended: ``--resume --retry-errors``, or ``resume=True, retry_errors=True``.)"""
        self._require_started()
        if self.done():
            raise RuntimeError("the crawl has finished: resume it with retry_errors=True to retry its errors")
        self._ask("retry_errors", budget)

    def pause(self, reason: str = "paused by operator") -> None:
        """Start no new requests (fetches under way finish); queued URLs wait for resume()."""
        self._require_started()
        self._ask("pause", reason)

    def resume(self) -> None:
        self._require_started()
        self._ask("resume")

    def pause_host(self, host: str, reason: str = "paused by operator") -> bool:
        """Stop sending to ``host`` (a netloc as in hosts()); its URLs stay queued. False if unknown."""
        return self._control("pause_host", host, reason)

    def resume_host(self, host: str) -> bool:
        return self._control("resume_host", host)

    def set_delay(self, host: str, seconds: float | None) -> bool:
        """Fix ``host``'s delay (None: back to the model: configured / robots / latency)."""
        if seconds is not None and not seconds >= 0:
            raise ValueError("seconds must be >= 0, or None")
        return self._control("set_delay", host, seconds)

    def _control(self, action: str, host: str, *args: Any) -> bool:
        self._require_started()
        return bool(self._ask("control_host", action, host, *args))

    def stop(self, reason: str = "stopped by request") -> None:
        """Stop leasing; in-flight fetches finish, a checkpoint is taken, and the crawl ends with its queue
        kept for a later ``--resume`` / ``CrawlConfig(resume=True)``. Then wait()."""
        self._require_started()
        if self._summary is None:
            self._ask("stop", reason)

    def done(self) -> bool:
        import ray

        self._require_started()
        if self.attached:
            return self.status().get("state") == "finished"
        return self._summary is not None or bool(ray.wait([self._run_ref], timeout=0)[0])

    def wait(
        self, timeout: float | None = None, progress: Progress | None = None, every: float = 0.5
    ) -> dict[str, Any]:
        """Block until the crawl ends (or ``timeout``); return its summary (stats.json's content)."""
        import ray

        self._require_started()
        if self._summary is not None:
            return self._summary
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.attached:  # (its driver waits for the run: here, the status says when it has ended)
            status = self.status()
            if self._summary is not None:
                return self._summary
            if progress is not None:
                progress(status)
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"the crawl did not finish within {timeout} s")
            time.sleep(every if deadline is None else max(0.0, min(every, deadline - time.monotonic())))
        while True:
            step = every if deadline is None else max(0.0, min(every, deadline - time.monotonic()))
            ready, _ = ray.wait([self._run_ref], timeout=step)
            if ready:
                summary = dict(ray.get(self._run_ref))
                self._final_hosts = list(ray.get(self._actor.hosts.remote()))
                self._summary = summary
                ray.kill(self._actor)
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
        self._require_started()
        return read_results(self.out_dir, self.config.filesystem)

    @staticmethod
    def list(address: str | None = None) -> list[dict[str, Any]]:
        """(Last in the class: its name would hide the built-in ``list`` from the annotations after it.)
        The crawls running on the Ray cluster at ``address``: ``crawl_id`` and status (state, pages ...) each."""
        from raycrawl.named import running

        connect_ray(address)
        return running()


def crawl(config: CrawlConfig, progress: Progress | None = None) -> dict[str, Any]:
    """Run a crawl to its end and return its summary."""
    return Crawl(config).start().wait(progress=progress)
