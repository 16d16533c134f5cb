"""The roll-back's cause names what was lost (core/losses.py)."""

from raycrawl.core.losses import describe_loss


def test_names_the_shards_and_partitions_found_lost() -> None:
    assert describe_loss([1], []) == "shard 1 lost"
    assert describe_loss([2, 0], [0]) == "shards 0, 2 and partition 0 lost"
    assert describe_loss([], [3, 1]) == "partitions 1, 3 lost"


def test_says_when_the_loss_met_a_cut_or_took_output() -> None:
    assert describe_loss([0], [], during_cut=True) == "shard 0 lost during a checkpoint cut"
    assert describe_loss([0], [1], output_lost=True) == "a node lost with output"


def test_a_loss_of_another_actor_is_not_called_a_shard() -> None:
    # (the call that failed met another actor of the crawl -- its fetch launcher, say: every shard answers)
    assert describe_loss([], []) == "a crew actor lost (every shard and partition answers)"
