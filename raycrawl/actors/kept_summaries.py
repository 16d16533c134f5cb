"""A detached crawl's summary, kept on its Ray cluster after the crawl (and its coordinator, and so its name) has
ended: ``raycrawl wait|status --crawl-id`` and ``Crawl.attach`` read it from there, from any process that joins the
cluster. Kept in the cluster's own key-value store (the GCS's, as Ray's libraries keep their records: it lasts as
long as the cluster), under the crawl's id; a new crawl of that id forgets the old one's as it starts.

A crawl that is not detached keeps nothing here: its driver has its summary, and its id is free when it ends.
"""

from __future__ import annotations

import json
from typing import Any

from ray.experimental import internal_kv

NAMESPACE = "raycrawl"


def _key(crawl_id: str) -> bytes:
    return f"summary/{crawl_id}".encode()


def keep(crawl_id: str, summary: dict[str, Any]) -> None:
    value = json.dumps(summary, default=str).encode()
    internal_kv._internal_kv_put(_key(crawl_id), value, overwrite=True, namespace=NAMESPACE)


def kept(crawl_id: str) -> dict[str, Any] | None:
    """The summary a detached crawl of that id left when it ended, or None."""
    value = internal_kv._internal_kv_get(_key(crawl_id), namespace=NAMESPACE)
    return dict(json.loads(value)) if value else None


def forget(crawl_id: str) -> None:
    internal_kv._internal_kv_del(_key(crawl_id), namespace=NAMESPACE)
