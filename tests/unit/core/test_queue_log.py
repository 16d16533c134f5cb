"""A queue store's changes as a log (core/queue_log.py) and a shard's stored queue in the crawl's storage as a base
and logs (adapters/queue_segments.py): replaying what was written gives back exactly the rows the store held at the
cut; a checkpoint writes what changed, not what is queued; a new base is written off the pause and the files it
replaces go once a checkpoint naming it commits."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raycrawl.adapters import queue_segments
from raycrawl.adapters.lmdb_queue import LmdbQueueStore
from raycrawl.adapters.queue_segments import BaseWriter, QueueSegments
from raycrawl.adapters.storage import open_storage
from raycrawl.core.queue_log import CorruptLog, LoggedQueueStore, encode_rows, replay
from raycrawl.core.queue_store import MemoryQueueStore, QueueStore

HOSTS = ["a.test", "b.test:8080", "ü.test"]
changes = st.lists(
    st.one_of(
        st.tuples(
            st.sampled_from(["push", "put_back"]),
            st.lists(st.tuples(st.sampled_from(HOSTS), st.integers(-2, 2)), max_size=8),
        ),
        st.tuples(st.just("take"), st.dictionaries(st.sampled_from(HOSTS), st.integers(0, 4))),
        st.tuples(st.just("cut"), st.none()),
    ),
    max_size=40,
)


def apply(store: QueueStore, ops: list[tuple[str, object]], numbered: list[int]) -> None:
    for op, arg in ops:
        if op in ("push", "put_back"):
            items = []
            for host, order in arg:  # type: ignore[union-attr]
                numbered.append(len(numbered))
                items.append((host, float(order), struct.pack(">I", numbered[-1])))
            store.push(items) if op == "push" else store.put_back(items)
        elif op == "take":
            store.take_each(dict(arg))  # type: ignore[call-overload]


@settings(max_examples=80, deadline=None)
@given(ops=changes)
def test_a_base_and_the_logs_after_it_replay_to_the_same_rows(ops: list[tuple[str, object]]) -> None:
    live = LoggedQueueStore(MemoryQueueStore())
    logs: list[bytes] = []
    base: bytes | None = None
    numbered: list[int] = []
    for i, op in enumerate(ops):
        if op[0] == "cut":
            logs.append(live.take_log())
            if i % 3 == 0:  # now and then a new base: the rows as they are, and the logs start again
                base, logs = b"".join(encode_rows(live.items(), batch=3)), []
            again = MemoryQueueStore()
            for log in ([base] if base is not None else []) + logs:
                replay(again, log)
            assert list(again.items()) == list(live.items())
            assert {h: again.count(h) for h in HOSTS} == {h: live.count(h) for h in HOSTS}
        else:
            apply(live, [op], numbered)


def test_a_log_cut_short_says_so() -> None:
    live = LoggedQueueStore(MemoryQueueStore())
    live.push([("a.test", 1.0, b"row")])
    log = live.take_log()
    with pytest.raises(CorruptLog):
        replay(MemoryQueueStore(), log[:-2])
    with pytest.raises(CorruptLog, match="unknown record"):
        replay(MemoryQueueStore(), b"X" + log[1:])


def rows_of(store: QueueStore) -> list[tuple[str, float, bytes]]:
    return list(store.items())


@pytest.mark.parametrize("writer", ["process", "thread"])
def test_checkpoints_write_what_changed_and_a_restore_gives_back_the_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writer: str
) -> None:
    monkeypatch.setattr(queue_segments, "MIN_BASE_BYTES", 4_000)  # (a new base after a few logs)
    storage = open_storage(str(tmp_path / "out"))
    lmdb_store = LmdbQueueStore(tmp_path / "live")
    live = LoggedQueueStore(lmdb_store)
    base_writer = BaseWriter(lmdb_store.path, storage) if writer == "process" else None
    segments = QueueSegments(storage, 3, live, base_writer)
    url = 0
    restored_stores: list[LmdbQueueStore] = []
    for cut in range(12):
        # a round of changes: new URLs on every host, some taken
        items = []
        for host in HOSTS:
            for _ in range(40):
                url += 1
                items.append((host, float(url % 3), f"http://{host}/page/{url}".encode()))
        live.push(items)
        live.take_each({host: 15 for host in HOSTS})
        before = sum(p.stat().st_size for p in (tmp_path / "out").rglob("*") if p.is_file())
        refs = segments.checkpoint()
        written = sum(p.stat().st_size for p in (tmp_path / "out").rglob("*") if p.is_file()) - before
        segments.committed()
        assert written < 3_000  # (this round's log, compressed; a base is written apart, in its thread)
        pending = []
        if segments._compaction is not None:
            segments._compaction.wait()  # (so that the next checkpoint adopts it)
            assert segments._compaction.error is None
            pending.append(segments._compaction.name)
        again = LmdbQueueStore(tmp_path / f"again-{cut}", map_bytes=1 << 26)
        restored_stores.append(again)
        shutil.copytree(tmp_path / "out", tmp_path / f"copy-{cut}")  # (a restore takes the files over)
        copy = open_storage(str(tmp_path / f"copy-{cut}"))
        QueueSegments(copy, 3, LoggedQueueStore(MemoryQueueStore())).restore(refs, again)
        assert rows_of(again) == rows_of(live)  # (nothing changed since the cut)
        on_disk = sorted(str(p.relative_to(tmp_path / "out")) for p in (tmp_path / "out/frontier").rglob("*.z"))
        assert on_disk == sorted(refs + pending)  # (the files no committed checkpoint names are gone)
    assert any("/base-" in ref for ref in refs)  # a base was written, and the logs before it went
    assert segments.checkpoint() == refs  # nothing changed: nothing written
    segments.close()
    if base_writer is not None:
        assert not base_writer._process.is_alive()  # (closed with the segments: nothing left running)
    for store in (*restored_stores, lmdb_store):
        store.close()


def test_a_stored_log_that_decompresses_but_does_not_parse_is_a_damaged_file(tmp_path: Path) -> None:
    """The same one-line storage error as a file cut short (a CorruptLog escaped the resume as a traceback)."""
    import zlib

    from raycrawl.adapters.storage import StorageError

    storage = open_storage(str(tmp_path / "out"))
    good = zlib.compress(encode_items_for_test())
    storage.put("frontier/shard-000/log-good", good)
    storage.put("frontier/shard-000/log-cut", good[:-5])
    storage.put("frontier/shard-000/log-junk", zlib.compress(b"Znot a queue log at all"))
    for name in ("log-cut", "log-junk"):
        with pytest.raises(StorageError, match="damaged"):
            queue_segments.replay_files(
                storage, ["frontier/shard-000/log-good", f"frontier/shard-000/{name}"], MemoryQueueStore()
            )
    store = MemoryQueueStore()
    queue_segments.replay_files(storage, ["frontier/shard-000/log-good"], store)
    assert store.total() == 2


def encode_items_for_test() -> bytes:
    from raycrawl.core.queue_log import encode_items

    return encode_items(b"A", [("a.test", 0.0, b"a0"), ("b.test", 1.0, b"b1")], 2)
