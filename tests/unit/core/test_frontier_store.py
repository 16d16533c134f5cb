"""A frontier whose hosts keep a small workbench in memory and the rest in a queue store (core/workbench.py) is the
same frontier: for any sequence of push, lease (in runs too), ack, release, give-back, expiry, snapshot and restore
it hands out the same
leases, in the same order, as one that keeps everything in memory -- so each URL is leased or ended exactly once,
priorities within and across hosts are kept -- while no host holds more than its workbench in memory."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from raycrawl.adapters.lmdb_queue import LmdbQueueStore
from raycrawl.core.frontier import FrontierShard, ScoreFn
from raycrawl.core.frontier_settings import FrontierSettings
from raycrawl.core.politeness import DelayPolicy
from raycrawl.core.priority import by_depth
from raycrawl.core.queue_log import LoggedQueueStore, replay
from raycrawl.core.queue_store import MemoryQueueStore, QueueStore
from raycrawl.core.records import Ack, Lease, UrlEntry
from raycrawl.core.workbench import decode, decode_block, encode

WORKBENCH = 3
HOSTS = ["a.test", "b.test", "c.test:8080"]


def ranked(entry: UrlEntry) -> float:
    """A score that says more than depth (hosts are then ranked by their best URL): ties and inversions, and a
    sitemap's hint (core/sitemap_hints.py) moves a URL up."""
    return float(entry.depth) - (len(entry.url) % 3) * 0.5 - entry.hint


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Stores:
    """Stores of one kind, made per example and closed at its end (an LMDB store reserves its map's address
    space while open)."""

    def __init__(self, kind: str, tmp: pytest.TempPathFactory) -> None:
        self.kind, self.tmp, self.opened = kind, tmp, list[LmdbQueueStore]()

    def make(self) -> QueueStore:
        if self.kind == "memory":
            return MemoryQueueStore()
        store = LmdbQueueStore(self.tmp.mktemp("frontier"), map_bytes=1 << 26)
        self.opened.append(store)
        return store

    def close_all(self) -> None:
        for store in self.opened:
            store.close()
        self.opened = []


@pytest.fixture(params=["memory", "lmdb"])
def stores(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stores]:
    made = Stores(request.param, tmp_path_factory)
    yield made
    made.close_all()


def shard(
    clock: Clock, score: ScoreFn, store: QueueStore | None, workbench: int = WORKBENCH, run_length: int = 1
) -> FrontierShard:
    frontier = FrontierSettings(
        policy=DelayPolicy(delay=0.5, delay_factor=0.0),
        workbench=workbench,
        lease_ttl=30.0,
        max_attempts=3,
        run_length=run_length,  # (a host's run, core/runs.py: several of its URLs in one lease)
    )
    return FrontierShard(0, frontier, score, clock, store)


entries = st.builds(
    lambda host, depth, path: UrlEntry(f"http://{host}/{'p' * (path % 4)}{path}", depth),
    st.sampled_from(HOSTS),
    st.integers(0, 3),
    st.integers(0, 60),
)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("push"), st.lists(entries, max_size=15)),
        st.tuples(st.just("lease"), st.integers(1, 6)),
        st.tuples(st.just("ack"), st.sampled_from([200, 404, 503])),
        st.tuples(st.just("release"), st.just(0)),
        st.tuples(st.just("give_back"), st.just(0)),  # the last lease out comes back unsent (a run cut short)
        st.tuples(st.just("wait"), st.sampled_from([0.2, 1.0, 40.0])),  # (40 s: past the lease TTL)
        st.tuples(st.just("checkpoint"), st.just(0)),  # snapshot, then a new shard restored from it
        st.tuples(st.just("hints"), st.lists(st.integers(0, 60), max_size=8)),  # a sitemap lists some URLs
    ),
    max_size=60,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations, by_rank=st.booleans(), workbench=st.sampled_from([2, 3, 6]), run=st.sampled_from([1, 3]))
