"""A frontier shard as plain data: its checkpoint (and back), and its summary (docs/architecture.md, Checkpoints).

Leased URLs are saved as queued: after a restore nobody holds their lease, so they must be fetched again (invariant
4). The URLs in the queue store are in the snapshot as rows, or (``stored_rows=False``) only counted per host: the
store is then saved by its log (adapters/queue_segments.py) and replayed before ``load``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from raycrawl.core.due_queue import DUE_HOST
from raycrawl.core.hosts import HostState
from raycrawl.core.workbench import decode

if TYPE_CHECKING:
    from raycrawl.core.frontier import FrontierShard


def save(shard: FrontierShard, stored_rows: bool) -> dict[str, Any]:
    queues = shard.queues
    # First: a store that refuses the pending lines (a full disk) puts them back in their workbenches, where the
    # hosts' saved queues below take them (saved before, they were counted as stored and were in neither the rows
    # nor the log: lost, and a resume waited for ever for rows that were not there).
    queues.flush()
    leased = shard.leases.pages_by_host()
    # (leased URLs first: they were taken from the queue's head, and go back there)
    hosts = [hs.saved([*leased.get(hs.key, []), *hs.queue]) for hs in shard.hosts.values()]  # (held inside)
    snapshot: dict[str, Any] = {
        "shard": shard.shard_id,
        "next_lease_id": shard.leases.next_id,
        "counters": dict(shard.counters),
        "hosts": hosts,
        "due": queues.due.saved(),
    }
    if queues.bench is not None and stored_rows:  # the URLs past the workbenches: (host, score, block)
        snapshot["stored"] = [[host, key, row.decode()] for host, key, row in queues.stored_rows()]
    return snapshot


def load(shard: FrontierShard, snapshot: dict[str, Any]) -> list[HostState]:
    """A snapshot into a new, empty shard; returns its hosts (for the shard to schedule, and to push the URLs they
    held past a budget again under this run's)."""
    queues = shard.queues
    shard.leases.restore_next_id(int(snapshot["next_lease_id"]))
    shard.counters.update(snapshot["counters"])
    restored: list[HostState] = []
    for saved in snapshot["hosts"]:
        hs, queue = HostState.from_saved(saved, shard.settings.policy, shard.settings.ua_token)
        shard.adopt(hs)
        for entry in queue:
            queues.add(hs, entry)
        if "stored" not in snapshot and saved.get("stored") and queues.bench is not None:
            queues.count_stored(hs, saved["stored"])  # (the store holds them: replayed from its log)
        restored.append(hs)
    for host, key, text in snapshot.get("stored", []):
        if host == DUE_HOST:  # (the schedule's rows: core/due_queue.py)
            queues.due.add_rows((float(key), line) for line in text.split("\n"))
        elif host in shard.hosts and queues.bench is not None:
            queues.add_stored(shard.hosts[host], float(key), text)
        else:  # (into memory, without a store)
            for line in text.split("\n"):
                entry = decode(line)
                queues.add(shard.host_for(entry.url), entry)
    queues.flush()
    if "due" in snapshot:
        queues.due.restore(snapshot["due"])
    return restored


def summary(shard: FrontierShard, now: float, paused_hosts: int) -> dict[str, int]:
    """Counts of the shard's queues, leases and hosts at ``now`` (the status line's and the metrics' figures)."""
    queues = shard.queues
    due = shard.next_due()
    ready = shard.due_hosts.ready_now(now)
    # Waiting: URLs queued, but not now (the politeness clock, a block, robots.txt, an answer pending).
    active = sum(1 for hs in shard.hosts.values() if hs.queued and hs.paused is None and hs.closed is None)
    queued, stored = queues.count, queues.stored
    in_memory_peak, on_disk_peak = queues.peaks()
    return {
        "queued": queued,
        "queued_in_memory": queued - stored,
        "queued_on_disk": stored,
        "queued_in_memory_peak": in_memory_peak,
        "queued_on_disk_peak": on_disk_peak,
        "held_over_budget": queues.held,
        "queued_paused": shard.queued_paused,
        "leased": len(shard.leases),
        "hosts": len(shard.hosts),
        "hosts_ready": ready,
        "hosts_waiting": active - ready,
        "hosts_paused_now": paused_hosts,
        "next_due_in_ms": -1 if due is None else int(max(0.0, due - now) * 1000),
        **shard.schedule_summary(now),
    }
