"""A crew made again while its actors die under it (actors/placement.py ``made_despite_losses``), without Ray
running: what a restarted coordinator and a roll-back use so that a process killed as a crew is made does not end
the crawl (a chaos run once ended one: the new coordinator's constructor raised, and Ray never remakes such)."""

from __future__ import annotations

import pytest
from ray.exceptions import ActorDiedError, ActorUnschedulableError

from raycrawl.actors.placement import made_despite_losses
from raycrawl.core.checkpoint_sequence import ROLLBACK_ATTEMPTS


class Maker:
    """Makes a crew (a name here) after ``losses`` tries that each lose an actor."""

    def __init__(self, losses: int) -> None:
        self.losses = losses
        self.tries = 0

    def __call__(self) -> str:
        self.tries += 1
        if self.tries <= self.losses:
            raise ActorDiedError() if self.tries % 2 else ActorUnschedulableError("its node is gone")
        return f"crew {self.tries}"


def test_a_crew_is_made_after_its_actors_died_under_the_first_tries() -> None:
    pauses: list[float] = []
    assert made_despite_losses(Maker(2), pauses.append) == "crew 3"
    assert pauses == sorted(pauses) and len(pauses) == 2 and pauses[0] > 0  # (growing: Ray catches up)


def test_the_last_loss_is_the_crawls_once_the_tries_are_spent() -> None:
    pauses: list[float] = []
    maker = Maker(ROLLBACK_ATTEMPTS)
    with pytest.raises((ActorDiedError, ActorUnschedulableError)):
        made_despite_losses(maker, pauses.append)
    assert maker.tries == ROLLBACK_ATTEMPTS and len(pauses) == ROLLBACK_ATTEMPTS - 1


def test_anything_else_is_raised_at_once() -> None:
    def broken() -> str:
        raise ValueError("a bad setting")

    pauses: list[float] = []
    with pytest.raises(ValueError, match="a bad setting"):
        made_despite_losses(broken, pauses.append)
    assert pauses == []
