"""The coordinator's decisions about checkpoints and roll-backs (issue 49: pure, with the clock and the store kept
in actors/coordinator.py, which makes the calls).

- **Epochs**: every checkpoint attempt takes the next id, and keeps it even when it fails -- the parts an attempt
  wrote have names of their own, so a failed attempt's can never be mistaken for the next one's. The WARC files
  fetch tasks write carry the id of the checkpoint their pages will belong to. A restore continues after the
  checkpoint restored; a crawl rolled back to its start begins at 1 again.
- **A failed cut** (the output or the checkpoint store refused it) is counted, said in the status until a cut
  succeeds, and tried again at the next interval: nothing is lost, the interval's output stays buffered.
- **A roll-back** waits for the fetches under way to end (at most ``drain_seconds``), then makes the actors anew and
  restores; a try that meets a dying node is tried again after a growing pause, ``ROLLBACK_ATTEMPTS`` times in all.
"""

from __future__ import annotations

from dataclasses import dataclass, field

ROLLBACK_ATTEMPTS = 5
MAX_ROLLBACK_PAUSE = 10.0  # seconds between two tries of a roll-back, at most


@dataclass
class CheckpointSequence:
    next_epoch: int = 1  # the id of the next checkpoint
    error: str | None = None  # why the last cut failed (None: it succeeded, or none was tried)
    taken: list[dict[str, float]] = field(default_factory=list)  # the checkpoints committed: id, seconds, bytes ...

    def begin(self) -> int:
        """The id of the checkpoint being cut now (the next one gets another, whatever becomes of this one)."""
        epoch = self.next_epoch
        self.next_epoch += 1
        return epoch

    def failed(self, epoch: int, why: str) -> None:
        self.error = f"checkpoint {epoch} failed, will retry: {why}"

    def committed(self, epoch: int, taken: dict[str, float], problem: str | None = None) -> None:
        """Checkpoint ``epoch`` is the crawl's now; ``problem``: what went wrong after it was (e.g. stats.json)."""
        self.error = problem
        self.taken.append({"id": epoch, **taken})

    def restored(self, checkpoint_id: int | None) -> None:
        """The crawl was restored from checkpoint ``checkpoint_id`` (None: rolled back to its start)."""
        self.next_epoch = 1 if checkpoint_id is None else checkpoint_id + 1


def drain_seconds(fetch_timeout: float) -> float:
    """How long a roll-back waits for the fetches under way before it restores (so no old request lands after):
    past a fetch's timeout, with room for its retries' connects."""
    return 4 * fetch_timeout + 30


def rollback_pause(attempt: int) -> float | None:
    """The pause before try ``attempt + 1`` of a roll-back whose try ``attempt`` (from 0) met a dying node; None:
    give up (the error is the crawl's). Ray notices a lost node only after missed heartbeats: each pause lets it."""
    if attempt >= ROLLBACK_ATTEMPTS - 1:
        return None
    return min(2.0**attempt, MAX_ROLLBACK_PAUSE)
