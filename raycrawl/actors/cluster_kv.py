"""JSON values kept in the Ray cluster's own key-value store (the GCS's, as Ray's libraries keep their records:
they last as long as the cluster, and any process that joins it reads them), under raycrawl's namespace. What
raycrawl keeps there: a detached crawl's summary (kept_summaries.py), a crawl's crew and recoveries
(crew_registry.py)."""

from __future__ import annotations

import json
from typing import Any

from ray.experimental import internal_kv

NAMESPACE = "raycrawl"


def put(key: str, value: Any) -> None:
    internal_kv._internal_kv_put(key.encode(), json.dumps(value, default=str).encode(), overwrite=True,
                                 namespace=NAMESPACE)  # fmt: skip


def get(key: str) -> Any | None:
    """The value kept under ``key``, or None."""
    value = internal_kv._internal_kv_get(key.encode(), namespace=NAMESPACE)
    return json.loads(value) if value else None


def delete(key: str) -> None:
    internal_kv._internal_kv_del(key.encode(), namespace=NAMESPACE)


def answers() -> bool:
    """Whether the store (the cluster's GCS) answers now."""
    try:
        internal_kv._internal_kv_exists(b"crew/", namespace=NAMESPACE)
    except Exception:
        return False
    return True
