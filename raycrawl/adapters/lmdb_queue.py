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

import struct
from collections.abc import Iterable, Sequence
from pathlib import Path

import lmdb

from raycrawl.core.queue_store import QueueItem, QueueStoreFull, host_prefix, queue_key

DEFAULT_MAP_BYTES = 1 << 40  # address space reserved, not disk taken: the file grows as rows come
_COUNT = struct.Struct(">Q")
_SEQUENCE_KEY = b"\x00sequence"  # (in the counts table; no host starts with NUL): the last push's sequence


class LmdbQueueStore:
    def __init__(self, path: str | Path, map_bytes: int = DEFAULT_MAP_BYTES) -> None:
        Path(path).mkdir(parents=True, exist_ok=True)
        # sync off: durability is the checkpoint's (a store is rebuilt from it after a crash), not each write's.
        self._env = lmdb.open(str(path), map_size=map_bytes, max_dbs=2, sync=False, metasync=False, lock=True)
        self._rows = self._env.open_db(b"rows")
        self._counts = self._env.open_db(b"counts")
        with self._env.begin() as txn:
            counts = dict(txn.cursor(db=self._counts).iternext())
        self._sequence = int(_COUNT.unpack(counts.pop(_SEQUENCE_KEY))[0]) if _SEQUENCE_KEY in counts else 0
        self._hosts: dict[str, int] = {key.decode(): int(_COUNT.unpack(value)[0]) for key, value in counts.items()}
        self._total = sum(self._hosts.values())

    def push(self, items: Sequence[QueueItem]) -> None:
        added: dict[str, int] = {}
        try:
            with self._env.begin(write=True) as txn:
                for sequence, (host, order, row) in enumerate(items, self._sequence + 1):
                    txn.put(queue_key(host, order, sequence), row, db=self._rows)
                    added[host] = added.get(host, 0) + 1
                for host, n in added.items():
                    txn.put(host.encode(), _COUNT.pack(self._hosts.get(host, 0) + n), db=self._counts)
                txn.put(_SEQUENCE_KEY, _COUNT.pack(self._sequence + len(items)), db=self._counts)
        except lmdb.MapFullError:
            raise QueueStoreFull(
                f"the queue store in {self._env.path()} is full ({len(items)} URLs not stored)"
            ) from None
        except lmdb.DiskError as exc:  # (ENOSPC while the file grows)
            raise QueueStoreFull(f"the disk under {self._env.path()} is full: {exc}") from None
        self._sequence += len(items)
        for host, n in added.items():
            self._hosts[host] = self._hosts.get(host, 0) + n
        self._total += len(items)

    def take(self, host: str, n: int) -> list[bytes]:
        if n <= 0 or not self._hosts.get(host):
            return []
        prefix = host_prefix(host)
        rows: list[bytes] = []
        with self._env.begin(write=True) as txn:
            cursor = txn.cursor(db=self._rows)
            if cursor.set_range(prefix):
                while len(rows) < n and cursor.key().startswith(prefix):
                    rows.append(cursor.value())
                    if not cursor.delete():  # (deleting moves the cursor to the next row; False: none left)
                        break
            left = self._hosts[host] - len(rows)
            if left:
                txn.put(host.encode(), _COUNT.pack(left), db=self._counts)
            else:
                txn.delete(host.encode(), db=self._counts)
        if left:
            self._hosts[host] = left
        else:
            del self._hosts[host]
        self._total -= len(rows)
        return rows

    def count(self, host: str) -> int:
        return self._hosts.get(host, 0)

    def total(self) -> int:
        return self._total

    def hosts(self) -> Iterable[str]:
        return list(self._hosts)

    def disk_bytes(self) -> int:
        """What the store's file takes on disk now."""
        return sum(int(p.stat().st_blocks) * 512 for p in Path(self._env.path()).iterdir() if p.is_file())

    def close(self) -> None:
        self._env.sync(True)
        self._env.close()
