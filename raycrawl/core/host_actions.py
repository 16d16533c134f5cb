"""What an operator can do to one host of a running crawl, as values: pause it, resume it, fix its delay.

A value travels from the caller (``Crawl.pause_host`` ..., the CLI's verbs) through the coordinator's client to
the shard that owns the host, which applies it to its frontier. Nothing on the way dispatches on a name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class HostControls(Protocol):
    """What a frontier shard offers for one host (core/frontier.py); False: it does not know the host."""

    def pause_host(self, host: str, reason: str = ...) -> bool: ...
    def resume_host(self, host: str) -> bool: ...
    def set_delay(self, host: str, seconds: float | None) -> bool: ...


@dataclass(frozen=True, slots=True)
class PauseHost:
    """Send the host nothing more; its URLs stay queued."""

    host: str
    reason: str = "paused by operator"

    def apply(self, shard: HostControls) -> bool:
        return shard.pause_host(self.host, self.reason)


@dataclass(frozen=True, slots=True)
class ResumeHost:
    host: str

    def apply(self, shard: HostControls) -> bool:
        return shard.resume_host(self.host)


@dataclass(frozen=True, slots=True)
class SetDelay:
    """Fix the host's delay in seconds; None: back to the model (configured, robots.txt, latency)."""

    host: str
    seconds: float | None

    def __post_init__(self) -> None:
        if self.seconds is not None and not (0 <= self.seconds < float("inf")):
            raise ValueError("seconds must be >= 0, or None")

    def apply(self, shard: HostControls) -> bool:
        return shard.set_delay(self.host, self.seconds)


HostAction = PauseHost | ResumeHost | SetDelay