@example(  # a page leased, its lease run out, leased again: the first lease's late ack is stale, the URL fetched once
    ops=[
        ("push", [UrlEntry("http://a.test/0", 0)]),
        ("lease", 1),
        ("ack", 200),
        ("wait", 1.0),
        ("lease", 1),
        ("wait", 40.0),
        ("lease", 1),
    ],
    by_rank=False,
    workbench=2,
    run=1,
)
@example(  # a run's first URL empties a workbench: the run goes on with the host's stored URLs
    ops=[("push", [UrlEntry(f"http://a.test/{'p' * i}{i}", 0) for i in range(3)]), ("lease", 1), ("ack", 200),
         ("lease", 1), ("release", 0), ("wait", 40.0), ("lease", 2)],
    by_rank=False,
    workbench=2,
    run=3,
)  # fmt: skip
@example(  # a URL leased at a checkpoint goes back to the head of its host's queue, stored or not
    ops=[("push", [UrlEntry(f"http://a.test/{'p' * i}{i}", 0) for i in range(3)]), ("lease", 1), ("ack", 200),
         ("lease", 1), ("checkpoint", 0)],
    by_rank=False,
    workbench=2,
    run=3,
)  # fmt: skip
def test_a_stored_frontier_leases_what_an_in_memory_one_leases(
    stores: Stores, ops: list[tuple[str, object]], by_rank: bool, workbench: int, run: int
) -> None:
    try:
        check_same_leases(stores, ops, by_rank, workbench, run)
    finally:
        stores.close_all()


def check_same_leases(
    stores: Stores, ops: list[tuple[str, object]], by_rank: bool, workbench: int, run: int = 1
) -> None:
    score: ScoreFn = ranked if by_rank else by_depth
    clocks = (Clock(), Clock())
    memory = shard(clocks[0], score, None, run_length=run)
    stored = shard(clocks[1], score, stores.make(), workbench, run)
    outstanding: list[list[Lease]] = [[], []]
    pushed: set[str] = set()
    fetched: list[str] = []  # pages acked with a final answer
    for op, arg in ops:
        if op == "push":
            fresh = []
            for e in arg:  # type: ignore[union-attr]
                if e.url not in pushed:  # (the seen-set's job)
                    pushed.add(e.url)
                    fresh.append(e)
            memory.push(list(fresh))
            stored.push([UrlEntry(e.url, e.depth) for e in fresh])
        elif op == "lease":
            # (runs take as many gaps of the host's delay as the horizon holds: 1 s holds two of 0.5 s)
            horizon = 1.0 if run > 1 else 0.0
            got = [memory.lease(arg, horizon), stored.lease(arg, horizon)]  # type: ignore[arg-type]
            assert [(x.url, x.kind, x.not_before) for x in got[0]] == [(x.url, x.kind, x.not_before) for x in got[1]]
            for side in (0, 1):
                outstanding[side] += got[side]
        elif op in ("ack", "release") and outstanding[0]:
            for side, frontier in enumerate((memory, stored)):
                lease = outstanding[side].pop(0)
                if op == "release":
                    frontier.release([lease.lease_id])
                    continue
                status = 404 if lease.kind == "robots" else arg
                reply = frontier.ack([Ack(lease.lease_id, status, clocks[side].now, 0.01, status == 503)])  # type: ignore[arg-type]
            # (an ack of a lease that expired and was handed out again is stale: that URL's fetch is the new lease's)
            if op == "ack" and lease.kind == "page" and arg != 503 and not reply.stale:
                fetched.append(lease.url)
        elif op == "give_back" and outstanding[0]:
            for side, frontier in enumerate((memory, stored)):
                frontier.give_back([outstanding[side].pop().lease_id])
        elif op == "hints":
            listed = {e for e in pushed if int(e.rsplit("/", 1)[1].lstrip("p")) in arg}  # type: ignore[operator]
            for frontier in (memory, stored):
                frontier.apply_hints({url: (None, 0.9) for url in listed})
        elif op == "wait":
            for clock in clocks:
                clock.now += arg  # type: ignore[operator]
        elif op == "checkpoint":
            saved = stored.snapshot()
            stored = shard(clocks[1], score, stores.make(), workbench, run)
            stored.restore(saved)
            memory_saved = memory.snapshot()
            memory = shard(clocks[0], score, None, run_length=run)
            memory.restore(memory_saved)
            outstanding = [[], []]  # (leases out at a checkpoint are queued again in it)
        assert stored.queued == memory.queued
        assert all(len(hs.queue) <= workbench for hs in stored.hosts.values())  # (the bound this is about)
        assert stored.summary()["queued_on_disk"] == sum(hs.stored for hs in stored.hosts.values())
    # Then everything is leased to the end, both the same way; every URL pushed is fetched once or ended once.
    for side, frontier in enumerate((memory, stored)):
        acks = [Ack(x.lease_id, 404 if x.kind == "robots" else 200, 0.0, 0.01, False) for x in outstanding[side]]
        reply = frontier.ack(acks)
    fetched.extend(x.url for x in outstanding[1] if x.kind == "page" and x.lease_id not in reply.stale)
    for _ in range(10_000):
        if not memory.queued:
            break
        for clock in clocks:
            clock.now += 1.0
        got = [memory.lease(10), stored.lease(10)]
        assert [(x.url, x.kind, x.not_before) for x in got[0]] == [(x.url, x.kind, x.not_before) for x in got[1]]
        for side, frontier in enumerate((memory, stored)):
            frontier.ack([Ack(x.lease_id, 404 if x.kind == "robots" else 200, 0.0, 0.01, False) for x in got[side]])
        fetched.extend(x.url for x in got[1] if x.kind == "page")
    assert stored.queued == memory.queued == 0
    ends = [t.entry.url for t in stored.take_terminals()]
    assert sorted(ends) == sorted(t.entry.url for t in memory.take_terminals())
    once = fetched + ends
    assert sorted(set(once)) == sorted(pushed) and len(once) == len(set(once))


