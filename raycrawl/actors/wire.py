"""Lease batches and results as they go between a shard and its fetch tasks, and a task's payload claims and their
answers (core/captures.py): pickled by the standard pickler before Ray sees them, so Ray's serializer carries bytes.

Ray pickles arguments and returns with cloudpickle, whose pickler asks Python about every object it meets (to find
functions and classes to pickle by value); a lease costs 3.2 us that way against 1.2 with ``pickle`` (a result 7.3
against 3.3), once per page each way (benchmarks/README.md, issue 51). The records' own compact form
(core/records.py ``compact_pickle``) is the same in both.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from typing import cast

from raycrawl.core.captures import Capture, Claim
from raycrawl.core.records import FetchResult, Lease


def pack(objects: Sequence[Lease] | Sequence[FetchResult] | Sequence[Claim] | Sequence[Capture | None]) -> bytes:
    return pickle.dumps(objects, protocol=pickle.HIGHEST_PROTOCOL)


def leases_of(packed: bytes) -> list[Lease]:
    return cast(list[Lease], pickle.loads(packed))


def results_of(packed: bytes) -> list[FetchResult]:
    return cast(list[FetchResult], pickle.loads(packed))


def claims_of(packed: bytes) -> list[Claim]:
    return cast(list[Claim], pickle.loads(packed))


def captures_of(packed: bytes) -> list[Capture | None]:
    return cast(list[Capture | None], pickle.loads(packed))
