"""Where checkpoints live: next to the output by default (a local directory or a URI; no server needed), or Redis.

The contract, the same for both (one set of contract tests runs against each):

- ``commit(checkpoint_id, parts)`` writes named binary parts; the checkpoint becomes the current one only
  once every part is written, so a crash mid-write leaves the previous checkpoint current and intact.
- ``latest()`` returns ``(checkpoint_id, parts)`` of the current checkpoint (each part verified against the
  SHA-256 in its manifest), or None when there is none.
- ``clear()`` forgets every checkpoint of this crawl. Older checkpoints are removed after a newer one commits.

Failures of the medium (Redis down, disk full) raise ``StoreUnavailable`` with a one-line reason.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Collection
from typing import Any, Protocol
from urllib.parse import urlsplit

from raycrawl.adapters.storage import Storage, StorageError
from raycrawl.core.urls import redact_credentials

CHUNK_BYTES = 1 << 20  # Redis values are written in 1 MiB chunks: no single huge command


class StoreUnavailable(Exception):
    """The snapshot store cannot be reached or written; the message says why."""


class CorruptCheckpoint(Exception):
    """A committed checkpoint does not match its manifest."""


class SnapshotStore(Protocol):
    def commit(self, checkpoint_id: int, parts: dict[str, bytes]) -> int:
        """Write the parts, then make them current. Returns the bytes written."""
        ...

    def latest(self, only: Collection[str] | None = None) -> tuple[int, dict[str, bytes]] | None:
        """The committed checkpoint's id and parts (``only`` these, when given), verified against its manifest."""
        ...

    def current_id(self) -> int | None:
        """The committed checkpoint's id, without reading it."""
        ...

    def clear(self) -> None: ...

    def describe(self) -> str: ...


def _manifest(checkpoint_id: int, parts: dict[str, bytes]) -> bytes:
    return json.dumps(
        {
            "checkpoint": checkpoint_id,
            "parts": {
                name: {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()} for name, data in parts.items()
            },
        },
        sort_keys=True,
    ).encode()


def _wanted(manifest: dict[str, Any], only: Collection[str] | None) -> dict[str, Any]:
    return {name: meta for name, meta in manifest["parts"].items() if only is None or name in only}


def _verify(manifest: dict[str, Any], parts: dict[str, bytes], only: Collection[str] | None = None) -> None:
    for name, meta in _wanted(manifest, only).items():
        data = parts.get(name)
        if data is None or len(data) != meta["size"] or hashlib.sha256(data).hexdigest() != meta["sha256"]:
            raise CorruptCheckpoint(f"checkpoint {manifest['checkpoint']}: part {name!r} does not match its manifest")


class StorageSnapshotStore:
    """Checkpoints as directories under ``checkpoints/`` of the crawl's storage (a local directory or a URI);
    ``CURRENT`` names the committed one. It is written last, whole (a rename locally, one PUT on an object
    store), so it is the commit point on any filesystem."""

    def __init__(self, storage: Storage, directory: str = "checkpoints") -> None:
        self.storage = storage
        self.directory = directory

    def describe(self) -> str:
        return f"{'directory' if self.storage.local else 'storage'} {self.storage.show(self.directory)}"

    def _name(self, checkpoint_id: int, part: str = "") -> str:
        base = f"{self.directory}/ckpt-{checkpoint_id:08d}"
        return f"{base}/{part}" if part else base

    def commit(self, checkpoint_id: int, parts: dict[str, bytes]) -> int:
        try:
            previous = self.current_id()
            self.storage.delete_dir(self._name(checkpoint_id))  # (a failed attempt at this id left parts)
            written = 0
            for name, data in {**parts, "manifest.json": _manifest(checkpoint_id, parts)}.items():
                self.storage.put(self._name(checkpoint_id, name), data)
                written += len(data) if name in parts else 0
            self.storage.put(f"{self.directory}/CURRENT", str(checkpoint_id).encode())  # the commit point
        except StorageError as exc:
            raise StoreUnavailable(f"cannot write checkpoint: {exc}") from None
        if previous is not None and previous != checkpoint_id:
            with contextlib.suppress(StorageError):
                self.storage.delete_dir(self._name(previous))
        return written

    def current_id(self) -> int | None:
        try:
            data = self.storage.read(f"{self.directory}/CURRENT")
        except StorageError as exc:
            raise StoreUnavailable(str(exc)) from None
        try:
            return None if data is None else int(data.decode().strip())
        except ValueError:
            return None

    def latest(self, only: Collection[str] | None = None) -> tuple[int, dict[str, bytes]] | None:
        checkpoint_id = self.current_id()
        if checkpoint_id is None:
            return None
        try:
            raw = self.storage.read(self._name(checkpoint_id, "manifest.json"))
            if raw is None:
                raise CorruptCheckpoint(f"checkpoint {checkpoint_id} has no manifest")
            manifest = json.loads(raw)
            wanted = _wanted(manifest, only)
            parts = {name: self.storage.read(self._name(checkpoint_id, name)) or b"" for name in wanted}
        except StorageError as exc:
            raise StoreUnavailable(str(exc)) from None
        _verify(manifest, parts, only)
        return checkpoint_id, parts

    def clear(self) -> None:
        try:
            self.storage.delete_dir(self.directory)
        except StorageError as exc:
            raise StoreUnavailable(str(exc)) from None


