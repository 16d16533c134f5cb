"""A shard's stored queue in the crawl's storage, copied as it changes (docs/architecture.md, "Checkpoints"):
a base -- every stored row at some cut -- and the logs of what changed after it (core/queue_log.py), each an
immutable, zlib-compressed file under ``frontier/shard-NNN/`` of the output (a directory or a bucket).

At a checkpoint the shard writes one log: what changed since the last one, so the pause for the cut costs what
changed, not what is queued. A checkpoint names the files to replay (``refs``), base first. When the logs after the
base outgrow it twice over, a new base is made from the files themselves -- replayed into a scratch store and
written out whole -- by a process of the shard's own (``BaseWriter``), off the pause and off the shard's store;
the checkpoint after it is done names the new base and only the logs after the last one it replayed. Files no
committed checkpoint names any more are deleted once a newer checkpoint commits; a resume deletes those a lost run
left.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import tempfile
import threading
import zlib
from collections.abc import Iterable, Iterator
from multiprocessing.connection import Connection
from typing import Any

from raycrawl.adapters.lmdb_queue import PREFIX, LmdbQueueStore
from raycrawl.adapters.segments import SegmentChain, read_named
from raycrawl.adapters.storage import Storage, StorageError
from raycrawl.core.queue_log import CorruptLog, LoggedQueueStore, encode_rows, replay
from raycrawl.core.queue_store import MemoryQueueStore, QueueStore

MIN_BASE_BYTES = 16 << 20  # logs are replayed as they are until they outgrow the base, and at least this much


class QueueSegments:
    def __init__(
        self, storage: Storage, shard_id: int, store: LoggedQueueStore, base_writer: BaseWriter | None = None
    ) -> None:
        self.storage = storage
        self.base_writer = base_writer  # (None: bases are written on a thread of this process)
        self.chain = SegmentChain(storage, f"frontier/shard-{shard_id:03d}")
        self.store = store
        self._unwritten = b""  # a log whose write failed: written with the next one
        self.written = 0  # bytes the last checkpoint wrote
        self._compaction: _Compaction | None = None

    @property
    def refs(self) -> list[str]:
        return self.chain.refs

    def checkpoint(self) -> list[str]:
        """At a cut: write what changed since the last checkpoint; the files a restore replays (raises
        StorageError: then nothing is lost, the log goes with the next checkpoint)."""
        self._adopt_compaction()
        log = self._unwritten + self.store.take_log()
        self._unwritten, self.written = b"", 0
        if log:
            name = self.chain.name("log")
            try:
                written = write_compressed(self.storage, name, [log])
            except StorageError:
                self._unwritten = log
                raise
            self.chain.logs.append((name, written))
            self.written = written
        if self._compaction is None and self.chain.logs_outgrow_base(MIN_BASE_BYTES):
            try:
                self._compaction = _Compaction(self, self.chain.name("base"), self.refs, len(self.chain.logs))
            except StorageError:  # (a writer that did not start: the logs stay, a later cut tries again)
                self._compaction = None
        return self.chain.offer()

    def committed(self) -> None:
        """The last checkpoint committed: files only older ones named go."""
        self.chain.committed()

    def restore(self, refs: list[str], into: QueueStore) -> None:
        """Replay ``refs`` (a checkpoint's) into the (empty) store behind the log; they become this shard's files,
        and files of the directory that no one names (a lost run's) go."""
        replay_files(self.storage, refs, into)
        self.chain.adopt(refs)

    def _adopt_compaction(self) -> None:
        job = self._compaction
        if job is None or not job.done():
            return
        self._compaction = None
        if job.error is None:
            self.chain.based(job.name, job.written, job.covers)

    def close(self) -> None:
        if self._compaction is not None:
            self._compaction.wait()
        if self.base_writer is not None:
            self.base_writer.close()


def replay_files(storage: Storage, refs: list[str], into: QueueStore) -> None:
    for name in refs:
        data = read_named(storage, name)
        try:
            log = zlib.decompress(data)
        except zlib.error as exc:
            raise StorageError(f"{storage.show(name)} is damaged: {exc}") from None
        try:
            replay(into, log)
        except CorruptLog as exc:  # (it decompressed, but is not a log: as damaged as a cut file)
            raise StorageError(f"{storage.show(name)} is damaged: {exc}") from None


class _Compaction:
    """A new base, made from the files a checkpoint named (the last base and the logs after it): replayed into a
    scratch store and written out whole, by a process of its own (``BaseWriter``) or, without one, a thread. The
    shard's own store is never read for it: a long read beside the shard's writes would pin LMDB's freed pages
    and slow every write (measured: lease+ack at 10 M queued URLs fell from ~122,000 to ~20,000 URLs/s)."""

    def __init__(self, segments: QueueSegments, name: str, refs: list[str], covers: int) -> None:
        self.name, self.covers = name, covers  # (the logs it replaces: those written so far)
        self.written = 0
        self.error: str | None = None
        self._answered = False
        self._writer = segments.base_writer
        if self._writer is not None:
            self._writer.begin(name, refs)
            return
        self._thread = threading.Thread(target=self._run, args=(segments.storage, refs), daemon=True, name="queue-base")
        self._thread.start()

    def done(self) -> bool:
        if self._writer is None:
            return not self._thread.is_alive()
        if not self._answered:
            answer = self._writer.answer()
            if answer is None:
                return False
            self.written, self.error = answer
            self._answered = True
        return True

    def wait(self) -> None:
        if self._writer is None:
            self._thread.join()
        elif not self._answered:
            self.written, self.error = self._writer.answer(timeout=None) or (0, "the base writer went away")
            self._answered = True

    def _run(self, storage: Storage, refs: list[str]) -> None:
        self.written, self.error = rebuild_base(storage, self.name, refs, None)


def rebuild_base(storage: Storage, name: str, refs: list[str], scratch_dir: str | None) -> tuple[int, str | None]:
    """Replay ``refs`` into a scratch store (LMDB in ``scratch_dir``, or memory) and write its rows as the base
    ``name``: (bytes written, error)."""
    scratch: QueueStore
    lmdb_scratch = None
    try:
        if scratch_dir is not None:
            # (named as a shard's store is, with this process's pid: one a killed writer left is removed by the next
            # private_store in the directory)
            directory = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-base-", dir=scratch_dir)
            scratch = lmdb_scratch = LmdbQueueStore(directory)
        else:
            scratch = MemoryQueueStore()
        replay_files(storage, refs, scratch)
        return write_compressed(storage, name, encode_rows(scratch.items())), None
    except Exception as exc:  # (a base not written is not adopted: the logs it would replace stay)
        return 0, f"{type(exc).__name__}: {exc}"
    finally:
        if lmdb_scratch is not None:
            lmdb_scratch.close(remove=True)


def write_compressed(storage: Storage, name: str, pieces: Iterable[bytes]) -> int:
    def compressed() -> Iterator[bytes]:
        z = zlib.compressobj(1)  # (fast: a log is written in the pause for the cut)
        for piece in pieces:
            yield z.compress(piece)
        yield z.flush()

    return storage.put_ranges(name, compressed())


class BaseWriter:
    """A process that writes one shard's new bases (``rebuild_base``), so that replaying and encoding tens of
    millions of rows never competes with the shard for its interpreter. It ends when the shard closes it or goes
    away (its pipe closes). Started at the first base (most crawls never need one: no process for them)."""

    def __init__(self, scratch_dir: str, storage: Storage) -> None:
        self._scratch_dir, self._storage = scratch_dir, storage
        self._process: Any = None
        self._conn: Any = None
        self._pending = False

    def _start(self) -> None:
        context = multiprocessing.get_context("spawn")  # (no fork of an actor's process and its threads)
        self._conn, child = context.Pipe()
        self._process = context.Process(
            target=_serve, args=(child, self._scratch_dir, self._storage), daemon=True, name="raycrawl-queue-base"
        )
        self._process.start()
        child.close()

    def begin(self, name: str, refs: list[str]) -> None:
        try:
            if self._process is None:
                self._start()
            self._conn.send((name, refs))
        except (BrokenPipeError, OSError) as exc:
            raise StorageError(f"the base writer went away: {exc}") from None
        self._pending = True

    def answer(self, timeout: float | None = 0.0) -> tuple[int, str | None] | None:
        """(bytes written, error) of the base begun last, once it is done (None: not yet)."""
        try:
            if not self._pending or not self._conn.poll(timeout):
                return None
            self._pending = False
            written, error = self._conn.recv()
        except (EOFError, OSError):  # (it died: the base is not adopted, the logs stay)
            self._pending = False
            return 0, "the base writer went away"
        return int(written), error

    def close(self) -> None:
        if self._process is None:
            return
        with contextlib.suppress(OSError):
            self._conn.close()
        self._process.join(timeout=30)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()


def _serve(conn: Connection, scratch_dir: str, storage: Storage) -> None:
    while True:
        try:
            name, refs = conn.recv()
        except (EOFError, OSError):
            return
        answer = rebuild_base(storage, name, refs, scratch_dir)
        try:
            conn.send(answer)
        except (BrokenPipeError, OSError):
            return
