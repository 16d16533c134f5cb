"""Where a crawl's shards and seen-set partitions can be found again, so that a coordinator that restarts (its
process killed: Ray makes it again) picks the crawl up from them where they are, instead of from the last checkpoint.

They are detached actors, named under the crawl's id (a coordinator's own actors would die with its process), and
the list of their names is kept in the cluster's key-value store (as Ray's libraries keep their records), rewritten
whenever the crew changes. Being detached, they would outlive a crawl whose coordinator is gone for good (its
driver ended, or it was killed): each watches its coordinator's name, held while the coordinator lives or restarts,
and ends itself when the name has been gone for ``GONE_AFTER`` looks in a row.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import ray

from raycrawl.actors import cluster_kv

NAMESPACE = cluster_kv.NAMESPACE  # the crawls' coordinators are named in it
CREW_NAMESPACE = "raycrawl-crew"  # the crew actors' names: apart from the crawls' (Crawl.list lists those)
WATCH_EVERY_S = 3.0  # how often a crew actor looks for its coordinator
GONE_AFTER = 3  # looks in a row without it: the crawl is over, the actor ends itself


@dataclass(frozen=True)
class CrewRecord:
    shards: list[str]  # the shards' actor names, in shard order
    partitions: list[str]  # the seen-set partitions', in partition order
    started_at: float  # when the crawl started (its time limit counts from there across restarts)
    incarnations: list[int] = field(default_factory=list)  # each shard's (rebuilt alone: one more); [] = all 0
    launcher: str = ""  # the fetch launcher's name (actors/fetch_launcher.py)


def _key(crawl_id: str) -> str:
    return f"crew/{crawl_id}"


def _recoveries_key(crawl_id: str) -> str:
    return f"recoveries/{crawl_id}"


def _operator_key(crawl_id: str) -> str:
    return f"operator/{crawl_id}"


def new_name(crawl_id: str, role: str) -> str:
    """A fresh name for a crew actor (a crew made again after a roll-back, or a rebuilt partition, never meets the
    name of one being killed)."""
    return f"{crawl_id}/{role}/{uuid.uuid4().hex[:8]}"


def save(crawl_id: str, record: CrewRecord) -> None:
    cluster_kv.put(_key(crawl_id), asdict(record))


def load(crawl_id: str) -> CrewRecord | None:
    value = cluster_kv.get(_key(crawl_id))
    return CrewRecord(**value) if value else None


def forget(crawl_id: str) -> None:
    """The crawl is over: its crew's record and its recoveries go."""
    cluster_kv.delete(_key(crawl_id))
    cluster_kv.delete(_recoveries_key(crawl_id))
    cluster_kv.delete(_operator_key(crawl_id))


def find(names: list[str]) -> list[Any] | None:
    """The actors of these names, or None if any is gone."""
    found = []
    for name in names:
        try:
            found.append(ray.get_actor(name, namespace=CREW_NAMESPACE))
        except ValueError:  # (Ray: "Failed to look up actor with name ...")
            return None
    return found


def watch_owner(owner: str, on_orphaned: Callable[[], None]) -> None:
    """Call ``on_orphaned`` (on a thread of its own) once the coordinator named ``owner`` is gone for good."""

    def watch() -> None:
        missed = 0
        while missed < GONE_AFTER:
            time.sleep(WATCH_EVERY_S)
            try:
                alive = is_named(owner, NAMESPACE)
            except Exception:  # (the GCS away for a while: not a verdict on the coordinator)
                alive = True
            # (an empty answer is also what a GCS on its way back may give: only the store's answer counts)
            missed = 0 if alive else missed + 1 if cluster_kv.answers() else 0
        on_orphaned()

    threading.Thread(target=watch, name="raycrawl-owner-watch", daemon=True).start()


def is_named(name: str, namespace: str) -> bool:
    """Whether an actor holds ``name`` (alive, or restarting). Asked of the GCS by name alone: ``ray.get_actor``
    would make a handle, and a handle's first making in a process loads the actor's class -- the coordinator's
    whole module tree imported (~0.5 s of CPU), holding the lock every task's arguments are unpickled under, so
    each crew actor stalled for as long, a few seconds into every crawl (benchmarks/README.md, issue 51 step 14)."""
    return {"name": name, "namespace": namespace} in ray.util.list_named_actors(all_namespaces=True)


def kill(record: CrewRecord) -> None:
    """End whatever of a recorded crew is still running (a restarted coordinator that makes its crew anew)."""
    for name in [*record.shards, *record.partitions, *([record.launcher] if record.launcher else [])]:
        try:
            ray.kill(ray.get_actor(name, namespace=CREW_NAMESPACE))
        except ValueError:
            continue


def note_recovery(crawl_id: str, recovery: dict[str, Any]) -> list[dict[str, Any]]:
    """Add a recovery (its kind, cause, seconds, pages fetched again ...) to the crawl's list, kept here so that a
    coordinator made again still has the earlier ones; returns the list."""
    noted = [*recoveries(crawl_id), recovery]
    cluster_kv.put(_recoveries_key(crawl_id), noted)
    return noted


def recoveries(crawl_id: str) -> list[dict[str, Any]]:
    return list(cluster_kv.get(_recoveries_key(crawl_id)) or [])


def note_operator(crawl_id: str, said: dict[str, str | None]) -> None:
    """The operator's stop and pause (core/crawl_loop.py ``operator_said``), kept so that a coordinator made again
    heeds a stop the one that died had taken."""
    cluster_kv.put(_operator_key(crawl_id), said)


def operator_said(crawl_id: str) -> dict[str, str | None]:
    return dict(cluster_kv.get(_operator_key(crawl_id)) or {})
