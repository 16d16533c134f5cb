"""A shard's stored queue in the crawl's storage, copied as it changes (docs/architecture.md, "Checkpoints"):
a base -- every stored row at some cut -- and the logs of what changed after it (core/queue_log.py), each an
immutable, zlib-compressed file under ``frontier/shard-NNN/`` of the output (a directory or a bucket).

At a checkpoint the shard writes one log: what changed since the last one, so the pause for the cut costs what
changed, not what is queued. A checkpoint names the files to replay (``refs``), base first. When the logs after the
base outgrow it, a new base is written from a consistent view of the store fixed at a cut (LMDB keeps it while the
shard goes on writing) on a thread of its own, off the pause; the checkpoint after it is done names the new base
and only the logs after that cut. Files no committed checkpoint names any more are deleted once a newer checkpoint
commits; a resume deletes those a lost run left.
"""

from __future__ import annotations

import itertools
import threading
import uuid
import zlib
from collections.abc import Iterable, Iterator

from raycrawl.adapters.storage import Storage, StorageError
from raycrawl.core.queue_log import LoggedQueueStore, encode_rows, replay
from raycrawl.core.queue_store import QueueStore

MIN_BASE_BYTES = 16 << 20  # logs are replayed as they are until they outgrow the base, and at least this much


class QueueSegments:
    def __init__(self, storage: Storage, shard_id: int, store: LoggedQueueStore) -> None:
        self.storage = storage
        self.directory = f"frontier/shard-{shard_id:03d}"
        self.store = store
        self._run = uuid.uuid4().hex[:8]  # (files of this actor: a rebuilt shard never writes over a lost one's)
        self._numbers = itertools.count(1)
        self._base: tuple[str, int] | None = None  # (name, bytes)
        self._logs: list[tuple[str, int]] = []  # after the base, oldest first
        self._unwritten = b""  # a log whose write failed: written with the next one
        self._compaction: _Compaction | None = None
        self._committed: set[str] = set()
        self._offered: list[str] = []  # what the last checkpoint named (committed once it commits)

    @property
    def refs(self) -> list[str]:
        return ([self._base[0]] if self._base else []) + [name for name, _ in self._logs]

    def checkpoint(self) -> list[str]:
        """At a cut: write what changed since the last checkpoint; the files a restore replays (raises
        StorageError: then nothing is lost, the log goes with the next checkpoint)."""
        self._adopt_compaction()
        log = self._unwritten + self.store.take_log()
        self._unwritten = b""
        if log:
            name = self._name("log")
            try:
                written = self._write(name, [log])
            except StorageError:
                self._unwritten = log
                raise
            self._logs.append((name, written))
        if self._compaction is None and sum(size for _, size in self._logs) > max(
            MIN_BASE_BYTES, self._base[1] if self._base else 0
        ):
            self._compaction = _Compaction(self, self._name("base"), len(self._logs))
        self._offered = self.refs
        return self._offered

    def committed(self) -> None:
        """The last checkpoint committed: files only older ones named go."""
        offered = set(self._offered)
        self.storage.delete(sorted(self._committed - offered))
        self._committed = offered

    def restore(self, refs: list[str], into: QueueStore) -> None:
        """Replay ``refs`` (a checkpoint's) into the (empty) store behind the log; they become this shard's files,
        and files of the directory that no one names (a lost run's) go."""
        replay_files(self.storage, refs, into)
        sizes = [(name, 0) for name in refs]
        if refs and "/base-" in refs[0]:
            self._base, self._logs = sizes[0], sizes[1:]
        else:
            self._logs = sizes
        self._committed, self._offered = set(refs), list(refs)
        named = set(refs)
        strays = [f"{self.directory}/{n}" for n in self.storage.list(self.directory)]
        self.storage.delete(sorted(n for n in strays if n not in named))

    def _name(self, kind: str) -> str:
        return f"{self.directory}/{kind}-{self._run}-{next(self._numbers):06d}.z"

    def _write(self, name: str, pieces: Iterable[bytes]) -> int:
        def compressed() -> Iterator[bytes]:
            z = zlib.compressobj(1)  # (fast: this runs in the pause for the cut)
            for piece in pieces:
                yield z.compress(piece)
            yield z.flush()

        return self.storage.put_ranges(name, compressed())

    def _adopt_compaction(self) -> None:
        job = self._compaction
        if job is None or job.thread.is_alive():
            return
        self._compaction = None
        if job.error is None:
            self._base, self._logs = (job.name, job.written), self._logs[job.covers :]

    def close(self) -> None:
        if self._compaction is not None:
            self._compaction.thread.join()


def replay_files(storage: Storage, refs: list[str], into: QueueStore) -> None:
    for name in refs:
        data = storage.read(name)
        if data is None:
            raise StorageError(f"{storage.show(name)} is missing: the checkpoint names it")
        try:
            log = zlib.decompress(data)
        except zlib.error as exc:
            raise StorageError(f"{storage.show(name)} is damaged: {exc}") from None
        replay(into, log)


class _Compaction:
    """A new base, from the store as it is now, written on a thread of its own."""

    def __init__(self, segments: QueueSegments, name: str, covers: int) -> None:
        self.name, self.covers = name, covers  # (the logs it replaces: those written so far)
        self.written = 0
        self.error: str | None = None
        ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(segments, ready), daemon=True, name="queue-base")
        self.thread.start()
        ready.wait()  # (the view is fixed before the shard changes the store again)

    def _run(self, segments: QueueSegments, ready: threading.Event) -> None:
        try:
            rows = segments.store.store.frozen_items(ready)
            self.written = segments._write(self.name, encode_rows(rows))
        except Exception as exc:  # (a base not written is not adopted: the logs it would replace stay)
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            ready.set()
