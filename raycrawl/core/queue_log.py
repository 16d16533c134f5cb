"""What a shard's queue store changed, as bytes: so a checkpoint copies only what changed since the last one, and a
shard is rebuilt anywhere by replaying a base (every row at some cut) and the changes after it (docs/architecture.md,
"Checkpoints").

``LoggedQueueStore`` wraps a store and records each change it makes -- rows pushed, rows put back, rows taken per
host -- in the order made. A store's changes are deterministic: replaying the same changes on an empty store gives
the same rows in the same order (``replay``). A log is a sequence of records, each an op byte, a count, then the
count's items:

- ``A`` (push) and ``F`` (put back): host length (u16), host, order (f64), row length (u32), row;
- ``T`` (take): host length (u16), host, rows taken (u32).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence

from raycrawl.core.queue_store import QueueItem, QueueStore

_OP = struct.Struct(">cI")
_HOST = struct.Struct(">H")
_ITEM = struct.Struct(">dI")
_TAKE = struct.Struct(">I")


class CorruptLog(Exception):
    """A queue log that does not parse (cut short, or not a log)."""


def encode_items(op: bytes, items: Iterable[QueueItem], count: int) -> bytes:
    out = [_OP.pack(op, count)]
    for host, order, row in items:
        name = host.encode()
        out += (_HOST.pack(len(name)), name, _ITEM.pack(order, len(row)), row)
    return b"".join(out)


def encode_takes(taken: dict[str, int]) -> bytes:
    out = [_OP.pack(b"T", len(taken))]
    for host, n in taken.items():
        name = host.encode()
        out += (_HOST.pack(len(name)), name, _TAKE.pack(n))
    return b"".join(out)


def encode_rows(items: Iterable[QueueItem], batch: int = 10_000) -> Iterator[bytes]:
    """Rows (a store's ``items()``, in take order) as a log that makes them again: a base, a record per ``batch``."""
    rows: list[QueueItem] = []
    for item in items:
        rows.append(item)
        if len(rows) == batch:
            yield encode_items(b"A", rows, len(rows))
            rows = []
    if rows:
        yield encode_items(b"A", rows, len(rows))


def replay(store: QueueStore, log: bytes) -> None:
    """Make on ``store`` the changes ``log`` records, in order."""
    view, at = memoryview(log), 0
    try:
        while at < len(view):
            op, count = _OP.unpack_from(view, at)
            at += _OP.size
            if op == b"T":
                taken: dict[str, int] = {}
                for _ in range(count):
                    host, at = _host(view, at)
                    taken[host] = _TAKE.unpack_from(view, at)[0]
                    at += _TAKE.size
                store.take_each(taken)
                continue
            if op not in (b"A", b"F"):
                raise CorruptLog(f"unknown record {op!r} at byte {at - _OP.size}")
            items: list[QueueItem] = []
            for _ in range(count):
                host, at = _host(view, at)
                order, size = _ITEM.unpack_from(view, at)
                at += _ITEM.size
                if at + size > len(view):
                    raise CorruptLog("a row runs past the end")
                items.append((host, order, bytes(view[at : at + size])))
                at += size
            store.push(items) if op == b"A" else store.put_back(items)
    except (struct.error, UnicodeDecodeError) as exc:
        raise CorruptLog(f"at byte {at}: {exc}") from None


def _host(view: memoryview, at: int) -> tuple[str, int]:
    (size,) = _HOST.unpack_from(view, at)
    at += _HOST.size
    return bytes(view[at : at + size]).decode(), at + size


class LoggedQueueStore:
    """A queue store that records the changes it makes (``take_log``)."""

    def __init__(self, store: QueueStore) -> None:
        self.store = store
        self._log: list[bytes] = []
        self.log_bytes = 0  # recorded since the last take_log

    def _record(self, data: bytes) -> None:
        self._log.append(data)
        self.log_bytes += len(data)

    def take_log(self) -> bytes:
        """What changed since the last call."""
        out, self._log, self.log_bytes = b"".join(self._log), [], 0
        return out

    def push(self, items: Sequence[QueueItem]) -> None:
        self.store.push(items)  # (recorded once made: a refused push changed nothing)
        if items:
            self._record(encode_items(b"A", items, len(items)))

    def put_back(self, items: Sequence[QueueItem]) -> None:
        self.store.put_back(items)
        if items:
            self._record(encode_items(b"F", items, len(items)))

    def take(self, host: str, n: int) -> tuple[list[bytes], float | None]:
        return self.take_each({host: n})[host]

    def take_each(self, wanted: dict[str, int]) -> dict[str, tuple[list[bytes], float | None]]:
        taken = self.store.take_each(wanted)
        counts = {host: len(rows) for host, (rows, _) in taken.items() if rows}
        if counts:
            self._record(encode_takes(counts))
        return taken

    def best(self, host: str) -> float | None:
        return self.store.best(host)

    def count(self, host: str) -> int:
        return self.store.count(host)

    def total(self) -> int:
        return self.store.total()

    def hosts(self) -> Iterable[str]:
        return self.store.hosts()

    def items(self) -> Iterator[QueueItem]:
        return self.store.items()
