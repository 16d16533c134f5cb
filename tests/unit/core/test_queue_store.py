"""The queue-store contract (core/queue_store.py), kept in memory and in LMDB (adapters/lmdb_queue.py): any
sequence of pushes and takes gives each row back once, a host's lowest order first, equal orders in push order;
counts agree; an LMDB store reopened after its process went away holds exactly what it held; a full store says so
and stores nothing of the push that did not fit."""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raycrawl.adapters.lmdb_queue import LmdbQueueStore
from raycrawl.core.queue_store import MemoryQueueStore, QueueStore, QueueStoreFull, order_of, sortable_order

Factory = Callable[[], QueueStore]


@pytest.fixture(params=["memory", "lmdb"])
def make_store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Factory]:
    opened: list[LmdbQueueStore] = []

    def make() -> QueueStore:
        if request.param == "memory":
            return MemoryQueueStore()
        store = LmdbQueueStore(tmp_path_factory.mktemp("queue"))
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


@given(st.lists(st.floats(allow_nan=False, allow_infinity=True, width=64), min_size=2, max_size=50))
def test_sortable_orders_sort_as_the_floats(orders: list[float]) -> None:
    assert sorted(orders, key=sortable_order) == sorted(orders)
    assert [order_of(sortable_order(o)) for o in orders] == [o + 0.0 for o in orders]


HOSTS = ["a.test", "b.test:8080", "c.test"]
operations = st.lists(
    st.one_of(
        st.tuples(
            st.sampled_from(["push", "put_back"]),
            st.lists(st.tuples(st.sampled_from(HOSTS), st.integers(-3, 3)), max_size=12),
        ),
        st.tuples(st.just("take"), st.tuples(st.sampled_from(HOSTS), st.integers(0, 6))),
    ),
    max_size=40,
)


class DequeModel:
    """The reference: per host, per order, a deque (push appends, put_back prepends)."""

    def __init__(self) -> None:
        self.queues: dict[str, dict[int, deque[bytes]]] = {h: {} for h in HOSTS}

    def store(self, host: str, order: int, row: bytes, front: bool) -> None:
        rows = self.queues[host].setdefault(order, deque())
        rows.appendleft(row) if front else rows.append(row)

    def take(self, host: str, n: int) -> list[bytes]:
        out: list[bytes] = []
        for order in sorted(self.queues[host]):
            rows = self.queues[host][order]
            while rows and len(out) < n:
                out.append(rows.popleft())
            if not rows:
                del self.queues[host][order]
        return out

    def best(self, host: str) -> float | None:
        return float(min(self.queues[host])) if self.queues[host] else None

    def count(self, host: str) -> int:
        return sum(len(rows) for rows in self.queues[host].values())


# (a store made per example, by the fixture's factory: the function-scoped fixture is only the factory)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations)
def test_any_pushes_put_backs_and_takes_give_each_row_back_once_in_order(
    make_store: Factory, ops: list[tuple[str, object]]
) -> None:
    store = make_store()
    model = DequeModel()
    taken: list[bytes] = []
    stored: list[bytes] = []
    for op, arg in ops:
        if op in ("push", "put_back"):
            items = []
            for host, order in arg:  # type: ignore[union-attr]
                row = struct.pack(">I", len(stored))
                items.append((host, float(order), row))
                model.store(host, order, row, front=op == "put_back")
                stored.append(row)
            store.push(items) if op == "push" else store.put_back(items)
        else:
            host, n = arg  # type: ignore[misc]
            rows, after = store.take(host, n)
            assert rows == model.take(host, n)
            assert after == model.best(host)
            taken.extend(rows)
        assert store.total() == sum(model.count(h) for h in HOSTS)
        assert {h: store.count(h) for h in HOSTS} == {h: model.count(h) for h in HOSTS}
        assert {h: store.best(h) for h in HOSTS} == {h: model.best(h) for h in HOSTS}
    listed = list(store.items())
    assert sorted(row for _, _, row in listed) == sorted(set(stored) - set(taken))
    for host in HOSTS:  # items() lists each host's rows in take order
        assert [row for h, _, row in listed if h == host] == model.take(host, 10**6)
    rest = [row for host in HOSTS for row in store.take(host, 10**6)[0]]
    assert sorted(taken + rest) == sorted(stored)  # every row once: nothing lost, nothing twice
    assert store.total() == 0 and list(store.hosts()) == []


