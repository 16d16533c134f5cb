"""How the coordinator spreads a round's lease budget over the shards."""

from __future__ import annotations


def split_quota(total: int, parts: int, rotation: int) -> list[int]:
    """``total`` spread over ``parts`` as evenly as possible; the remainder goes to rotating parts."""
    base, extra = divmod(max(0, total), parts)
    return [base + (1 if (i - rotation) % parts < extra else 0) for i in range(parts)]
