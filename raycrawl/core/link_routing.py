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


# URLs a shard keeps, sent and got, between two checkpoints for a lost peer's rebuild (~300 B each); past it (a crawl
# with rare checkpoints) the logs stop and a lost shard rolls the crawl back instead
SINCE_CUT_BOUND = 500_000


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
        # Since the last committed checkpoint, for a shard that is lost and rebuilt from it: the URLs sent to each
        # other shard (sent to its successor again) and received from each (the lost one's marks that arrived)
        self._sent_since: dict[int, list[UrlEntry]] = {}
        self._got_since: dict[int, list[str]] = {}
        self._since_kept = 0  # URLs in both
        self.since_complete = True  # False: past SINCE_CUT_BOUND, the logs stopped until the next checkpoint
        self.incarnation = 0  # this shard's: 0, and one more each time it is rebuilt
        self.peer_incarnations = [0] * shards  # URLs from an older incarnation of a shard (late, dead) are dropped
        # Fingerprints this shard's lost predecessor took as new since the checkpoint it was rebuilt from, whose
        # URLs no shard holds: each is new once more when found again (its page fetched again), to this shard only
        self.reclaim: set[int] = set()

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
        if self.reclaim:
            again = [i for i, fp in enumerate(share.fingerprints) if not answer[i] and fp in self.reclaim]
            self.reclaim.difference_update(share.fingerprints[i] for i in again)
            new = sorted(new + again)
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
        """A committed checkpoint holds every partition and shard now: the logs start again."""
        self._log = [[] for _ in range(self.partitions)]
        self._sent_since, self._got_since = {}, {}
        self._since_kept, self.since_complete = 0, True

    # --- to the owners -------------------------------------------------------------------------------

    def owner(self, url: str) -> int:
        """The shard that owns the URL's host."""
        return shard_for(host_key(url), self.shards)

    def by_owner(self, entries: Sequence[UrlEntry]) -> dict[int, list[UrlEntry]]:
        out: dict[int, list[UrlEntry]] = {}
        for entry in entries:
            out.setdefault(shard_for(host_key(entry.url), self.shards), []).append(entry)
        for owner, batch in out.items():
            self.sent[owner] += 1
            if owner != self.shard_id and self._keep(len(batch)):
                self._sent_since.setdefault(owner, []).extend(batch)
        return out

    def _keep(self, urls: int) -> bool:
        """Whether ``urls`` more fit in the logs since the checkpoint (once they do not, no more are kept)."""
        if self.since_complete and self._since_kept + urls > SINCE_CUT_BOUND:
            self.since_complete = False
            self._sent_since, self._got_since = {}, {}
        self._since_kept += urls
        return self.since_complete

    def got(self, sender: int, entries: Sequence[UrlEntry], incarnation: int = 0) -> bool:
        """A batch of URLs from ``sender`` (of its ``incarnation``); False: from a sender since rebuilt, dropped."""
        if incarnation < self.peer_incarnations[sender]:
            return False
        self.received[sender] += 1
        if sender != self.shard_id and self._keep(len(entries)):
            self._got_since.setdefault(sender, []).extend(entry.url for entry in entries)
        return True

    # --- a lost shard ----------------------------------------------------------------------------------

    def hand_over(self, lost: int, incarnation: int) -> Handover:
        """Shard ``lost`` is rebuilt as ``incarnation``: what this shard sent it and got from it since the last
        checkpoint, and the batch counts its successor starts from (later batches of the lost one are dropped)."""
        self.peer_incarnations[lost] = incarnation
        return Handover(
            self.shard_id,
            list(self._sent_since.get(lost, [])),
            [fingerprint(url) for url in self._got_since.get(lost, [])],
            self.sent[lost],
            self.received[lost],
            self.since_complete,
        )

    def succeed(self, handovers: Sequence[Handover], marks: Mapping[int, Sequence[int]], incarnation: int) -> None:
        """This shard is a lost one's successor, restored from the last checkpoint: the batch counts go on from
        what the others sent and got (and what they sent here since their hand-overs), and what its predecessor
        took as new since (``marks``, by partition) is its own log again; those no other shard got are to be found
        again (``reclaim``)."""
        self.incarnation = incarnation
        got_by_others: set[int] = set()
        for h in handovers:
            # (a live shard sends here from its hand-over on: what came before this call is counted on top)
            self.received[h.shard] += h.sent_to_lost
            self.sent[h.shard] = h.got_from_lost
            got_by_others.update(h.got_fingerprints)
        for partition, fps in marks.items():
            self._log[partition] = list(fps)
            self.reclaim.update(fp for fp in fps if fp not in got_by_others)


@dataclass(slots=True)
class Handover:
    """A live shard's part in a lost one's rebuild (``LinkRouter.hand_over``)."""

    shard: int
    sent: list[UrlEntry]  # URLs it sent the lost one since the last checkpoint, to send its successor
    got_fingerprints: list[int]  # the fingerprints of the URLs it got from the lost one since
    sent_to_lost: int  # batches it had sent the lost one ...
    got_from_lost: int  # ... and got from it
    complete: bool = True  # False: its logs since the checkpoint outgrew their bound (SINCE_CUT_BOUND)


def all_delivered(sent: Sequence[Sequence[int]], received: Sequence[Sequence[int]]) -> bool:
    """No batch of URLs on its way between shards: what each shard sent to each other is what that one received
    from it. Exact when read while nothing can send (no fetch task running, no link held, no seed being added)."""
    return all(sent[a][b] == received[b][a] for a in range(len(sent)) for b in range(len(sent[a])))
