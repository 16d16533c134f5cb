"""A shard's lease batches and chaining credits (core/lease_batches.py)."""

from __future__ import annotations

from raycrawl.core.lease_batches import NO_CHAIN, ChainAllowance, LeaseBatches


def test_no_allowance_no_chain() -> None:
    batches = LeaseBatches(run_length=2)
    batches.add(7, [1, 2, 3])
    assert batches.settled([1, 2, 3], now=0.0) == {}  # (the allowance starts at none)
    assert batches.pop(7) == [1, 2, 3]


def test_a_batch_replaces_only_what_it_settled_a_run_at_a_time() -> None:
    batches = LeaseBatches(run_length=3)
    batches.grant(ChainAllowance(None))
    batches.add(1, [10, 11, 12, 13, 14])
    assert batches.settled([10], now=0.0) == {}  # one credit: less than a run, and four still open
    assert batches.settled([11, 12], now=0.0) == {1: 3}  # a run's worth
    batches.chained(1, [20, 21])  # (the shard had only two due)
    assert batches.settled([13], now=0.0) == {}  # credit 2 (1 left + 1), two open
    assert batches.settled([14, 20, 21], now=0.0) == {1: 5}
    assert batches.pop(1) == [10, 11, 12, 13, 14, 20, 21]


def test_a_batch_with_nothing_open_spends_what_credit_it_has() -> None:
    batches = LeaseBatches(run_length=16)
    batches.grant(ChainAllowance(None))
    batches.add(1, [1, 2])
    assert batches.settled([1, 2], now=0.0) == {1: 2}  # (its task would end: it gets what it earned)


def test_the_allowance_bounds_every_batch_together_until_the_next_grant() -> None:
    batches = LeaseBatches(run_length=1)
    batches.grant(ChainAllowance(3))
    batches.add(1, [1, 2])
    batches.add(2, [3, 4])
    assert batches.settled([1, 2, 3, 4], now=0.0) == {1: 2, 2: 1}
    batches.chained(1, [5, 6])
    batches.chained(2, [7])
    assert batches.settled([5, 6, 7], now=0.0) == {}  # spent
    batches.grant(ChainAllowance(None))
    assert batches.settled([], now=0.0) == {}  # (credit is spent by results, not by a grant)
    assert batches.settled([4], now=0.0) == {}  # (already settled: no credit twice)


def test_no_chain_past_the_time_limit_or_when_taken_back() -> None:
    batches = LeaseBatches(run_length=1)
    batches.grant(ChainAllowance(None, until=100.0))
    batches.add(1, [1, 2])
    assert batches.settled([1], now=99.0) == {1: 1}
    assert batches.settled([2], now=100.0) == {}
    batches.grant(NO_CHAIN)
    batches.add(2, [3])
    assert batches.settled([3], now=0.0) == {}
    batches.grant(ChainAllowance(None))
    batches.add(3, [4])
    batches.pop(3)  # (its task ended or died: a late answer to one of its leases earns nothing)
    assert batches.settled([4], now=0.0) == {}
    assert sorted(batches) == [1, 2]
