"""A seen-set partition's state in the crawl's storage, copied as it changes (docs/architecture.md, "Checkpoints"):
a base -- the whole partition at some cut -- and the changes after it (core/seen_partition.py), immutable files
under ``seen/part-NNN/`` of the output (a directory or a bucket), named in order by the checkpoint
(adapters/segments.py).

At a checkpoint the partition writes one file: the fingerprints added and the captures set since the last one, so
the cut costs what changed, not what was ever seen. When those files outgrow the base twice over, the state as of
that cut is written whole as a new base, on a thread (the fingerprints are copied at the cut, in memory: ~10 ms per
million; the writing is off the pause); the checkpoint after it is written names the new base and only the changes
after it. Fingerprints are random bytes: the files are not compressed (the captures inside them are).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable

from raycrawl.adapters.segments import SegmentChain, read_named
from raycrawl.adapters.storage import Storage, StorageError
from raycrawl.core.seen_partition import SeenPartition

MIN_BASE_BYTES = 16 << 20  # changes are replayed as they are until they outgrow the base, and at least this much
_REFS = b"raycrawl-seen-files\x00"  # a checkpoint part that names files (else it is the partition, whole)


def refs_part(refs: list[str]) -> bytes:
    return _REFS + json.dumps(refs).encode()


def refs_of(part: bytes) -> list[str] | None:
    """The files a checkpoint part names, or None for a part that is the partition itself."""
    return list(json.loads(part[len(_REFS) :])) if part.startswith(_REFS) else None


class SeenSegments:
    def __init__(self, storage: Storage, partition: int, state: SeenPartition) -> None:
        self.storage = storage
        self.state = state
        self.chain = SegmentChain(storage, f"seen/part-{partition:03d}")
        self._unwritten: list[bytes] = []  # changes whose write failed: written with the next checkpoint
        self._base: _BaseJob | None = None
        self.written = 0  # bytes the last checkpoint wrote

    def checkpoint(self) -> bytes:
        """At a cut: write what changed since the last one; the checkpoint part naming the files (raises
        StorageError: then nothing is lost, the changes go with the next checkpoint)."""
        self._adopt_base()
        change = self.state.take_changes()
        pending = self._unwritten + ([change] if change else [])
        self._unwritten, self.written = [], 0
        for i, data in enumerate(pending):
            name = self.chain.name("log", ".bin")
            try:
                written = self.storage.put_ranges(name, [data])
            except StorageError:
                self._unwritten = pending[i:]
                raise
            self.chain.logs.append((name, written))
            self.written += written
        if self._base is None and self.chain.logs_outgrow_base(MIN_BASE_BYTES):
            self._base = _BaseJob(
                self.storage, self.chain.name("base", ".bin"), self.state.whole_later(), len(self.chain.logs)
            )
        return refs_part(self.chain.offer())

    def committed(self) -> None:
        self.chain.committed()

    def restore(self, refs: list[str]) -> None:
        """The partition as the files ``refs`` (a checkpoint's) make it; they become this partition's files, and
        files of the directory that no one names (a lost actor's) go."""
        datas = [read_named(self.storage, name) for name in refs]
        based = bool(refs) and "/base-" in refs[0]
        self.state.restore(datas[0] if based else None, datas[1:] if based else datas)
        self.chain.adopt(refs)

    def _adopt_base(self) -> None:
        job = self._base
        if job is None or job.thread.is_alive():
            return
        self._base = None
        if job.error is None:  # (a base not written is not adopted: the changes it would replace stay)
            self.chain.based(job.name, job.written, job.covers)

    def close(self) -> None:
        if self._base is not None:
            self._base.thread.join()


class _BaseJob:
    """The whole state as taken at the cut (``whole`` encodes it), encoded and written on a thread."""

    def __init__(self, storage: Storage, name: str, whole: Callable[[], bytes], covers: int) -> None:
        self.name, self.covers = name, covers  # (the files it replaces: the base and the logs written so far)
        self.written = 0
        self.error: str | None = None
        self.thread = threading.Thread(target=self._run, args=(storage, whole), daemon=True, name="seen-base")
        self.thread.start()

    def _run(self, storage: Storage, whole: Callable[[], bytes]) -> None:
        try:
            self.written = storage.put_ranges(self.name, [whole()])
        except StorageError as exc:
            self.error = str(exc)
