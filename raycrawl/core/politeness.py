"""When a host may next be hit: the delay model and the backoff model, as pure functions.

Delay (between two requests to a healthy host), in the spirit of Heritrix's delayFactor and Scrapy's
AutoThrottle: ``clamp(max(configured delay, robots Crawl-delay (capped), delay_factor x last response time),
min_delay, max_delay)``. A slow server is given proportionally more room, so load falls as it struggles
instead of concurrency rising into a 429 death spiral (crawlee-python #1437).

First slot: hosts met together (the seeds, a page's outlinks) would otherwise all come due in the same
instant, round after round, and a burst of simultaneous requests makes every host's answer late. A host's
first request waits a fraction of ``min(delay, spread)``, the fractions stepping by the golden ratio so that
hosts are evenly spread however many there are.

Backoff (after a transient failure: 429/503 without Retry-After, 5xx, connect errors, timeouts): exponential
in the host's current failure streak, with jitter so that many crawlers do not return in lock step, capped.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Literal

DelayReason = Literal["configured", "robots", "latency", "min_delay", "max_delay"]
GOLDEN_FRACTION = (math.sqrt(5) - 1) / 2


@dataclass(frozen=True, slots=True)
class DelayPolicy:
    delay: float = 1.0
    delay_factor: float = 1.0
    min_delay: float = 0.0
    max_delay: float = 60.0
    max_crawl_delay: float = 30.0
    backoff_base: float = 2.0
    max_backoff: float = 600.0
    max_retry_after: float = 3600.0


def host_delay(policy: DelayPolicy, crawl_delay: float | None, last_response_s: float) -> tuple[float, DelayReason]:
    """The delay for a host now, and which term decided it (the first of equals: configured, robots, latency).

    Called on every answer, so plain comparisons rather than a max over a list of candidates.
    """
    value: float = policy.delay
    reason: DelayReason = "configured"
    if crawl_delay is not None:
        robots = crawl_delay if crawl_delay < policy.max_crawl_delay else policy.max_crawl_delay
        if robots > value:
            value, reason = robots, "robots"
    if policy.delay_factor > 0:
        latency = policy.delay_factor * last_response_s
        if latency > value:
            value, reason = latency, "latency"
    if value < policy.min_delay:
        return policy.min_delay, "min_delay"
    if value > policy.max_delay:
        return policy.max_delay, "max_delay"
    return value, reason


def backoff(policy: DelayPolicy, streak: int, rng: random.Random) -> float:
    """Seconds to keep a host idle after its ``streak``-th failure in a row (streak >= 1).

    base x 2^(streak-1), times a jitter in [1, 1.5): always longer than the previous step before the cap.
    """
    raw = policy.backoff_base * (2.0 ** min(max(streak, 1) - 1, 40))
    return min(policy.max_backoff, raw * (1.0 + 0.5 * rng.random()))


def first_slot_offset(index: int, delay: float, spread: float) -> float:
    """How long after it is met the ``index``-th host (0, 1, 2 ...) may get its first request."""
    return (index * GOLDEN_FRACTION) % 1.0 * min(delay, spread)