def redis_url_for_messages(url: str) -> str:
    """The Redis URL without its password: no ``user:pass@`` (up to the last ``@``, as a password may hold any
    character) and no ``?password=`` value."""
    scheme, sep, rest = url.partition("://")
    return redact_credentials(f"{scheme}{sep}{rest.rpartition('@')[2]}")


def redis_url_problem(url: str) -> str | None:
    """Why redis-py would refuse ``url`` when it first connects (None: it takes it), said without its password.

    Parsed by redis-py's own parser, where the config is loaded: a URL that only starts right (a bad port, a
    password holding ``/``, ``#`` or ``?`` that re-parses the rest) is a one-line config error, not every shard's
    constructor failing later. redis-py's message is not repeated: it can quote part of the password."""
    from redis.connection import parse_url  # (redis is imported only where it is used)

    safe = redis_url_for_messages(url)
    try:
        parse_url(url)
    except (ValueError, TypeError):
        return (
            f"{safe!r} is not a Redis URL redis-py can use: check its port and database, and percent-encode '/', '#'"
            " and '?' in a password"
        )
    parts = urlsplit(url)
    if parts.scheme in ("redis", "rediss") and not parts.hostname and "@" in url:  # (it would go to localhost)
        return f"{safe!r}: a password holding '/', '#' or '?' must be percent-encoded"
    return None


class RedisSnapshotStore:
    """Checkpoints in Redis under ``raycrawl:{crawl_id}:``; the ``current`` key is set last (the commit point)."""

    def __init__(self, url: str, crawl_id: str, timeout: float = 10.0) -> None:
        import redis

        self.url = url
        self.crawl_id = crawl_id
        self.prefix = f"raycrawl:{crawl_id}:"
        try:
            self._redis = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
        except ValueError as exc:
            safe = redis_url_for_messages(url)
            raise StoreUnavailable(f"bad Redis URL {safe!r}: {str(exc).replace(url, safe)}") from None
        # redis-py reports some bad URLs only when it first connects, and as TypeError or ValueError (an unknown
        # query option): translated here, like a refused connection, into one message without a traceback.
        self._errors: tuple[type[BaseException], ...] = (redis.RedisError, OSError, TypeError, ValueError)

    def describe(self) -> str:
        return f"Redis {self._safe_url()} (crawl id {self.crawl_id})"

    def _safe_url(self) -> str:
        return redis_url_for_messages(self.url)

    def ping(self) -> None:
        self._call(self._redis.ping)

    def _call(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except self._errors as exc:
            safe = self._safe_url()
            raise StoreUnavailable(f"Redis at {safe} is unavailable: {str(exc).replace(self.url, safe)}") from None

    def _key(self, checkpoint_id: int, name: str, chunk: int | None = None) -> str:
        tail = "" if chunk is None else f":{chunk}"
        return f"{self.prefix}ckpt:{checkpoint_id}:{name}{tail}"

    def commit(self, checkpoint_id: int, parts: dict[str, bytes]) -> int:
        pipe = self._redis.pipeline(transaction=False)
        written = 0
        for name, data in parts.items():
            for i, start in enumerate(range(0, max(len(data), 1), CHUNK_BYTES)):
                pipe.set(self._key(checkpoint_id, name, i), data[start : start + CHUNK_BYTES])
            written += len(data)
        pipe.set(self._key(checkpoint_id, "manifest"), _manifest(checkpoint_id, parts))
        self._call(pipe.execute)
        previous = self._call(self._redis.get, self.prefix + "current")
        self._call(self._redis.set, self.prefix + "current", str(checkpoint_id))  # the commit point
        if previous is not None and int(previous) != checkpoint_id:
            self._delete_checkpoint(int(previous))
        return written

    def _delete_checkpoint(self, checkpoint_id: int) -> None:
        keys = list(self._call(self._redis.scan_iter, f"{self.prefix}ckpt:{checkpoint_id}:*"))
        if keys:
            self._call(self._redis.delete, *keys)

    def current_id(self) -> int | None:
        current = self._call(self._redis.get, self.prefix + "current")
        return None if current is None else int(current)

    def latest(self, only: Collection[str] | None = None) -> tuple[int, dict[str, bytes]] | None:
        checkpoint_id = self.current_id()
        if checkpoint_id is None:
            return None
        raw = self._call(self._redis.get, self._key(checkpoint_id, "manifest"))
        if raw is None:
            raise CorruptCheckpoint(f"checkpoint {checkpoint_id} has no manifest")
        manifest = json.loads(raw)
        pipe = self._redis.pipeline(transaction=False)
        layout = []
        for name, meta in _wanted(manifest, only).items():
            chunks = max(1, -(-meta["size"] // CHUNK_BYTES))
            layout.append((name, chunks))
            for i in range(chunks):
                pipe.get(self._key(checkpoint_id, name, i))
        values = iter(self._call(pipe.execute))
        parts = {name: b"".join(next(values) or b"" for _ in range(chunks)) for name, chunks in layout}
        _verify(manifest, parts, only)
        return checkpoint_id, parts

    def clear(self) -> None:
        keys = list(self._call(self._redis.scan_iter, f"{self.prefix}*"))
        if keys:
            self._call(self._redis.delete, *keys)


def open_store(redis_url: str | None, crawl_id: str, storage: Storage) -> SnapshotStore:
    """Redis when a URL is given, else ``checkpoints/`` next to the output (no server needed)."""
    if redis_url:
        return RedisSnapshotStore(redis_url, crawl_id)
    return StorageSnapshotStore(storage)
