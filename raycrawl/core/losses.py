"""What a roll-back says it was for: the crew actors found lost (pure; the coordinator looks, this words it).

A roll-back's recovery note is what an operator reads first after a loss (``raycrawl status``, stats.json): it names
the shards and seen-set partitions that did not answer, and whether the loss met a checkpoint cut -- the cases a
shard or partition is not rebuilt alone (docs/architecture.md, "Invariants": a lost shard).
"""

from __future__ import annotations

from collections.abc import Sequence


def describe_loss(
    shards: Sequence[int], partitions: Sequence[int], *, output_lost: bool = False, during_cut: bool = False
) -> str:
    """E.g. "shard 1 lost during a checkpoint cut", "shards 0, 2 and partition 0 lost", "a node lost with output"."""
    if output_lost:
        return "a node lost with output"
    named = [_named("shard", shards), _named("partition", partitions)]
    what = " and ".join(n for n in named if n) or "a crew actor lost (every shard and partition answers)"
    if shards or partitions:
        what += " lost"
    return what + (" during a checkpoint cut" if during_cut else "")


def _named(kind: str, which: Sequence[int]) -> str:
    if not which:
        return ""
    return f"{kind}{'s' if len(which) > 1 else ''} {', '.join(map(str, sorted(which)))}"
