"""One contract, three stores: a local directory (default), object storage (a real S3 API server), and Redis (a
real redis-server)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from raycrawl.adapters.snapshots import (
    CHUNK_BYTES,
    CorruptCheckpoint,
    RedisSnapshotStore,
    SnapshotStore,
    StorageSnapshotStore,
    StoreUnavailable,
)
from raycrawl.adapters.storage import resolve


@pytest.fixture(params=["local", "s3", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SnapshotStore]:
    if request.param == "local":
        yield StorageSnapshotStore(resolve(str(tmp_path)))
    elif request.param == "s3":
        yield StorageSnapshotStore(resolve(request.getfixturevalue("s3_uri")))
    else:
        url = request.getfixturevalue("redis_url")
        s = RedisSnapshotStore(url, f"crawl-{os.urandom(4).hex()}")
        yield s
        s.clear()


def test_empty_store_has_no_checkpoint(store: SnapshotStore) -> None:
    assert store.latest() is None


def test_commit_and_read_back_large_binary_parts(store: SnapshotStore) -> None:
    big = os.urandom(3 * CHUNK_BYTES + 123)
    parts = {"dedup": big, "shard-0": b"", "meta": b'{"x": 1}'}
    assert store.commit(1, parts) == len(big) + 8
    assert store.latest() == (1, parts)


def test_newer_checkpoint_replaces_older(store: SnapshotStore) -> None:
    store.commit(1, {"a": b"one"})
    store.commit(2, {"a": b"two", "b": b"extra"})
    assert store.latest() == (2, {"a": b"two", "b": b"extra"})
    store.clear()
    assert store.latest() is None


def test_crawls_are_namespaced(redis_url: str) -> None:
    a, b = RedisSnapshotStore(redis_url, "ns-a"), RedisSnapshotStore(redis_url, "ns-b")
    a.commit(5, {"p": b"A"})
    assert b.latest() is None
    assert a.latest() == (5, {"p": b"A"})
    a.clear()


def test_interrupted_commit_leaves_previous_checkpoint(store: SnapshotStore) -> None:
    store.commit(1, {"a": b"good"})
    if isinstance(store, StorageSnapshotStore):  # a crash while writing checkpoint 2: its parts, no CURRENT
        store.storage.put("checkpoints/ckpt-00000002/a", b"half")
    assert store.latest() == (1, {"a": b"good"})
    store.commit(2, {"a": b"whole"})  # and the next commit at that id replaces what the crash left
    assert store.latest() == (2, {"a": b"whole"})


def test_corruption_is_detected(tmp_path: Path) -> None:
    store = StorageSnapshotStore(resolve(str(tmp_path)))
    store.commit(1, {"a": b"good"})
    (tmp_path / "checkpoints" / "ckpt-00000001" / "a").write_bytes(b"evil")
    with pytest.raises(CorruptCheckpoint):
        store.latest()


def test_unreachable_redis_is_a_clear_error() -> None:
    from raycrawl.testing import free_port

    store = RedisSnapshotStore(f"redis://:secret@127.0.0.1:{free_port()}/0", "x", timeout=1.0)
    with pytest.raises(StoreUnavailable) as err:
        store.ping()
    assert "unavailable" in str(err.value) and "secret" not in str(err.value)


@pytest.mark.parametrize(
    "url",
    [
        "redis://:hunter2@127.0.0.1:{port}/0",
        "redis://user:hunter2@127.0.0.1:{port}/0",
        "redis://:hun@ter/2#x@127.0.0.1:{port}/0",  # a password with the characters that end a userinfo
        "redis://127.0.0.1:{port}/0?password=hunter2",
        "redis://127.0.0.1:{port}/0?db=1&Password=hunter2&x=1",
        "rediss://:hunter2@127.0.0.1:{port}/0",
    ],
)
def test_no_redis_error_message_shows_the_password(url: str) -> None:
    from raycrawl.testing import free_port

    store = RedisSnapshotStore(url.format(port=free_port()), "x", timeout=1.0)
    with pytest.raises(StoreUnavailable) as caught:
        store.ping()
    assert "hunter2" not in str(caught.value) and "127.0.0.1" in str(caught.value)
    assert "hunter2" not in store.describe()


def test_a_malformed_redis_url_is_refused_without_its_password() -> None:
    with pytest.raises(StoreUnavailable) as caught:
        RedisSnapshotStore("redis-cluster://:hunter2@host/0?password=hunter2", "x")
    assert "hunter2" not in str(caught.value) and "bad Redis URL" in str(caught.value)