def test_a_reopened_store_holds_exactly_what_it_held(tmp_path: Path) -> None:
    store = LmdbQueueStore(tmp_path)
    store.push([("a.test", 1.0, b"a1"), ("a.test", 0.0, b"a0"), ("b.test", 5.0, b"b5")])
    store.put_back([("c.test", 2.0, b"c2")])
    assert store.take("c.test", 1)[0] == [b"c2"]
    assert store.take("a.test", 1)[0] == [b"a0"]
    store.close()
    again = LmdbQueueStore(tmp_path)
    assert (again.total(), again.count("a.test"), again.count("b.test")) == (2, 1, 1)
    again.push([("a.test", 1.0, b"a1-later")])  # (equal order: after the one pushed before the reopen)
    again.put_back([("a.test", 1.0, b"a1-first")])  # (... and before it)
    assert again.take("a.test", 5)[0] == [b"a1-first", b"a1", b"a1-later"] and again.take("b.test", 5)[0] == [b"b5"]
    again.close()


def test_a_full_store_says_so_and_stores_nothing_of_that_push(tmp_path: Path) -> None:
    store = LmdbQueueStore(tmp_path, map_bytes=256 * 1024)
    store.push([("a.test", 0.0, b"first")])
    with pytest.raises(QueueStoreFull, match="full"):
        store.push([("a.test", 1.0, b"x" * 400) for _ in range(2000)])
    assert store.total() == 1 and store.take("a.test", 10)[0] == [b"first"]
    store.close()


def test_a_workbench_whose_whole_flush_a_full_store_refuses_keeps_every_url_in_memory(tmp_path: Path) -> None:
    """A checkpoint flushes every host's pending lines at once; a full disk refuses them: each goes back to its
    host's workbench (it was a KeyError for a host whose lines had all been taken to write)."""
    from raycrawl.core.hosts import HostState
    from raycrawl.core.records import UrlEntry
    from raycrawl.core.workbench import Workbench

    store = LmdbQueueStore(tmp_path, map_bytes=64 * 1024)
    bench = Workbench(store, 4)
    hosts = [HostState(key=f"h{i}.test", origin=f"http://h{i}.test", delay=1.0) for i in range(3)]
    for hs in hosts:
        for n in range(40):
            bench.add(hs, 0.0, UrlEntry(f"http://{hs.key}/{'x' * 600}{n}", 1))
    bench.flush()  # (all of it: the store has room for a part, and refuses the rest)
    assert bench.full is not None
    kept = {hs.key: hs.queue.size + hs.stored for hs in hosts}
    assert kept == {hs.key: 40 for hs in hosts}
    assert sum(hs.stored for hs in hosts) == store.total() == bench.stored
    store.close()


def test_a_key_the_store_cannot_take_is_not_a_full_disk(tmp_path: Path) -> None:
    """A host of 511 characters makes LMDB refuse the key (MDB_BAD_VALSIZE): a refused row, never "disk full"
    (which stops a crawl, and its resume, at the same wall)."""
    from raycrawl.core.queue_store import QueueKeyRefused

    store = LmdbQueueStore(tmp_path)
    store.push([("a.test", 0.0, b"first")])
    with pytest.raises(QueueKeyRefused) as refused:
        store.push([("a.test", 1.0, b"second"), ("x" * 511, 0.0, b"long")])
    assert not isinstance(refused.value, QueueStoreFull)
    assert store.total() == 1 and store.take("a.test", 10)[0] == [b"first"]  # nothing of that push was stored
    store.close()
