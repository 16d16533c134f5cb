"""The coordinator's checkpoint and roll-back decisions (core/checkpoint_sequence.py), without Ray."""

from __future__ import annotations

from raycrawl.core.checkpoint_sequence import (
    MAX_ROLLBACK_PAUSE,
    ROLLBACK_ATTEMPTS,
    CheckpointSequence,
    drain_seconds,
    rollback_pause,
)


def test_every_attempt_takes_its_own_id_and_a_failure_is_said_until_a_cut_succeeds() -> None:
    seq = CheckpointSequence()
    assert seq.next_epoch == 1 and seq.begin() == 1
    seq.committed(1, {"seconds": 0.5})
    second = seq.begin()
    seq.failed(second, "output: disk full")
    assert seq.error == "checkpoint 2 failed, will retry: output: disk full"
    third = seq.begin()  # (the failed attempt's id is never used again: its parts have names of their own)
    assert third == 3 and seq.next_epoch == 4
    seq.committed(third, {"seconds": 0.25}, problem=None)
    assert seq.error is None and [c["id"] for c in seq.taken] == [1, 3]
    seq.committed(seq.begin(), {"seconds": 0.1}, problem="stats.json: refused")
    assert seq.error == "stats.json: refused"


def test_a_restore_goes_on_after_the_checkpoint_restored_and_a_rollback_to_the_start_begins_at_one() -> None:
    seq = CheckpointSequence()
    for _ in range(5):
        seq.begin()
    seq.restored(3)
    assert seq.begin() == 4
    seq.restored(None)
    assert seq.begin() == 1


def test_a_rollback_waits_past_a_fetchs_timeout_and_tries_again_after_growing_pauses_then_gives_up() -> None:
    assert drain_seconds(30.0) > 30.0 * 3
    pauses = [rollback_pause(attempt) for attempt in range(ROLLBACK_ATTEMPTS)]
    assert pauses[-1] is None and None not in pauses[:-1]
    waits = [p for p in pauses if p is not None]
    assert waits == sorted(waits) and max(waits) <= MAX_ROLLBACK_PAUSE and len(waits) == ROLLBACK_ATTEMPTS - 1
