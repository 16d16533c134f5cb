"""A state kept in the crawl's storage as immutable files that are only ever added and deleted: a base (the whole
state at some cut) and the logs of what changed after it, oldest first (docs/architecture.md, "Checkpoints").

A checkpoint names the files that make its state (``refs``); the files only older checkpoints named are deleted once
a newer one commits (``committed``); an actor that takes over a state (a resume, a rebuild) adopts a checkpoint's
files and deletes the ones a lost actor left beside them (``adopt``). What a base is made of, and by whom, is the
owner's business (adapters/queue_segments.py for a shard's queue, adapters/seen_segments.py for a seen-set
partition); this keeps the names.
"""

from __future__ import annotations

import itertools
import uuid

from raycrawl.adapters.storage import Storage, StorageError


def read_named(storage: Storage, name: str) -> bytes:
    """A file a checkpoint names (StorageError when it is missing: the checkpoint cannot be restored)."""
    data = storage.read(name)
    if data is None:
        raise StorageError(f"{storage.show(name)} is missing: the checkpoint names it")
    return data


class SegmentChain:
    def __init__(self, storage: Storage, directory: str) -> None:
        self.storage = storage
        self.directory = directory
        self._run = uuid.uuid4().hex[:8]  # (files of this actor: a rebuilt one never writes over a lost one's)
        self._numbers = itertools.count(1)
        self.base: tuple[str, int] | None = None  # (name, bytes)
        self.logs: list[tuple[str, int]] = []  # after the base, oldest first
        self._committed: set[str] = set()
        self._offered: list[str] = []  # what the last checkpoint named (committed once it commits)

    @property
    def refs(self) -> list[str]:
        return ([self.base[0]] if self.base else []) + [name for name, _ in self.logs]

    def name(self, kind: str, suffix: str = ".z") -> str:
        """A new file's name: ``kind`` is "base" or "log"."""
        return f"{self.directory}/{kind}-{self._run}-{next(self._numbers):06d}{suffix}"

    def logs_outgrow_base(self, min_bytes: int) -> bool:
        """The logs after the base are more than twice its size, and more than ``min_bytes``: time for a new one."""
        return sum(size for _, size in self.logs) > max(min_bytes, 2 * self.base[1] if self.base else 0)

    def based(self, name: str, written: int, covers: int) -> None:
        """A new base ``name``, made of the base and the first ``covers`` logs: it replaces them."""
        self.base, self.logs = (name, written), self.logs[covers:]

    def offer(self) -> list[str]:
        """The files a checkpoint taken now names."""
        self._offered = self.refs
        return self._offered

    def committed(self) -> None:
        """The last checkpoint committed: files only older ones named go."""
        offered = set(self._offered)
        self.storage.delete(sorted(self._committed - offered))
        self._committed = offered

    def adopt(self, refs: list[str]) -> None:
        """A checkpoint's files become this chain's (read by the caller); files of the directory that it does not
        name (a lost actor's) go."""
        sizes = [(name, 0) for name in refs]
        if refs and "/base-" in refs[0]:
            self.base, self.logs = sizes[0], sizes[1:]
        else:
            self.base, self.logs = None, sizes
        self._committed, self._offered = set(refs), list(refs)
        named = set(refs)
        self.storage.delete(n for n in self.storage.list(self.directory) if n not in named)
