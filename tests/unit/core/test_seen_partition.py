"""A seen-set partition saved as what changed (core/seen_partition.py) and kept in the crawl's storage as a base and
the changes after it (adapters/seen_segments.py): restoring what was written gives back exactly the partition of
the cut -- the same answers for every fingerprint, the same captures; a checkpoint writes what changed, not what was
ever seen; a new base is written off the pause and the files it replaces go once a checkpoint naming it commits."""

from __future__ import annotations

import random
import shutil
from array import array
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raycrawl.adapters import seen_segments
from raycrawl.adapters.seen_segments import SeenSegments, refs_of
from raycrawl.adapters.storage import open_storage
from raycrawl.core.captures import Capture, payload_key
from raycrawl.core.seen_partition import SeenKind, SeenPartition

KINDS: list[SeenKind] = ["exact", "bloom"]


def packed(fps: list[int]) -> bytes:
    return array("Q", fps).tobytes()


def claim(state: SeenPartition, digest: str, url: str) -> Capture | None:
    return state.claim_payloads(
        [(payload_key(digest * (64 // len(digest))), Capture(url, f"<urn:{url}>", "2026-12-02T00:00:00Z"))]
    )[0]


def same(a: SeenPartition, b: SeenPartition, probes: list[int], digests: list[str]) -> None:
    """Both partitions answer every probe alike, and name the same first capture for every payload."""
    assert len(a.seen) == len(b.seen)
    assert a.add_new(packed(probes)) == b.add_new(packed(probes))
    for d in digests:
        assert claim(a, d, "http://other.test/") == claim(b, d, "http://other.test/")


steps = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.lists(st.integers(0, 60), max_size=12)),
        st.tuples(st.just("capture"), st.tuples(st.sampled_from("abcd"), st.sampled_from(["u1", "u2", "u3"]))),
        st.tuples(st.just("cut"), st.none()),
        st.tuples(st.just("whole"), st.none()),
    ),
    max_size=30,
)


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=60, deadline=None)
@given(ops=steps)
def test_the_last_whole_and_the_changes_after_it_restore_the_same_partition(
    kind: SeenKind, ops: list[tuple[str, object]]
) -> None:
    live = SeenPartition(kind, 1000, 0.001)
    whole: bytes | None = None
    changes: list[bytes] = []
    for op, arg in ops:
        if op == "add":
            live.add_new(packed(arg))  # type: ignore[arg-type]
        elif op == "capture":
            digest, url = arg  # type: ignore[misc]
            claim(live, digest, f"http://a.test/{url}")
        elif op == "cut":
            change = live.take_changes()
            if change:
                changes.append(change)
        else:
            whole, changes = live.whole(), []
    change = live.take_changes()
    again = SeenPartition(kind, 1000, 0.001)
    again.restore(whole, [*changes, change] if change else changes)
    assert again.take_changes() == b""  # (restored is not changed)
    same(live, again, list(range(70)), list("abcde"))


def test_changes_are_what_was_added_since_the_last_take() -> None:
    state = SeenPartition("exact", 1000, 0.001)
    state.add_new(packed([5, 6, 7]))
    assert len(state.take_changes()) == 3 * 8
    state.add_new(packed([6, 7, 8]))  # (only 8 is new)
    assert state.take_changes() == packed([8])
    assert state.take_changes() == b""


@pytest.mark.parametrize("kind", KINDS)
def test_each_checkpoint_writes_what_changed_and_a_restore_reads_it_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: SeenKind
) -> None:
    monkeypatch.setattr(seen_segments, "MIN_BASE_BYTES", 20_000)  # (a new base after a few checkpoints)
    storage = open_storage(str(tmp_path / "out"))
    live = SeenPartition(kind, 50_000, 0.001)
    segments = SeenSegments(storage, 2, live)
    rng = random.Random(7)
    seen: list[int] = []
    for cut in range(10):
        fresh = [rng.getrandbits(64) for _ in range(1000)]
        seen += fresh
        live.add_new(packed(fresh + seen[::50]))  # (new ones, and some seen before)
        claim(live, f"{cut:064x}", f"http://a.test/{cut}")
        before = sum(p.stat().st_size for p in (tmp_path / "out").rglob("*") if p.is_file())
        part = segments.checkpoint()
        written = sum(p.stat().st_size for p in (tmp_path / "out").rglob("*") if p.is_file()) - before
        segments.committed()
        # this cut's 1,000 fingerprints and one capture; never what was seen before (a base goes on its thread)
        assert 8_000 <= written < 9_500 or segments._base is not None
        refs = refs_of(part)
        assert refs is not None and all(r.startswith("seen/part-002/") for r in refs)
        pending = []
        if segments._base is not None:
            segments._base.thread.join()
            assert segments._base.error is None
            pending.append(segments._base.name)
        again = SeenPartition(kind, 50_000, 0.001)  # (restored from a copy: a restore takes the files over)
        shutil.copytree(tmp_path / "out", tmp_path / f"copy-{cut}")
        SeenSegments(open_storage(str(tmp_path / f"copy-{cut}")), 2, again).restore(refs)
        same(live, again, seen[::7] + [rng.getrandbits(64) for _ in range(50)], [f"{c:064x}" for c in range(11)])
        # (the probes above added their new fingerprints and captures to both: the next checkpoint writes them)
        on_disk = sorted(str(p.relative_to(tmp_path / "out")) for p in (tmp_path / "out/seen").rglob("*.bin"))
        assert on_disk == sorted(refs + pending)  # (the files no committed checkpoint names are gone)
    assert any("/base-" in ref for ref in refs)  # a base was written, and the changes before it went
    last = refs_of(segments.checkpoint())  # (the last probes' changes)
    assert refs_of(segments.checkpoint()) == last  # nothing changed: nothing written
    segments.close()


def test_a_restore_takes_over_the_files_and_drops_what_a_lost_partition_left(tmp_path: Path) -> None:
    storage = open_storage(str(tmp_path / "out"))
    first = SeenPartition("exact", 1000, 0.001)
    lost = SeenSegments(storage, 0, first)
    first.add_new(packed([1, 2, 3]))
    refs = refs_of(lost.checkpoint())
    lost.committed()
    first.add_new(packed([4]))
    lost.checkpoint()  # (a checkpoint that never committed: its file is a stray)
    assert refs is not None and len(storage.list("seen/part-000")) == 2
    rebuilt = SeenPartition("exact", 1000, 0.001)
    SeenSegments(storage, 0, rebuilt).restore(refs)
    assert storage.list("seen/part-000") == refs
    assert rebuilt.add_new(packed([1, 2, 3, 4])) == bytes([0, 0, 0, 1])


def test_a_checkpoint_part_from_before_files_is_the_partition_whole() -> None:
    state = SeenPartition("exact", 1000, 0.001)
    state.add_new(packed([9]))
    assert refs_of(state.whole()) is None
