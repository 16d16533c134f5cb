"""A shard's queued URLs on its node's disk, in LMDB (core/queue_store.py's contract).

Why LMDB: a frontier queue is written at the tail and read and deleted at the head of each host's range, all the
time. Measured with ``benchmarks/queue_stores.py`` (2 cores, 60-character URLs, keys by host, order and sequence):
RocksDB (``rocksdict``) takes pushes well, but a host's next rows sit behind the tombstones of those already taken,
and each take seeks past them -- thousands of takes a second where LMDB's B+tree does hundreds of thousands, as fast
as the in-memory heaps; LMDB keeps almost nothing in the process's own memory (its pages are the kernel's page
cache, mapped), at the price of more bytes on disk per URL. Figures in ``benchmarks/README.md``.

Each push or take is one write transaction: all of it or none (a full map is ``QueueStoreFull``, nothing stored).
A host's row count is kept in a second table in the same transaction, so counts and rows always agree, also after
the process dies and the store is opened again.
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import lmdb

from raycrawl.core.queue_store import (
    FIRST_APPEND,
    QueueItem,
    QueueKeyRefused,
    QueueStoreFull,
    host_prefix,
    order_of_key,
    queue_key,
)

PREFIX = "raycrawl-queue-"  # a shard's private store: raycrawl-queue-<pid>-<random> in the frontier directory
FULL_BELOW = 64 << 20  # a write refused with less than this free: "the disk is full"
DEFAULT_MAP_BYTES = 1 << 40  # address space reserved, not disk taken: the file grows as rows come
_COUNT = struct.Struct(">Q")
# (in the counts table; no host starts with NUL): the last push's sequence, the last put-back's
_APPENDED_KEY = b"\x00appended"
_PUT_BACK_KEY = b"\x00put_back"


class LmdbQueueStore:
    def __init__(self, path: str | Path, map_bytes: int = DEFAULT_MAP_BYTES) -> None:
        Path(path).mkdir(parents=True, exist_ok=True)
        # sync off: durability is the checkpoint's (a store is rebuilt from it after a crash), not each write's.
        self._env = lmdb.open(str(path), map_size=map_bytes, max_dbs=2, sync=False, metasync=False, lock=True)
        self._rows = self._env.open_db(b"rows")
        self._counts = self._env.open_db(b"counts")
        with self._env.begin() as txn:
            counts = dict(txn.cursor(db=self._counts).iternext())
        appended, put_back = counts.pop(_APPENDED_KEY, None), counts.pop(_PUT_BACK_KEY, None)
        self._appended = int(_COUNT.unpack(appended)[0]) if appended else FIRST_APPEND - 1
        self._put_back = int(_COUNT.unpack(put_back)[0]) if put_back else FIRST_APPEND
        self._hosts: dict[str, int] = {key.decode(): int(_COUNT.unpack(value)[0]) for key, value in counts.items()}
        self._total = sum(self._hosts.values())

    def push(self, items: Sequence[QueueItem]) -> None:
        self._store(items, self._appended + 1, 1)
        self._appended += len(items)

    def put_back(self, items: Sequence[QueueItem]) -> None:
        self._store(items, self._put_back - 1, -1)
        self._put_back -= len(items)

    def _store(self, items: Sequence[QueueItem], first: int, step: int) -> None:
        if not items:
            return
        added: dict[str, int] = {}
        try:
            with self._env.begin(write=True) as txn:
                sequence = first
                for host, order, row in items:
                    txn.put(queue_key(host, order, sequence), row, db=self._rows)
                    added[host] = added.get(host, 0) + 1
                    sequence += step
                for host, n in added.items():
                    txn.put(host.encode(), _COUNT.pack(self._hosts.get(host, 0) + n), db=self._counts)
                key = _APPENDED_KEY if step > 0 else _PUT_BACK_KEY
                txn.put(key, _COUNT.pack(sequence - step), db=self._counts)
        except lmdb.MapFullError:
            raise QueueStoreFull(f"the queue store in {self._env.path()} is full (its map size)") from None
        except lmdb.BadValsizeError as exc:  # (a key over LMDB's bound: nothing to do with the disk, never "full")
            raise QueueKeyRefused(f"a queue key over {self._env.max_key_size()} bytes: {exc}") from None
        except lmdb.Error as exc:  # (a full disk comes as "mdb_txn_commit: Input/output error")
            raise self._refused(exc) from None
        for host, n in added.items():
            self._hosts[host] = self._hosts.get(host, 0) + n
        self._total += len(items)

    def take(self, host: str, n: int) -> tuple[list[bytes], float | None]:
        return self.take_each({host: n})[host]

    def take_each(self, wanted: dict[str, int]) -> dict[str, tuple[list[bytes], float | None]]:
        out: dict[str, tuple[list[bytes], float | None]] = {}
        try:
            with self._env.begin(write=True) as txn:  # (a delete writes pages too: it can fail on a full disk)
                cursor = txn.cursor(db=self._rows)
                for host, n in wanted.items():
                    out[host] = self._take(txn, cursor, host, n)
        except lmdb.Error as exc:
            raise self._refused(exc) from None
        for host, (rows, _) in out.items():
            left = self._hosts.get(host, 0) - len(rows)
            if left:
                self._hosts[host] = left
            else:
                self._hosts.pop(host, None)
            self._total -= len(rows)
        return out

    # (txn and cursor untyped: lmdb's stubs give keys and values as bytes | memoryview; without buffers=True they
    # are bytes)
    def _take(self, txn: Any, cursor: Any, host: str, n: int) -> tuple[list[bytes], float | None]:
        prefix = host_prefix(host)
        rows: list[bytes] = []
        after: float | None = None
        if not self._hosts.get(host) or not cursor.set_range(prefix):
            return rows, None
        while cursor.key().startswith(prefix):
            if len(rows) >= n:
                after = order_of_key(cursor.key())
                break
            rows.append(cursor.value())
            if not cursor.delete():  # (deleting moves the cursor to the next row; False: none left)
                break
        if rows:
            left = self._hosts[host] - len(rows)
            if left:
                txn.put(host.encode(), _COUNT.pack(left), db=self._counts)
            else:
                txn.delete(host.encode(), db=self._counts)
        return rows, after

    def _refused(self, exc: Exception) -> QueueStoreFull:
        path = self._env.path()
        free = shutil.disk_usage(path).free
        if free < FULL_BELOW:
            return QueueStoreFull(f"the disk under {path} is full ({free:,} bytes free): {exc}")
        return QueueStoreFull(f"the queue store in {path} cannot be written ({free:,} bytes free): {exc}")

    def best(self, host: str) -> float | None:
        if not self._hosts.get(host):
            return None
        prefix = host_prefix(host)
        with self._env.begin() as txn:
            cursor = txn.cursor(db=self._rows)
            if cursor.set_range(prefix) and cursor.key().startswith(prefix):
                return order_of_key(cursor.key())
        return None

    def items(self) -> Iterator[QueueItem]:
        with self._env.begin(buffers=False) as txn:
            for key, row in txn.cursor(db=self._rows):
                host = key[: key.index(b"\x00")].decode()
                yield host, order_of_key(key), row

    def count(self, host: str) -> int:
        return self._hosts.get(host, 0)

    def total(self) -> int:
        return self._total

    def hosts(self) -> Iterable[str]:
        return list(self._hosts)

    @property
    def path(self) -> str:
        return str(self._env.path())

    def disk_bytes(self) -> int:
        """What the store's file takes on disk now."""
        return sum(int(p.stat().st_blocks) * 512 for p in Path(self._env.path()).iterdir() if p.is_file())

    def close(self, remove: bool = False) -> None:
        path = self._env.path()
        self._env.sync(True)
        self._env.close()
        if remove:
            shutil.rmtree(path, ignore_errors=True)


def private_store(directory: str = "") -> LmdbQueueStore:
    """A new, empty store for one shard actor in ``directory`` (default: the system's temporary directory). Stores
    that processes no longer running left there (a shard killed with its worker) are removed first: a store is a
    working copy, rebuilt from the checkpoint when its shard is."""
    parent = directory or tempfile.gettempdir()
    Path(parent).mkdir(parents=True, exist_ok=True)
    for stale in Path(parent).glob(PREFIX + "*"):
        pid = stale.name[len(PREFIX) :].partition("-")[0]
        if pid.isdigit() and not _running(int(pid)):
            shutil.rmtree(stale, ignore_errors=True)
    return LmdbQueueStore(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=parent))


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # (someone else's process)
        return True
    return True
