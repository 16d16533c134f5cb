"""A shard's leases out (docs/architecture.md, invariant 4: a leased URL is the shard's until its answer is settled):
each with its host, when the earliest may expire, and -- with a politeness budget shared with other crawls
(core/host_budget.py) -- the slot each holds there and the slots to give back at the next exchange.

Lease ids are consecutive over the shard's life (a checkpoint keeps the next one): a run's leases name the one
before them by id (core/runs.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from raycrawl.core.host_budget import Release
from raycrawl.core.hosts import HostState
from raycrawl.core.records import Lease, UrlEntry

# What a shard keeps of a lease until it is acked: the lease (its entry inside) and its host.
# A plain tuple: one is made per URL leased, and a tuple costs a third of a slotted dataclass to make.
Leased = tuple[Lease, HostState]


class LeaseTable:
    def __init__(self) -> None:
        self._leases: dict[int, Leased] = {}
        self._next_id = 1
        self._check_at = float("inf")  # no lease can expire before this: ``expired`` skips its scan until then
        self._slots: dict[int, tuple[str, int]] = {}  # lease id -> (host, its shared slot's token)
        self._releases: list[Release] = []  # shared slots to give back at the next exchange

    def __len__(self) -> int:
        return len(self._leases)

    def __contains__(self, lease_id: int) -> bool:
        return lease_id in self._leases

    @property
    def next_id(self) -> int:
        """The id the next lease takes."""
        return self._next_id

    def restore_next_id(self, next_id: int) -> None:
        """A restored shard goes on numbering where its checkpoint stopped (ids are never reused)."""
        self._next_id = next_id

    def record(self, hs: HostState, leases: list[Lease]) -> None:
        """Leases of one host, made with the next ids, in order (a run's, or one)."""
        assert leases[0].lease_id == self._next_id, "lease ids are consecutive"
        table = self._leases
        for lease in leases:
            table[lease.lease_id] = (lease, hs)
        self._next_id = leases[-1].lease_id + 1

    def expires_by(self, at: float) -> None:
        """A lease recorded since the last call may expire at ``at`` (the earliest of them)."""
        if at < self._check_at:
            self._check_at = at

    def pop(self, lease_id: int) -> Leased | None:
        return self._leases.pop(lease_id, None)

    def taker(self) -> Callable[[int, None], Leased | None]:
        """``pop``, as the table's own dict method: for a loop over every URL answered (no call of ours each)."""
        return self._leases.pop

    def expired(self, now: float) -> list[int]:
        """The leases that ran out by ``now``. Called on every lease round: a scan of all leases each time would cost
        more than the leasing, so it scans only once the earliest may have expired."""
        if now < self._check_at:
            return []
        expired: list[int] = []
        next_check = float("inf")  # the earliest expiry among the leases that stay
        for lease_id, (lease, _) in self._leases.items():
            expires_at = lease.expires_at
            if expires_at <= now:
                expired.append(lease_id)
            elif expires_at < next_check:
                next_check = expires_at
        self._check_at = next_check
        return expired

    def pages_by_host(self) -> dict[str, list[UrlEntry]]:
        """The URLs out on page leases, by host key (a checkpoint saves them as queued: invariant 4)."""
        out: dict[str, list[UrlEntry]] = {}
        for lease, hs in self._leases.values():
            if lease.kind != "robots":
                out.setdefault(hs.key, []).append(lease.entry)
        return out

    # --- a politeness budget shared with other crawls ----------------------------------------------------

    def hold_slot(self, lease_id: int, host: str, token: int) -> None:
        self._slots[lease_id] = (host, token)

    def slots_done(self, ended: Iterable[tuple[int, float]]) -> None:
        """The slots of these leases (lease id, when its exchange ended) go back at the next exchange."""
        if not self._slots:
            return
        slots = self._slots
        for lease_id, at in ended:
            held = slots.pop(lease_id, None)
            if held is not None:
                self._releases.append((held[0], held[1], at))

    def take_releases(self) -> list[Release]:
        out, self._releases = self._releases, []
        return out

    def keep_releases(self, releases: list[Release]) -> None:
        """Releases an exchange could not give (the budget unreachable): first at the next one."""
        self._releases[:0] = releases
