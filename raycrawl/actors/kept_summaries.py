"""A detached crawl's summary, kept on its Ray cluster after the crawl (and its coordinator, and so its name) has
ended: ``raycrawl wait|status --crawl-id`` and ``Crawl.attach`` read it from there, from any process that joins the
cluster. Kept in the cluster's own key-value store (actors/cluster_kv.py: it lasts as long as the cluster), under the
crawl's id; a new crawl of that id forgets the old one's as it starts.

A crawl that is not detached keeps nothing here: its driver has its summary, and its id is free when it ends.
"""

from __future__ import annotations

from typing import Any

from raycrawl.actors import cluster_kv


def _key(crawl_id: str) -> str:
    return f"summary/{crawl_id}"


def keep(crawl_id: str, summary: dict[str, Any]) -> None:
    cluster_kv.put(_key(crawl_id), summary)


def kept(crawl_id: str) -> dict[str, Any] | None:
    """The summary a detached crawl of that id left when it ended, or None."""
    summary = cluster_kv.get(_key(crawl_id))
    return dict(summary) if summary else None


def forget(crawl_id: str) -> None:
    cluster_kv.delete(_key(crawl_id))
