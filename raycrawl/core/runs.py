"""A host's run: several of its URLs leased together and sent one after another by one fetch task.

With one request in flight per host, each URL otherwise makes the whole trip on its own: the answer goes to the
host's shard, waits for the coordinator's next round, comes back as a lease in a new fetch task. That trip (tens
of milliseconds, a few Ray calls) bounds a host's rate when its delay is short and costs more CPU than the page.
So a shard may lease a due host up to ``run_length`` URLs at once -- as many as its delay fits in the lease
horizon -- each lease naming the one before it (``Lease.after``). The fetch task sends each only when the one
before has ended, ``gap`` later: the same rule the shard applies on each answer (``HostState.on_page_answer``:
the next slot is the end of the exchange plus the host's delay), so the server sees what it would see without
runs. An answer the shard would act on -- a transient failure (its backoff), a denial (403/451: a pause may
follow), an error -- ends the run: the leases after it are given back unsent, and the shard decides again.

Pure: the shard's and the fetcher's halves of the rule, no I/O.
"""

from __future__ import annotations

from raycrawl.core.hosts import DENIAL_STATUSES  # (a host is paused after a streak of them)
from raycrawl.core.politeness import DelayPolicy, host_delay


def base_gap(policy: DelayPolicy, crawl_delay: float | None) -> float:
    """The host's delay without its latency term (that one is added per answer, by ``gap_after``)."""
    return host_delay(policy, crawl_delay, 0.0)[0]


def gap_after(gap: float, delay_factor: float, max_delay: float, exchange_s: float) -> float:
    """The wait after an exchange of ``exchange_s`` seconds before the run's next request: the host's delay as
    ``host_delay`` would make it from that answer (the latency term, within max_delay, or the base ``gap``)."""
    latency = delay_factor * exchange_s
    return max(gap, latency if latency < max_delay else max_delay)


def run_size(run_length: int, gap: float, span: float) -> int:
    """How many URLs a host's run may take: at most ``run_length``, and no more than fit ``span`` seconds of
    gaps (a run with long gaps would hold its fetch task for as long)."""
    if run_length <= 1:
        return 1
    if gap <= 0:
        return run_length
    return max(1, min(run_length, int(span / gap) + 1))


def ends_run(status: int | None, transient: bool, error: str | None) -> bool:
    """Does this answer stop the rest of its run (given back unsent, for the shard to decide again)?"""
    return transient or error is not None or status is None or status in DENIAL_STATUSES
