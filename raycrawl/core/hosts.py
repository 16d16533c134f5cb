"""One host's politeness state, and how it reacts to what its server answered.

A ``HostState`` lives inside the FrontierShard that owns the host. It knows when the host may next be hit
(``next_allowed``; ``blocked_until`` for Retry-After and backoff), why (``delay_reason``, ``block_reason``),
its robots rules, and whether it is paused (a 403/451 streak, or the operator) or closed (a permanent verdict:
robots.txt unreachable for good, a blocked address, a Crawl-delay over the cap with the ``skip`` policy).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Literal

from raycrawl.core.entry_lines import decode, encode
from raycrawl.core.host_queue import HostQueue
from raycrawl.core.politeness import DelayPolicy, DelayReason, backoff, host_delay
from raycrawl.core.records import Ack, UrlEntry
from raycrawl.core.robots import RobotsRules

DENIAL_STATUSES = frozenset({403, 451})
BlockReason = Literal["retry_after", "backoff", "shared"]  # (shared: another crawl's request, core/host_budget.py)
# What a checkpoint keeps of a host besides its key, origin, queue, robots rules and closed verdict.
SAVED_FIELDS = (
    "next_allowed",
    "blocked_until",
    "block_reason",
    "last_response_s",
    "failure_streak",
    "denial_streak",
    "robots_failures",
    "paused",
    "delay_override",
    "requests",
    "fetched",
    "errors",
    "admitted",
    "accepted",
)


@dataclass(slots=True)
class HostState:
    key: str
    origin: str
    delay: float
    delay_reason: DelayReason = "configured"
    queue: HostQueue = field(default_factory=HostQueue)
    next_allowed: float = 0.0
    blocked_until: float = 0.0
    block_reason: BlockReason | None = None
    in_flight: int = 0
    last_response_s: float = 0.0
    failure_streak: int = 0
    denial_streak: int = 0
    robots: RobotsRules | None = None
    robots_leased: bool = False
    robots_failures: int = 0
    paused: str | None = None
    closed: tuple[Any, str] | None = None  # (outcome, detail) for every URL of this host from now on
    delay_override: float | None = None
    heap_token: int = 0  # its live entry in the shard's ready-heap (tokens start at 1; 0: not in the heap)
    heap_due: float = 0.0  # ... and that entry's due time
    requests: int = 0
    fetched: int = 0
    errors: int = 0
    admitted: int = 0  # URLs ever queued here (the per-host page budget counts these)
    accepted: int = 0  # pages whose items were accepted (the per-host accepted budget counts these)
    sitemaps: int = 0  # sitemap files queued here in this run (bounded by max_sitemaps_per_host)
    # robots.txt named sitemaps: the host's pages wait (up to SITEMAP_WAIT) for them to be queued, and the
    # next_allowed to go back to once they are (0: not waiting)
    sitemap_wait: float = 0.0
    held: list[UrlEntry] = field(default_factory=list)  # URLs past the page budget, kept for a larger one
    # URLs past the workbench (``queue``), in the shard's queue store (core/workbench.py): how many, the best score
    stored: int = 0
    stored_best: float = float("inf")
    # A continuous crawl (core/revisit_schedule.py): visits of pages fetched before, how many found a change, and
    # the interval its last page was scheduled at
    revisits: int = 0
    changes: int = 0
    interval: float = 0.0

    @property
    def queued(self) -> int:
        return self.queue.size + self.stored

    def due(self) -> float:
        allowed, blocked = self.next_allowed, self.blocked_until
        return allowed if allowed > blocked else blocked

    def forgettable(self, now: float) -> bool:
        """Nothing left to remember: no URL queued or leased, robots.txt expired, no pause, no verdict, and a clock
        that no longer holds anything back (a host seen again starts anew, robots.txt first)."""
        return (
            not self.queue
            and not self.stored
            and self.in_flight == 0
            and not self.robots_leased
            and self.paused is None
            and self.closed is None
            and (self.robots is None or self.robots.expires_at <= now)
            and self.due() <= now
        )

    # --- the host's clock (invariant 1, docs/architecture.md): these alone move ``next_allowed`` -------------

    def clock_first_slot(self, at: float) -> None:
        """A host met now (its first URL): its first request no sooner than ``at`` (hosts met together are spread
        over the delay: core/politeness.py ``first_slot_offset``)."""
        self.next_allowed = at

    def clock_on_lease(self, not_before: float) -> None:
        """A request leased to be sent at ``not_before``: provisionally, the next one a delay after it (the slot is
        counted again from when the server answered, ``clock_on_answer``)."""
        self.next_allowed = not_before + self.delay

    def clock_on_answer(self, answered: float) -> None:
        """An exchange ended at ``answered`` (or is taken to have: a lease given up, a restore): the next request a
        delay after it, never sooner than already set."""
        slot = answered + self.delay
        if slot > self.next_allowed:
            self.next_allowed = slot

    def clock_wait_for_sitemaps(self, until: float) -> None:
        """robots.txt named sitemaps: the pages wait until ``until`` for them to be queued (``clock_sitemaps_came``
        gives back the slot they had)."""
        self.sitemap_wait = self.next_allowed
        if until > self.next_allowed:
            self.next_allowed = until

    def clock_sitemaps_came(self) -> None:
        if self.sitemap_wait:
            self.next_allowed, self.sitemap_wait = min(self.next_allowed, self.sitemap_wait), 0.0

    def recompute_delay(self, policy: DelayPolicy) -> None:
        if self.delay_override is not None:
            self.delay, self.delay_reason = self.delay_override, "configured"
            return
        crawl_delay = self.robots.crawl_delay if self.robots is not None else None
        self.delay, self.delay_reason = host_delay(policy, crawl_delay, self.last_response_s)

    def block(self, until: float, reason: BlockReason) -> None:
        if until > self.blocked_until:
            self.blocked_until, self.block_reason = until, reason

    def on_page_answer(
        self, ack: Ack, policy: DelayPolicy, pause_after: int, rng: random.Random, retried: bool = False
    ) -> bool:
        """Update the clocks, streaks and counts from one answered (or failed) page request (``retried``: a failure
        whose URL is queued again, counted when it ends). True: this answer paused the host."""
        # From when the exchange ended (last byte read, or the connection cut), not when the headers came: a
        # body dripped for the whole deadline is part of the visit, and so is the wait after it.
        answered = ack.ended_at or ack.responded_at
        self.requests += 1
        self.accepted += ack.accepted
        if ack.error is not None or ack.transient:
            self.errors += not retried
        else:
            self.fetched += 1
        was_paused = self.paused
        if ack.status is not None:
            self.last_response_s = max(0.0, ack.elapsed_s)
        if ack.transient:
            self.failure_streak += 1
            if ack.retry_at is not None:
                self.block(min(ack.retry_at, answered + policy.max_retry_after), "retry_after")
            else:
                self.block(answered + backoff(policy, self.failure_streak, rng), "backoff")
        else:
            self.failure_streak = 0
            if ack.status in DENIAL_STATUSES:
                self.denial_streak += 1
                if pause_after and self.denial_streak >= pause_after and self.paused is None:
                    self.paused = f"{self.denial_streak} responses 403/451 in a row"
            else:
                self.denial_streak = 0
        self.recompute_delay(policy)
        # The server logged the request before the exchange ended, so a slot counted from its end is never early.
        self.clock_on_answer(answered)
        return was_paused is None and self.paused is not None

    def row(self, now: float) -> dict[str, Any]:
        robots = "pending" if self.robots is None else self.robots.verdict
        blocked = self.blocked_until > now
        return {
            "host": self.key,
            "queued": self.queued,
            "in_flight": self.in_flight,
            "delay": round(self.delay, 3),
            "delay_reason": self.delay_reason,
            "wait": round(max(0.0, self.due() - now), 3),
            "blocked": self.block_reason if blocked else None,
            "robots": robots,
            "crawl_delay": self.robots.crawl_delay if self.robots is not None else None,
            "paused": self.paused,
            "closed": self.closed[1] if self.closed else None,
            "failure_streak": self.failure_streak,
            "requests": self.requests,
            "fetched": self.fetched,
            "errors": self.errors,
            "revisits": self.revisits,
            "change_rate": round(self.changes / self.revisits, 3) if self.revisits else None,
            "interval": round(self.interval, 3) if self.interval else None,
        }

    # --- checkpoints ---------------------------------------------------------------------------------

    def saved(self, queue: list[UrlEntry]) -> dict[str, Any]:
        """This host as plain data, with ``queue`` as the URLs to queue again on restore (one line each: a
        checkpoint's pause is mostly this, for a shard's workbenches)."""
        out: dict[str, Any] = {"key": self.key, "origin": self.origin, "lines": "\n".join(map(encode, queue))}
        out |= {name: getattr(self, name) for name in SAVED_FIELDS}
        out["robots"] = self.robots.to_dict() if self.robots is not None else None
        if self.held:
            out["held"] = [e.to_row() for e in self.held]
        if self.revisits or self.interval:
            out["revisit"] = [self.revisits, self.changes, self.interval]
        if self.stored:  # (its URLs in the queue store: saved by the store's log, counted here)
            out["stored"] = self.stored
        out["closed"] = list(self.closed) if self.closed else None
        return out

    @classmethod
    def from_saved(cls, saved: dict[str, Any], policy: DelayPolicy, ua_token: str) -> tuple[HostState, list[UrlEntry]]:
        """A host and its URLs from ``saved()`` data; every field must be there but ``admitted`` and ``accepted``."""
        hs = cls(key=saved["key"], origin=saved["origin"], delay=policy.delay)
        for name in SAVED_FIELDS:
            if name not in ("admitted", "accepted"):
                setattr(hs, name, saved[name])
        # (checkpoints from before the per-host page and accepted budgets have none)
        hs.admitted, hs.accepted = saved.get("admitted", 0), saved.get("accepted", 0)
        hs.robots = RobotsRules.from_dict(saved["robots"], ua_token) if saved["robots"] else None
        hs.closed = (saved["closed"][0], saved["closed"][1]) if saved["closed"] else None
        hs.held = [UrlEntry.from_row(row) for row in saved.get("held", [])]
        hs.revisits, hs.changes, hs.interval = saved.get("revisit", (0, 0, 0.0))
        hs.recompute_delay(policy)
        if "lines" in saved:
            return hs, [decode(line) for line in saved["lines"].split("\n")] if saved["lines"] else []
        return hs, [UrlEntry.from_row(row) for row in saved["queue"]]  # (a checkpoint from before lines)
