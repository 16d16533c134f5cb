"""Where a crawl's output goes, checked before anything starts: the location resolved (a directory or a URI),
written to once, matched against the checkpoint store (--resume, --fresh), and -- for a local directory on a
cluster -- seen by every node that will fetch."""

from __future__ import annotations

import os
import time
from pathlib import Path

from raycrawl.adapters.snapshots import SnapshotStore
from raycrawl.adapters.storage import Storage
from raycrawl.config import CrawlConfig
from raycrawl.errors import ConfigError, ServiceError


def prepare_out_dir(cfg: CrawlConfig) -> str:
    """The output location (an absolute directory, or the URI as given), after checking it against the
    checkpoint store and that it can be written.

    A location (or crawl id) that already holds a crawl is refused unless --resume (continue it) or --fresh
    (replace it). Redis that cannot be reached with --redis-url, or storage that cannot be written (no such
    bucket, no credentials), is a one-line error here, before anything runs.
    """
    from raycrawl.adapters.output import clear_output, has_output
    from raycrawl.adapters.snapshots import StoreUnavailable
    from raycrawl.adapters.storage import StorageError

    storage = storage_of(cfg)
    if storage.local and cfg.filesystem is None:
        _check_writable(Path(storage.root))
    store = store_of(cfg, storage)
    try:
        checkpoint = store.current_id()
        existing = has_output(storage)
        if cfg.resume:
            if checkpoint is None:
                raise ConfigError(f"resume: no checkpoint to resume in {store.describe()}")
        elif checkpoint is not None or existing:
            if not cfg.fresh:
                raise ConfigError(
                    f"out: {storage.where} already holds a crawl ({store.describe()}); "
                    "--resume (resume=True) to continue it, or --fresh (fresh=True) to replace it"
                )
            store.clear()
            clear_output(storage)
        storage.put(PROBE_FILE, b"raycrawl can write here\n")  # (no such bucket, no credentials: said now)
        storage.delete([PROBE_FILE])
    except StoreUnavailable as exc:
        raise ServiceError(str(exc)) from None
    except StorageError as exc:
        raise ConfigError(f"out: {exc}", "out") from None
    return storage.root if storage.local and cfg.filesystem is None else cfg.out


PROBE_FILE = ".raycrawl-write-check"


def storage_of(cfg: CrawlConfig) -> Storage:
    from raycrawl.adapters.storage import StorageError, resolve

    try:
        return resolve(cfg.out, cfg.filesystem)
    except StorageError as exc:
        raise ConfigError(str(exc), "out") from None


def check_recrawl_source(cfg: CrawlConfig) -> None:
    """--recrawl names an earlier crawl's output, with committed records to read (a one-line error if not)."""
    from raycrawl.adapters.output import COMMITTED_FILE
    from raycrawl.adapters.storage import StorageError, resolve

    assert cfg.recrawl is not None
    try:
        source = resolve(cfg.recrawl, cfg.filesystem)
        if not source.exists(COMMITTED_FILE):
            raise ConfigError(f"recrawl: {source.where} holds no crawl output ({COMMITTED_FILE} is missing)", "recrawl")
    except StorageError as exc:
        raise ConfigError(f"recrawl: {exc}", "recrawl") from None


def check_output_shared(out: str, cfg: CrawlConfig) -> None:
    """A local output directory on a cluster of several nodes: every node with CPUs must see it (one filesystem,
    e.g. NFS), or WARC parts would stay scattered on nodes' own disks. Refused at start, with the fix."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    storage = storage_of(cfg)
    if not storage.local:
        return
    here = ray.get_runtime_context().get_node_id()
    alive = [n for n in ray.nodes() if n["Alive"]]
    others = [n["NodeID"] for n in alive if n["NodeID"] != here and n["Resources"].get("CPU")]
    here_cpus = sum(n["Resources"].get("CPU", 0) for n in alive if n["NodeID"] == here)
    if not others and here_cpus:
        return
    if not others:  # (a head without CPUs for tasks: every fetch will run on a node the autoscaler adds)
        raise ConfigError(
            f"out: {out} is a directory on this machine, which runs no fetch tasks (no CPUs): the nodes that will "
            "fetch cannot write there. " + SHARED_FIX,
            "out",
        )
    sees_file = ray.remote(num_cpus=0, max_retries=0)(_sees_file)
    marker = f".raycrawl-shared-{os.getpid()}-{time.time_ns()}"
    storage.put(marker, b"")
    try:
        probes = [
            sees_file.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote(
                os.path.join(storage.root, marker)
            )
            for node in others
        ]
        ready, _ = ray.wait(probes, num_returns=len(probes), timeout=SHARED_CHECK_TIMEOUT)
        blind = len(others) - sum(1 for ref in ready if ray.get(ref))
    finally:
        storage.delete([marker])
    if blind:
        raise ConfigError(
            f"out: {out} is a directory on this machine, and {blind} of this cluster's {len(others) + 1} nodes "
            "cannot see it: their WARC parts would stay on their own disks. " + SHARED_FIX,
            "out",
        )


SHARED_CHECK_TIMEOUT = 60.0
SHARED_FIX = (
    "Give a URI every node can write (--out s3://bucket/prefix, gs://..., abfs://...) "
    "or a directory on a filesystem every node mounts."
)


def _sees_file(path: str) -> bool:
    return os.path.exists(path)


def store_of(cfg: CrawlConfig, storage: Storage | None = None) -> SnapshotStore:
    """The checkpoint store of the crawl that ``cfg`` names (its --out, --redis-url and --crawl-id)."""
    from raycrawl.actors.settings import crawl_id_of
    from raycrawl.adapters.snapshots import open_store

    storage = storage or storage_of(cfg)
    return open_store(cfg.redis_url, crawl_id_of(cfg, storage.root), storage)


def _check_writable(out: Path) -> None:
    """An output directory that cannot be one is a configuration mistake, said before anything starts."""
    existing = next((p for p in (out, *out.parents) if p.exists()), None)
    if existing is None:
        return
    if not existing.is_dir():
        what = "is a file" if existing == out else f"is under {existing}, which is a file"
        raise ConfigError(f"out: {out} {what}; give a directory (it is created if missing)", "out")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(f"out: {out} cannot be written ({existing} is not writable by this user)", "out")