@given(
    st.lists(
        st.builds(
            UrlEntry,
            url=st.sampled_from(
                ["http://a.test/", "http://a.test/x\ty", "http://a.test/x\ny", "https://b.test:8443/p?q=1"]
            ),
            depth=st.integers(0, 50),
            parent=st.one_of(st.none(), st.sampled_from(["http://a.test/", "http://a.test/\t"])),
            attempts=st.integers(0, 5),
            redirects=st.sampled_from([(), ("http://a.test/r",)]),
            requested=st.sampled_from([None, "http://a.test/%7E"]),
            kind=st.sampled_from(["page", "sitemap"]),
            hint=st.sampled_from([0.0, -1.5]),
        ),
        min_size=1,
    )
)
def test_a_stored_block_gives_back_its_entries(entries: list[UrlEntry]) -> None:
    assert [decode(encode(entry)) for entry in entries] == entries
    assert decode_block("\n".join(encode(entry) for entry in entries).encode()) == entries


def test_a_shard_restored_from_its_store_log_counts_what_waits_on_disk() -> None:
    """As the actor checkpoints: the snapshot counts each host's stored URLs, the store comes back by its log."""
    logged = LoggedQueueStore(MemoryQueueStore())
    before = shard(Clock(), by_depth, logged)
    before.push([UrlEntry(f"http://{HOSTS[i % 3]}/{i}", 1) for i in range(200)])
    saved = before.snapshot(stored_rows=False)
    replayed = MemoryQueueStore()
    replay(replayed, logged.take_log())
    after = shard(Clock(), by_depth, LoggedQueueStore(replayed))
    after.restore(saved)
    assert after.queued == before.queued == 200
    assert after.summary()["queued_on_disk"] == before.summary()["queued_on_disk"] > 150
