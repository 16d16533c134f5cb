"""When the coordinator's next round starts: no sooner than ``MIN_ROUND`` after the last one began, and no later than
the first thing that needs a round -- a host coming due (leased a horizon ahead), a staged batch whose first URL
is due (launched ``launch_slack`` before), answers to gather while URLs are out, or ``MAX_IDLE_WAIT`` at the
latest. Between the two the coordinator also wakes when a fetch task ends (actors/coordinator.py).

Pure: the crawl loop (core/crawl_loop.py) gives the clock's reading and what it knows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

MAX_IDLE_WAIT = 0.25  # start a round at least this often (limits, operator commands, lease expiry)
MAX_GATHER = 0.05  # while URLs are out, a round at least this often: an answered host is leased again soon
# ... but while every slot has a task and the shards chain each settling task its hosts' next runs, answered hosts
# are leased again without a round; a round then routes new links and counts what moved, and costs the coordinator
# alone ~4.5 ms of CPU (perf, unthrottled crawl at ~18 rounds a second: benchmarks/README.md, issue 51 step 17)
MAX_GATHER_CHAINED = 0.1
# ... and at most this often: each round is a call to every shard, and theirs to the seen-set partitions and to
# each other (0.025 before issue 51; with fewer settle calls, -20% CPU a page: benchmarks/README.md)
MIN_ROUND = 0.05


@dataclass(frozen=True, slots=True)
class RoundNeeds:
    """What the crawl loop knows that may call for a round."""

    dues: Sequence[float]  # when each shard's next host comes due (none while paused)
    lease_horizon: float  # seconds ahead a host due is leased
    staged_earliest: float | None  # the first URL of the staged batches, if any
    launch_slack: float  # a staged batch is launched this long before its first URL is due
    leased: bool  # URLs are out: their answers make hosts due again, which only the shards see
    chains_carry: bool  # the shards chain answered hosts' next runs to their tasks, and every slot has a task


def round_window(now: float, round_started: float, needs: RoundNeeds) -> tuple[float, float]:
    """(earliest, latest) start of the round after the one begun at ``round_started``."""
    latest = now + MAX_IDLE_WAIT
    if needs.dues:
        latest = min(latest, min(needs.dues) - needs.lease_horizon)
    if needs.staged_earliest is not None:
        latest = min(latest, needs.staged_earliest - needs.launch_slack)
    if needs.leased:
        latest = min(latest, round_started + (MAX_GATHER_CHAINED if needs.chains_carry else MAX_GATHER))
    earliest = round_started + MIN_ROUND
    return earliest, max(latest, earliest)
