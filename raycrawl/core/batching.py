"""How the coordinator spreads a round's lease budget over the shards."""

from __future__ import annotations

from collections.abc import Sequence


def split_quota(total: int, parts: int, rotation: int, first: Sequence[int] = ()) -> list[int]:
    """``total`` spread over ``parts`` as evenly as possible; the remainder goes to the parts in ``first`` in
    that order, then to rotating parts."""
    base, extra = divmod(max(0, total), parts)
    quotas = [base] * parts
    order = dict.fromkeys([*first, *((rotation + i) % parts for i in range(parts))])  # (each part once, in order)
    for part in list(order)[:extra]:
        quotas[part] += 1
    return quotas
