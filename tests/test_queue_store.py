"""The queue-store contract (core/queue_store.py), kept in memory and in LMDB (adapters/lmdb_queue.py): any
sequence of pushes and takes gives each row back once, a host's lowest order first, equal orders in push order;
counts agree; an LMDB store reopened after its process went away holds exactly what it held; a full store says so
and stores nothing of the push that did not fit."""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raycrawl.adapters.lmdb_queue import LmdbQueueStore
from raycrawl.core.queue_store import MemoryQueueStore, QueueStore, QueueStoreFull, sortable_order

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


HOSTS = ["a.test", "b.test:8080", "c.test"]
operations = st.lists(
    st.one_of(
        st.tuples(st.just("push"), st.lists(st.tuples(st.sampled_from(HOSTS), st.integers(-3, 3)), max_size=12)),
        st.tuples(st.just("take"), st.tuples(st.sampled_from(HOSTS), st.integers(0, 6))),
    ),
    max_size=40,
)


# (a store made per example, by the fixture's factory: the function-scoped fixture is only the factory)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations)
def test_any_pushes_and_takes_give_each_row_back_once_in_order(
    make_store: Factory, ops: list[tuple[str, object]]
) -> None:
    store = make_store()
    model: dict[str, list[tuple[int, int, bytes]]] = {h: [] for h in HOSTS}  # (order, seq, row), the reference
    taken: list[bytes] = []
    pushed: list[bytes] = []
    seq = 0
    for op, arg in ops:
        if op == "push":
            items = []
            for host, order in arg:  # type: ignore[union-attr]
                seq += 1
                row = struct.pack(">I", seq)
                items.append((host, float(order), row))
                model[host].append((order, seq, row))
                pushed.append(row)
            store.push(items)
        else:
            host, n = arg  # type: ignore[misc]
            rows = store.take(host, n)
            expected = sorted(model[host])[:n]
            assert rows == [row for _, _, row in expected]
            model[host] = sorted(model[host])[len(rows) :]
            taken.extend(rows)
        assert store.total() == sum(len(q) for q in model.values())
        assert {h: store.count(h) for h in HOSTS} == {h: len(q) for h, q in model.items()}
    rest = [row for host in HOSTS for row in store.take(host, 10**6)]
    assert sorted(taken + rest) == sorted(pushed)  # every row once: nothing lost, nothing twice
    assert store.total() == 0 and list(store.hosts()) == []


def test_a_reopened_store_holds_exactly_what_it_held(tmp_path: Path) -> None:
    store = LmdbQueueStore(tmp_path)
    store.push([("a.test", 1.0, b"a1"), ("a.test", 0.0, b"a0"), ("b.test", 5.0, b"b5")])
    assert store.take("a.test", 1) == [b"a0"]
    store.close()
    again = LmdbQueueStore(tmp_path)
    assert (again.total(), again.count("a.test"), again.count("b.test")) == (2, 1, 1)
    again.push([("a.test", 1.0, b"a1-later")])  # (equal order: after the one pushed before the reopen)
    assert again.take("a.test", 5) == [b"a1", b"a1-later"] and again.take("b.test", 5) == [b"b5"]
    again.close()


def test_a_full_store_says_so_and_stores_nothing_of_that_push(tmp_path: Path) -> None:
    store = LmdbQueueStore(tmp_path, map_bytes=256 * 1024)
    store.push([("a.test", 0.0, b"first")])
    with pytest.raises(QueueStoreFull, match="full"):
        store.push([("a.test", 1.0, b"x" * 400) for _ in range(2000)])
    assert store.total() == 1 and store.take("a.test", 10) == [b"first"]
    store.close()
