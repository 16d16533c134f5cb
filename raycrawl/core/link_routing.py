"""A shard's side of the seen-set: the links its results add, through the partitions that own their
fingerprints, to the shards that own their hosts (pure: the shard actor makes the calls).

Shards are the seen-set's only writers (each partition is a dedup actor, ``core/partitions.py``): a shard asks
each partition about its share of a batch in one call, and keeps, per partition, the fingerprints it took as
new since the last checkpoint. A partition that dies is rebuilt exactly from the checkpoint's part and every
shard's log; the links that met the dead partition wait here (``held``) and are asked again of the new one.

New URLs go to their host's owner in one batch per owner. Each shard counts the batches it sent to and received
from every other: with no fetch task running and nothing held, the counts agree exactly when no batch is on
its way -- the coordinator's test that the crawl is at rest (termination, the checkpoint cut).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from raycrawl.core.outlinks import Candidates
from raycrawl.core.partitions import partition_of
from raycrawl.core.records import Known, UrlEntry
from raycrawl.core.sharding import shard_for
from raycrawl.core.urls import fingerprint, host_key


@dataclass(slots=True)
class PartitionShare:
    """One partition's part of a batch of new-link candidates, in the batch's order."""

    fingerprints: list[int]
    entries: list[UrlEntry]


class LinkRouter:
    def __init__(self, shard_id: int, shards: int, partitions: int) -> None:
        self.shard_id = shard_id
        self.shards = shards
        self.partitions = partitions
        self._log: list[list[int]] = [[] for _ in range(partitions)]
        self._held: dict[int, list[PartitionShare]] = {}
        self._touches: dict[int, list[int]] = {}  # fingerprints whose marks to renew, by partition
        self.sent = [0] * shards  # batches of new URLs sent to each shard (this one included)
        self.received = [0] * shards  # ... and received from each

    # --- asking the partitions -----------------------------------------------------------------------

    def split(self, candidates: Candidates, known: Mapping[str, Known] | None = None) -> dict[int, PartitionShare]:
        """The candidates as new entries, by the partition that owns each one's fingerprint; ``known``: what an
        earlier crawl learned about some of them (a recrawl's seeds)."""
        learned = (known or {}).get
        out: dict[int, PartitionShare] = {}
        n = self.partitions
        for url, (depth, parent, chain, requested, kind, link_score) in candidates.items():
            fp = fingerprint(url)
            p = partition_of(fp, n)
            share = out.get(p)
            if share is None:
                share = out[p] = PartitionShare([], [])
            share.fingerprints.append(fp)
            share.entries.append(UrlEntry(url, depth, parent, 0, chain, requested, kind, learned(url), 0.0, link_score))
        return out

    def answered(self, partition: int, share: PartitionShare, answer: bytes) -> list[UrlEntry]:
        """The partition's answer (one byte per fingerprint: new or not): the new entries, whose fingerprints are
        logged (a rebuild of the partition needs them)."""
        if len(answer) != len(share.fingerprints):
            raise ValueError(f"partition {partition} answered for {len(answer)} of {len(share.fingerprints)} URLs")
        new = [i for i, is_new in enumerate(answer) if is_new]
        self._log[partition].extend(share.fingerprints[i] for i in new)
        return [share.entries[i] for i in new]

    def touch(self, urls: Iterable[str]) -> None:
        """URLs whose seen marks are to be renewed (an expiring seen-set: core/seen_expiry.py), at the next round."""
        n = self.partitions
        for url in urls:
            fp = fingerprint(url)
            self._touches.setdefault(partition_of(fp, n), []).append(fp)

    def take_touches(self) -> dict[int, list[int]]:
        touches, self._touches = self._touches, {}
        return touches

    def hold(self, partition: int, share: PartitionShare) -> None:
        """The partition did not answer (it died): its share waits for the partition's rebuild."""
        self._held.setdefault(partition, []).append(share)

    def take_held(self) -> dict[int, list[PartitionShare]]:
        held, self._held = self._held, {}
        return held

    @property
    def held(self) -> int:
        """Links waiting for a partition's rebuild."""
        return sum(len(s.entries) for shares in self._held.values() for s in shares)

    def held_partitions(self) -> list[int]:
        return sorted(self._held)

    def log(self, partition: int) -> list[int]:
        """Fingerprints this shard took as new in ``partition`` since the last checkpoint."""
        return list(self._log[partition])

    def checkpointed(self) -> None:
        """A committed checkpoint holds every partition now: the logs start again."""
        self._log = [[] for _ in range(self.partitions)]

    # --- to the owners -------------------------------------------------------------------------------

    def owner(self, url: str) -> int:
        """The shard that owns the URL's host."""
        return shard_for(host_key(url), self.shards)

    def by_owner(self, entries: Sequence[UrlEntry]) -> dict[int, list[UrlEntry]]:
        out: dict[int, list[UrlEntry]] = {}
        for entry in entries:
            out.setdefault(shard_for(host_key(entry.url), self.shards), []).append(entry)
        for owner in out:
            self.sent[owner] += 1
        return out

    def got(self, sender: int) -> None:
        self.received[sender] += 1


def all_delivered(sent: Sequence[Sequence[int]], received: Sequence[Sequence[int]]) -> bool:
    """No batch of URLs on its way between shards: what each shard sent to each other is what that one received
    from it. Exact when read while nothing can send (no fetch task running, no link held, no seed being added)."""
    return all(sent[a][b] == received[b][a] for a in range(len(sent)) for b in range(len(sent[a])))
