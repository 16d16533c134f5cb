"""The seen-set as the coordinator uses it: ``count`` dedup actors, each owning the fingerprints ``fp % count``
(core/partitions.py), spread over the nodes, so no single actor holds or checks every URL.

The coordinator is every partition's only writer, so it logs, per partition, the fingerprints taken as new since
the last checkpoint: a partition that dies is rebuilt exactly (that checkpoint's part, then its log) and asked
again. One call per partition per batch, all awaited together.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ray
from ray.exceptions import RayActorError

from raycrawl.actors.dedup import pack_fingerprints
from raycrawl.core.partitions import merge_answers, merge_stats, split

# The checkpoint's seen-set parts, one per partition, or None when there is no checkpoint yet.
CheckpointParts = Callable[[], list[bytes] | None]


class SeenPartitions:
    def __init__(self, actor_class: Any, kind: str, capacity: int, error_rate: float, count: int) -> None:
        self.count = count
        self._class, self._args = actor_class, (kind, max(1000, capacity // count), error_rate)
        self.actors: list[Any] = [self._make() for _ in range(count)]
        self._log: list[list[bytes]] = [[] for _ in range(count)]
        self.recoveries = 0

    def _make(self) -> Any:
        return self._class.options(scheduling_strategy="SPREAD").remote(*self._args)

    def add_new(self, fps: list[int], checkpoint: CheckpointParts) -> bytes:
        """One byte per fingerprint: 1 if it was new (it is seen now). A partition that died is rebuilt and asked
        again."""
        parts = split(fps, self.count)
        asked = [i for i, part in enumerate(parts) if part]
        packed = {i: pack_fingerprints(parts[i]) for i in asked}
        refs = [self.actors[i].add_new.remote(packed[i]) for i in asked]
        try:
            answers = dict(zip(asked, ray.get(refs), strict=True))
        except RayActorError:
            answers = self._answers_after_failure(asked, refs, packed, checkpoint)
        for i in asked:
            new = pack_fingerprints([fp for fp, is_new in zip(parts[i], answers[i], strict=True) if is_new])
            if new:
                self._log[i].append(new)
        return merge_answers(fps, [answers.get(i, b"") for i in range(self.count)], self.count)

    def _answers_after_failure(
        self, asked: list[int], refs: list[Any], packed: dict[int, bytes], checkpoint: CheckpointParts
    ) -> dict[int, bytes]:
        ray.wait(refs, num_returns=len(refs))  # every answer or failure is in: nothing below waits on the network
        answers: dict[int, bytes] = {}
        dead: list[int] = []
        for i, ref in zip(asked, refs, strict=True):
            try:
                answers[i] = ray.get(ref)
            except RayActorError:
                dead.append(i)
        self.recover(dead, checkpoint)
        again = ray.get([self.actors[i].add_new.remote(packed[i]) for i in dead])
        answers.update(zip(dead, again, strict=True))
        return answers

    def recover(self, dead: list[int], checkpoint: CheckpointParts) -> None:
        """New actors for the ``dead`` partitions: the checkpoint's part, then what each took as new since."""
        if not dead:
            return
        self.recoveries += len(dead)
        blobs = checkpoint()
        calls = []
        for i in dead:
            self.actors[i] = self._make()
            if blobs is not None:
                calls.append(self.actors[i].restore.remote(blobs[i]))
            if self._log[i]:
                calls.append(self.actors[i].add_new.remote(b"".join(self._log[i])))
        ray.get(calls)

    def recover_all(self, checkpoint: CheckpointParts) -> None:
        """Every partition that does not answer (a checkpoint's snapshot met a dead one)."""
        refs = [actor.stats.remote() for actor in self.actors]
        ray.wait(refs, num_returns=len(refs))
        dead = []
        for i, ref in enumerate(refs):
            try:
                ray.get(ref)
            except RayActorError:
                dead.append(i)
        self.recover(dead, checkpoint)

    def snapshot_refs(self) -> list[Any]:
        return [actor.snapshot.remote() for actor in self.actors]

    def restore_refs(self, blobs: list[bytes]) -> list[Any]:
        return [actor.restore.remote(blob) for actor, blob in zip(self.actors, blobs, strict=True)]

    def stats_refs(self) -> list[Any]:
        return [actor.stats.remote() for actor in self.actors]

    @staticmethod
    def merged_stats(answers: list[dict[str, Any]]) -> dict[str, Any]:
        return merge_stats(answers)

    def checkpointed(self) -> None:
        """A checkpoint holds every partition now: the logs start again."""
        self._log = [[] for _ in range(self.count)]

    def kill(self) -> None:
        for actor in self.actors:
            ray.kill(actor)
