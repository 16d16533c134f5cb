"""HostQueue: lowest score first, FIFO among equal scores -- the same order as one heap of (score, seq, entry)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from raycrawl.core.host_queue import HostQueue
from raycrawl.core.records import UrlEntry

scores = st.lists(st.sampled_from([0.0, 1.0, 2.0, 2.5, 7.0]) | st.floats(-1e6, 1e6), max_size=200)


def _filled(values: list[float]) -> tuple[HostQueue, list[UrlEntry]]:
    queue = HostQueue()
    entries = [UrlEntry(f"http://a.test/{i}", 0) for i in range(len(values))]
    for score, entry in zip(values, entries, strict=True):
        queue.push(score, entry)
    return queue, entries


def _expected(values: list[float], entries: list[UrlEntry]) -> list[UrlEntry]:
    order = sorted(range(len(values)), key=lambda i: (values[i], i))
    return [entries[i] for i in order]


@given(scores)
def test_pops_come_lowest_score_first_and_in_arrival_order_within_a_score(values: list[float]) -> None:
    queue, entries = _filled(values)
    expected = _expected(values, entries)
    assert list(queue) == expected  # iteration shows the order pop will follow
    assert [queue.pop() for _ in range(len(queue))] == expected
    assert not queue and len(queue) == 0


@given(scores, st.integers(2, 5))
def test_remove_if_takes_out_exactly_the_selected_and_keeps_the_order_of_the_rest(
    values: list[float], modulus: int
) -> None:
    queue, entries = _filled(values)
    expected = _expected(values, entries)
    unwanted = {e.url for i, e in enumerate(entries) if i % modulus == 0}
    removed = queue.remove_if(lambda e: e.url in unwanted)
    assert {e.url for e in removed} == unwanted
    assert len(queue) == len(values) - len(unwanted)
    assert [queue.pop() for _ in range(len(queue))] == [e for e in expected if e.url not in unwanted]


@given(scores, scores)
def test_pushes_between_pops_keep_the_order(first: list[float], second: list[float]) -> None:
    queue, entries = _filled(first)
    popped = [queue.pop() for _ in range(len(first) // 2)]
    later = [UrlEntry(f"http://a.test/later/{i}", 0) for i in range(len(second))]
    for score, entry in zip(second, later, strict=True):
        queue.push(score, entry)
    rest = [queue.pop() for _ in range(len(queue))]
    assert sorted(map(id, popped + rest)) == sorted(map(id, entries + later))
    remaining = _expected(first, entries)[len(popped) :]
    # What is left of the first batch and the second batch merge by score; equal scores: earlier pushes first.
    merged = sorted(
        [(first[entries.index(e)], 0, i, e) for i, e in enumerate(remaining)]
        + [(s, 1, i, e) for i, (s, e) in enumerate(zip(second, later, strict=True))],
        key=lambda t: (t[0], t[1], t[2]),
    )
    assert rest == [t[3] for t in merged]


def test_clear_returns_everything_in_order_and_empties() -> None:
    queue, entries = _filled([2.0, 1.0, 2.0, 0.0])
    assert queue.clear() == [entries[3], entries[1], entries[0], entries[2]]
    assert len(queue) == 0 and list(queue) == []
