"""The crawl's counters, and the summary built from them (stats.json, the progress line, ``status()``)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from raycrawl.core.records import FETCH_OUTCOMES

# The pages the recent harvest rate is taken over: a focused crawl's steering shows there long before it moves the
# rate since the start (which the first, unsteered pages weigh down for the whole crawl).
HARVEST_WINDOW = 100


_COUNTERS = ("outcomes", "statuses", "dropped", "events", "fetch_nodes", "faults", "verdicts", "verdict_rules")


@dataclass
class CrawlStats:
    started_at: float
    outcomes: Counter[str] = field(default_factory=Counter)
    statuses: Counter[str] = field(default_factory=Counter)
    dropped: Counter[str] = field(default_factory=Counter)  # links not queued, by rule
    events: Counter[str] = field(default_factory=Counter)  # retries, stale acks, failed tasks ...
    bytes: int = 0
    tasks: int = 0
    task_urls: int = 0
    robots_fetches: int = 0
    seeds: int = 0
    peak_tasks_in_flight: int = 0
    fetch_nodes: Counter[str] = field(default_factory=Counter)  # URLs fetched per Ray node
    faults: Counter[str] = field(default_factory=Counter)  # exceptions the per-URL fault boundary caught, by class
    verdicts: Counter[str] = field(default_factory=Counter)  # pages by their extraction verdict (core/contract.py)
    verdict_rules: Counter[str] = field(default_factory=Counter)  # "rejected: required:title" ...: what said no
    revisit_lag: float = 0.0  # the latest a revisit was sent after its due time, in seconds (a maximum, not a sum)
    # With an extractor: the last HARVEST_WINDOW pages fetched, oldest first, "1" for each accepted and "0" for each
    # other (a string: it goes to checkpoints as it is, and a shard's reach the coordinator in the order settled)
    recent: str = ""

    @property
    def pages_fetched(self) -> int:
        return sum(self.outcomes[outcome] for outcome in FETCH_OUTCOMES)

    @property
    def accepted(self) -> int:
        return self.verdicts["accepted"]

    @property
    def harvest_rate(self) -> float:
        """Accepted pages per page fetched (what a data crawl is judged by, not pages attempted)."""
        return self.accepted / self.pages_fetched if self.pages_fetched else 0.0

    def note_page(self, accepted: bool) -> None:
        """One more page fetched, with an extractor (``recent``)."""
        self.recent = (self.recent + ("1" if accepted else "0"))[-HARVEST_WINDOW:]

    @property
    def recent_harvest_rate(self) -> float:
        """Accepted pages per page fetched over the last HARVEST_WINDOW (fewer at the start)."""
        return self.recent.count("1") / len(self.recent) if self.recent else 0.0

    @property
    def records(self) -> int:
        return sum(self.outcomes.values())

    def to_dict(self, now: float) -> dict[str, Any]:
        return {
            "elapsed": now - self.started_at,
            "outcomes": dict(self.outcomes),
            "statuses": dict(self.statuses),
            "dropped": dict(self.dropped),
            "events": dict(self.events),
            "fetch_nodes": dict(self.fetch_nodes),
            "faults": dict(self.faults),
            "verdicts": dict(self.verdicts),
            "verdict_rules": dict(self.verdict_rules),
            "bytes": self.bytes,
            "tasks": self.tasks,
            "task_urls": self.task_urls,
            "robots_fetches": self.robots_fetches,
            "seeds": self.seeds,
            "peak_tasks_in_flight": self.peak_tasks_in_flight,
            "revisit_lag": self.revisit_lag,
            "recent": self.recent,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any], now: float) -> CrawlStats:
        """Counters from a checkpoint; elapsed time continues (the time the crawl was down is not counted)."""
        stats = cls(started_at=now - d["elapsed"])
        for name in ("outcomes", "statuses", "dropped", "events"):
            getattr(stats, name).update(d[name])
        stats.fetch_nodes.update(d.get("fetch_nodes", {}))
        stats.faults.update(d.get("faults", {}))
        stats.verdicts.update(d.get("verdicts", {}))
        stats.verdict_rules.update(d.get("verdict_rules", {}))
        for name in ("bytes", "tasks", "task_urls", "robots_fetches", "seeds", "peak_tasks_in_flight"):
            setattr(stats, name, d[name])
        stats.revisit_lag = d.get("revisit_lag", 0.0)
        stats.recent = d.get("recent", "")
        return stats

    def add(self, other: CrawlStats) -> None:
        """Counters another part of the crawl moved (a shard's, since it last reported) added to these."""
        for name in _COUNTERS:
            getattr(self, name).update(getattr(other, name))
        for name in ("bytes", "tasks", "task_urls", "robots_fetches", "seeds"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.revisit_lag = max(self.revisit_lag, other.revisit_lag)
        if other.recent:
            self.recent = (self.recent + other.recent)[-HARVEST_WINDOW:]

    def take_back(self, other: CrawlStats) -> None:
        """Counters a part of the crawl moved that are undone (a lost shard's since the checkpoint it is rebuilt
        from: its pages are fetched again, and counted then)."""
        for name in _COUNTERS:
            counter = getattr(self, name)
            counter.subtract(getattr(other, name))
            for key in [k for k, n in counter.items() if n <= 0]:
                del counter[key]
        for name in ("bytes", "tasks", "task_urls", "robots_fetches", "seeds"):
            setattr(self, name, max(0, getattr(self, name) - getattr(other, name)))

    def count_task(self, urls: int) -> None:
        self.tasks += 1
        self.task_urls += urls

    def summary(self, now: float) -> dict[str, Any]:
        elapsed = max(now - self.started_at, 1e-9)
        return {
            "elapsed_s": round(elapsed, 3),
            "records": self.records,
            "outcomes": dict(self.outcomes),
            "statuses": dict(self.statuses),
            "pages_per_s": round(self.pages_fetched / elapsed, 2),
            "bytes": self.bytes,
            "fetch_tasks": self.tasks,
            "urls_per_task": round(self.task_urls / self.tasks, 2) if self.tasks else 0.0,
            "robots_fetches": self.robots_fetches,
            "dropped_links": dict(self.dropped),
            "fetch_nodes": dict(self.fetch_nodes),
            "faults": dict(self.faults),
            "events": dict(self.events),
            "seeds": self.seeds,
            "peak_tasks_in_flight": self.peak_tasks_in_flight,
            "revisit_lag_max_s": round(self.revisit_lag, 3),
            "verdicts": dict(self.verdicts),
            "verdict_rules": dict(self.verdict_rules),
            "accepted": self.accepted,
            "harvest_rate": round(self.harvest_rate, 4),
            **self.harvest_recent(),
        }

    def harvest_recent(self) -> dict[str, Any]:
        """The recent harvest rate, and over how many pages (with an extractor: else nothing)."""
        if not self.recent:
            return {}
        return {"harvest_rate_recent": round(self.recent_harvest_rate, 4), "harvest_window": len(self.recent)}
