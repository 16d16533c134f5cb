"""Which batch -- which fetch task -- each of a shard's leases went out in, and the leases a task earns by settling.

A batch is what one lease call (or a chain, below) handed to one fetch task. A task that dies gives back exactly
the leases of its batches not settled yet (``ShardWork.release_batches``); a restarted coordinator keeps those of
tasks still running (``take_over``).

**Chaining** (benchmarks/README.md, issue 51): a host's next run goes to the task that settles its last, in the
settle call's reply, instead of waiting for the coordinator's next round and a new task. Within an allowance:

- the coordinator grants each shard, with each round's lease call, how many leases it may chain until the next call
  (``ChainAllowance``; none while draining, quiescing, paused, with fetch tasks waiting for a slot, or when a page
  budget could be overshot) and until when (the crawl's time limit);
- a batch only replaces what it settled: each result earns its batch a credit, spent when it reaches a run's length
  or when nothing of the batch is open (its task would end), so a task never holds more leases than it was given.
Chained leases join the batch that earned them, so a task's death gives them back like any other.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ChainAllowance:
    """What a shard may chain until the coordinator's next lease call."""

    leases: int | None = 0  # how many leases, at most (None: no bound but the credits)
    until: float | None = None  # none from this time on (the wall clock's: the crawl's time limit)


NO_CHAIN = ChainAllowance(0)


class LeaseBatches:
    def __init__(self, run_length: int) -> None:
        self._run_length = max(1, run_length)
        self._ids: dict[int, list[int]] = {}  # batch -> every lease id it was given (settled ones too)
        self._batch_of: dict[int, int] = {}  # lease id -> its batch, while it is open
        self._open: dict[int, int] = {}  # batch -> its leases not settled yet
        self._credit: dict[int, int] = {}  # batch -> leases settled and not replaced yet
        self._allowance = NO_CHAIN
        self._left: int | None = 0  # of the allowance

    def __iter__(self) -> Iterator[int]:
        return iter(list(self._ids))

    def add(self, batch: int, lease_ids: list[int]) -> None:
        """Leases given to ``batch`` (a round's, or a chain's: then spent from its credit and the allowance)."""
        self._ids.setdefault(batch, []).extend(lease_ids)
        of = self._batch_of
        for lease_id in lease_ids:
            of[lease_id] = batch
        self._open[batch] = self._open.get(batch, 0) + len(lease_ids)

    def pop(self, batch: int) -> list[int]:
        """The batch's lease ids, forgotten (its task ended: any still open are the caller's to take back)."""
        ids = self._ids.pop(batch, [])
        of = self._batch_of
        for lease_id in ids:
            of.pop(lease_id, None)
        self._open.pop(batch, None)
        self._credit.pop(batch, None)
        return ids

    # --- chaining ----------------------------------------------------------------------------------------

    def grant(self, allowance: ChainAllowance) -> None:
        """The coordinator's allowance for the time until its next lease call (replacing the last one's)."""
        self._allowance, self._left = allowance, allowance.leases

    def settled(self, lease_ids: Iterable[int], now: float) -> dict[int, int]:
        """These leases were answered (or given back unsent); returns, per batch, how many leases it may be chained
        now (none when the allowance says so)."""
        of, open_, credit = self._batch_of, self._open, self._credit
        touched: set[int] = set()
        for lease_id in lease_ids:
            batch = of.pop(lease_id, None)
            if batch is None:  # (expired and taken back, or its batch ended: not this task's to replace)
                continue
            open_[batch] -= 1
            credit[batch] = credit.get(batch, 0) + 1
            touched.add(batch)
        until = self._allowance.until
        if self._left == 0 or (until is not None and now >= until):
            return {}
        out: dict[int, int] = {}
        for batch in sorted(touched):
            earned = credit[batch]
            if earned >= self._run_length or open_[batch] == 0:
                out[batch] = earned if self._left is None else min(earned, self._left - sum(out.values()))
        return {batch: n for batch, n in out.items() if n > 0}

    def chained(self, batch: int, lease_ids: list[int]) -> None:
        """``lease_ids`` were chained to ``batch`` (at most what ``settled`` said it may have)."""
        self._credit[batch] -= len(lease_ids)
        if self._left is not None:
            self._left -= len(lease_ids)
        self.add(batch, lease_ids)
