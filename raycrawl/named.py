"""Running crawls, by name, on a Ray cluster: each crawl's coordinator is a named actor in the ``raycrawl``
namespace, under its crawl id (``--crawl-id``, else the output's name), so a notebook or the CLI anywhere that can
reach the cluster finds it (``Crawl.attach``, ``Crawl.list``, ``raycrawl status --crawl-id ID``).

A name is held while the crawl's driver runs (the coordinator belongs to it: when a ``ray job`` ends, so does the
name). Two crawls of one id cannot run at once: they would write the same checkpoints.
"""

from __future__ import annotations

import time
from typing import Any

from raycrawl.errors import ConfigError

NAMESPACE = "raycrawl"
NAME_RELEASE_S = 10.0  # how long a finished crawl's name may take to be let go (its actor being killed)
LIST_TIMEOUT_S = 10.0


def find(crawl_id: str) -> Any | None:
    """The running crawl's coordinator (an actor handle), or None."""
    import ray

    try:
        return ray.get_actor(crawl_id, namespace=NAMESPACE)
    except ValueError:  # (Ray: "Failed to look up actor with name ...")
        return None


def start_named(actor_class: Any, crawl_id: str, options: dict[str, Any], *args: Any) -> Any:
    """The coordinator, started under the crawl's name. A finished crawl of that name still holding it (its driver
    has not let it go yet) is waited for; a running one is an error."""
    deadline = time.monotonic() + NAME_RELEASE_S
    while True:
        try:
            return actor_class.options(name=crawl_id, namespace=NAMESPACE, **options).remote(*args)
        except ValueError:  # the name is taken
            if not _ending(crawl_id) or time.monotonic() > deadline:
                raise ConfigError(
                    f"crawl_id: a crawl named {crawl_id!r} is already running on this Ray cluster (see `raycrawl "
                    f"status --crawl-id {crawl_id}`); stop it first, or give this one another --crawl-id"
                ) from None
            time.sleep(0.2)


def _ending(crawl_id: str) -> bool:
    """Whether the crawl holding the name has finished (or died) and only has to let the name go."""
    import ray
    from ray.exceptions import GetTimeoutError, RayError

    actor = find(crawl_id)
    if actor is None:
        return True
    try:
        return bool(ray.get(actor.status.remote(), timeout=5.0).get("state") == "finished")
    except (RayError, GetTimeoutError):
        return True


def running() -> list[dict[str, Any]]:
    """Every crawl on the cluster: its id and its status (asked of all at once)."""
    import ray
    from ray.exceptions import RayError

    names = sorted(
        entry["name"] for entry in ray.util.list_named_actors(all_namespaces=True) if entry["namespace"] == NAMESPACE
    )
    actors = [(name, find(name)) for name in names]
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
