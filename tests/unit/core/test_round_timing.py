"""When the next round starts (core/round_timing.py): the first need wins, never sooner than MIN_ROUND."""

from __future__ import annotations

import pytest

from raycrawl.core.round_timing import (
    MAX_GATHER,
    MAX_GATHER_CHAINED,
    MAX_IDLE_WAIT,
    MIN_ROUND,
    RoundNeeds,
    round_window,
)

STARTED = 1000.0
NOW = STARTED + 0.01  # (the round's calls took a little while)


def needs(**changed: object) -> RoundNeeds:
    base: dict[str, object] = {"dues": [], "lease_horizon": 0.3, "staged_earliest": None, "launch_slack": 0.05,
                               "leased": False, "chains_carry": False}  # fmt: skip
    return RoundNeeds(**(base | changed))  # type: ignore[arg-type]


def test_an_idle_crawl_has_a_round_every_so_often() -> None:
    assert round_window(NOW, STARTED, needs()) == (STARTED + MIN_ROUND, NOW + MAX_IDLE_WAIT)


def test_a_host_coming_due_is_leased_a_horizon_ahead() -> None:
    assert round_window(NOW, STARTED, needs(dues=[NOW + 0.9, NOW + 0.5]))[1] == pytest.approx(NOW + 0.5 - 0.3)


def test_a_staged_batch_is_launched_just_before_its_first_url_is_due() -> None:
    assert round_window(NOW, STARTED, needs(staged_earliest=NOW + 0.2))[1] == pytest.approx(NOW + 0.2 - 0.05)


def test_answers_are_gathered_briefly_and_longer_while_the_shards_chain() -> None:
    assert round_window(NOW, STARTED, needs(leased=True))[1] == STARTED + MAX_GATHER
    assert round_window(NOW, STARTED, needs(leased=True, chains_carry=True))[1] == STARTED + MAX_GATHER_CHAINED
    # (chaining without URLs out asks nothing of the rounds)
    assert round_window(NOW, STARTED, needs(chains_carry=True))[1] == NOW + MAX_IDLE_WAIT


def test_no_round_starts_sooner_than_min_round_after_the_last() -> None:
    overdue = needs(dues=[NOW - 5.0], staged_earliest=NOW - 1.0, leased=True)
    assert round_window(NOW, STARTED, overdue) == (STARTED + MIN_ROUND, STARTED + MIN_ROUND)
