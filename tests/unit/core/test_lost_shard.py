"""A frontier shard lost and rebuilt alone, without Ray (core/link_routing.py, core/shard_work.py,
core/seen_partition.py): its successor is restored from the last checkpoint, given what the live shards sent the
lost one since, and what the lost one took as new since -- and the live shards did not get -- is new once more to
it alone. Nothing lost, nothing queued twice, the batch counts agree."""

from __future__ import annotations

from array import array
from typing import Any

from test_shard_work import page_result, url_of_shard, work

from raycrawl.core import link_routing, seen_partition
from raycrawl.core.captures import Capture
from raycrawl.core.entry_lines import decode
from raycrawl.core.link_routing import PartitionShare, all_delivered
from raycrawl.core.records import UrlEntry
from raycrawl.core.seen_partition import SeenPartition
from raycrawl.core.shard_work import ShardWork
from raycrawl.core.stats import CrawlStats

PARTITIONS = 2


def ask(parts: list[SeenPartition], w: ShardWork, shares: dict[int, PartitionShare]) -> dict[int, list[UrlEntry]]:
    """One round of ``w``'s links through the partitions; the new URLs by owner (``w``'s own queued already)."""
    out: dict[int, list[UrlEntry]] = {}
    for p, share in shares.items():
        packed = array("Q", share.fingerprints).tobytes()
        answer = parts[p].add_new(packed, w.shard_id, w.router.incarnation)
        for owner, entries in w.answered(p, share, answer).items():
            out.setdefault(owner, []).extend(entries)
    return out


def deliver(shards: list[ShardWork], sender: ShardWork, out: dict[int, list[UrlEntry]]) -> None:
    for owner, entries in out.items():
        shards[owner].receive(entries, sender.shard_id, sender.router.incarnation)


def settle_page(w: ShardWork, url: str, links: list[str], batch: int) -> None:
    """``url`` queued at ``w`` (robots.txt answered first), leased, fetched with ``links``."""
    w.requeue([UrlEntry(url, 0)])  # (queued here, as a seed would be: no batch counted)
    for _ in range(50):
        leases, _ = w.lease(10, 0.0, None, batch)
        batch += 1
        # (robots.txt: 404, allow all; other pages of the host, leased first: fetched, with no links)
        others = [lease for lease in leases if lease.url != url]
        w.settle([page_result(lease, [], status=404 if lease.kind == "robots" else 200) for lease in others])
        if len(others) < len(leases):
            w.settle([page_result(next(lease for lease in leases if lease.url == url), links)])
            return
    raise AssertionError(f"{url} was never leased")


def queued_urls(w: ShardWork) -> set[str]:
    """The URLs queued at ``w`` (as a checkpoint would save them)."""
    lines = [line for host in w.frontier.snapshot()["hosts"] for line in host["lines"].splitlines()]
    return {decode(line).url for line in lines}


def at_a_checkpoint() -> tuple[list[ShardWork], list[SeenPartition], dict[str, Any]]:
    """Two shards and the partitions, told a checkpoint committed; shard 1's part of it (what its successor is
    restored from)."""
    shards = [work(0)[0], work(1)[0]]
    parts = [SeenPartition("exact", 1000, 0.01) for _ in range(PARTITIONS)]
    saved = shards[1].frontier.snapshot()
    for w in shards:
        w.checkpointed()
    for part in parts:
        part.checkpointed()
    return shards, parts, saved


def test_the_successor_gets_what_was_sent_and_finds_its_own_links_again_once() -> None:
    # The checkpoint: shard 1 as it is now; then both shards and partitions are told it committed.
    shards, parts, saved = at_a_checkpoint()
    w0, w1 = shards
    # Since: shard 1 fetches a page with a link of its own, one of shard 0's (delivered) and one of shard 0's
    # whose batch never arrives (it was on its way when shard 1 died); shard 0 sends shard 1 a URL.
    own, theirs, in_flight = url_of_shard(1, path="/own"), url_of_shard(0, path="/t"), url_of_shard(0, path="/f")
    settle_page(w1, url_of_shard(1, path="/p"), [own, theirs], 1)
    deliver(shards, w1, ask(parts, w1, w1.take_shares()))
    settle_page(w1, url_of_shard(1, path="/q"), [in_flight], 20)
    lost_batch = ask(parts, w1, w1.take_shares())
    assert [e.url for e in lost_batch[0]] == [in_flight]
    sent = url_of_shard(1, path="/sent")
    settle_page(w0, url_of_shard(0, path="/z"), [sent], 40)
    deliver(shards, w0, ask(parts, w0, w0.take_shares()))

    # Shard 1 is lost; its successor is restored from the checkpoint and takes over.
    successor, _, _ = work(1)
    successor.frontier.restore(saved)
    answers = [part.lost_shard(1, 2, 1) for part in parts]
    assert all(undone for _, undone in answers)
    handover = w0.hand_over(1, 1)
    marks = {p: array("Q", packed).tolist() for p, (packed, _) in enumerate(answers)}
    successor.succeed([handover], marks, 1)
    shards[1] = successor
    assert sent in queued_urls(successor)  # (sent by shard 0 since the checkpoint: sent again)
    # The lost shard's late batch arrives: dropped (its successor finds those URLs again).
    w0.receive(lost_batch[0], 1, 0)
    assert in_flight not in queued_urls(w0)

    # The successor fetches the lost shard's pages again: its own link and the lost batch's are new once more,
    # the one shard 0 got is not.
    settle_page(successor, url_of_shard(1, path="/p"), [own, theirs], 60)
    settle_page(successor, url_of_shard(1, path="/q"), [in_flight], 80)
    out = ask(parts, successor, successor.take_shares())
    assert own in queued_urls(successor)
    assert [e.url for e in out[0]] == [in_flight]
    deliver(shards, successor, out)
    assert in_flight in queued_urls(w0)
    # Found a third time, by anyone: seen.
    settle_page(w0, url_of_shard(0, path="/y"), [own, in_flight], 100)
    assert ask(parts, w0, w0.take_shares()) == {}
    _, s0 = w0.lease(0, 0.0, None, 200)
    _, s1 = successor.lease(0, 0.0, None, 200)
    assert all_delivered([s0.sent, s1.sent], [s0.received, s1.received])


def test_a_batch_that_reaches_the_successor_before_it_takes_over_is_counted() -> None:
    # (a live shard sends its new URLs to the successor from its hand-over on; one that settles a page before the
    # coordinator's succeed reaches the successor delivers a batch first: if succeed then set its count to the
    # hand-over's, the counts never agreed again -- the crawl never at rest, no checkpoint, no stop)
    shards, parts, saved = at_a_checkpoint()
    w0 = shards[0]
    before = url_of_shard(1, path="/before")
    settle_page(w0, url_of_shard(0, path="/a"), [before], 1)
    deliver(shards, w0, ask(parts, w0, w0.take_shares()))

    successor, _, _ = work(1)
    successor.frontier.restore(saved)
    answers = [part.lost_shard(1, 2, 1) for part in parts]
    handover = w0.hand_over(1, 1)
    shards[1] = successor
    early = url_of_shard(1, path="/early")
    settle_page(w0, url_of_shard(0, path="/b"), [early], 20)
    deliver(shards, w0, ask(parts, w0, w0.take_shares()))  # (before the successor is told to take over)
    marks = {p: array("Q", packed).tolist() for p, (packed, _) in enumerate(answers)}
    successor.succeed([handover], marks, 1)

    assert {before, early} <= queued_urls(successor)
    _, s0 = w0.lease(0, 0.0, None, 200)
    _, s1 = successor.lease(0, 0.0, None, 200)
    assert all_delivered([s0.sent, s1.sent], [s0.received, s1.received])


def test_an_ask_of_a_lost_incarnation_marks_nothing() -> None:
    part = SeenPartition("exact", 1000, 0.01)
    packed = array("Q", [7, 8]).tobytes()
    assert part.add_new(packed, 1, 0) == b"\x01\x01"
    part.lost_shard(1, 2, 1)
    late = array("Q", [9]).tobytes()
    assert part.add_new(late, 1, 0) == b"\x00"  # (a call of the dead process, come late)
    assert part.add_new(late, 1, 1) == b"\x01"  # ... so its successor finds it new
    marks, _ = part.lost_shard(1, 2, 2)
    assert sorted(array("Q", marks)) == [7, 8, 9]  # every incarnation's since the checkpoint


def test_a_lost_shards_captures_go_back_unless_a_revisit_names_one() -> None:
    lost_url, other_url = url_of_shard(1, path="/a"), url_of_shard(0, path="/b")
    part = SeenPartition("exact", 1000, 0.01)
    key, key2 = b"k" * 16, b"j" * 16
    part.claim_payloads([(key, Capture(lost_url, "<urn:1>", "d1"))])
    part.checkpointed()
    part.claim_payloads([(key, Capture(lost_url, "<urn:2>", "d2")), (key2, Capture(lost_url, "<urn:3>", "d3"))])
    _, undone = part.lost_shard(1, 2, 1)
    assert undone
    # The committed capture is the first again; the one made since is forgotten.
    assert part.claim_payloads([(key, Capture(other_url, "<urn:9>", "d9"))]) == [Capture(lost_url, "<urn:1>", "d1")]
    assert part.claim_payloads([(key2, Capture(other_url, "<urn:8>", "d8"))]) == [None]
    # A capture of the lost shard's since the checkpoint that a revisit was told to name: it cannot go back.
    part.checkpointed()
    part.claim_payloads([(b"x" * 16, Capture(lost_url, "<urn:4>", "d4"))])
    part.claim_payloads([(b"x" * 16, Capture(other_url, "<urn:5>", "d5"))])
    assert part.lost_shard(1, 2, 2)[1] is False


def test_a_lost_shards_counts_since_the_checkpoint_are_taken_back() -> None:
    total, since = CrawlStats(started_at=0.0), CrawlStats(started_at=0.0)
    total.outcomes.update({"fetched": 10, "error": 1})
    total.bytes = 1000
    since.outcomes.update({"fetched": 4, "error": 1})
    since.bytes = 300
    total.take_back(since)
    assert total.outcomes == {"fetched": 6} and total.bytes == 700


def test_logs_past_their_bound_say_a_lost_shard_cannot_be_rebuilt_alone(monkeypatch: Any) -> None:
    """A crawl with rare checkpoints: the logs since the last one stop at their bound (memory stays bounded), and say
    so -- a lost shard then rolls the crawl back -- until the next checkpoint starts them again."""
    monkeypatch.setattr(link_routing, "SINCE_CUT_BOUND", 3)
    monkeypatch.setattr(seen_partition, "SINCE_CUT_MARKS", 3)
    w0, _, _ = work(0)
    entries = [UrlEntry(url_of_shard(1, path=f"/{i}"), 1) for i in range(4)]
    w0.router.by_owner(entries)
    assert not w0.hand_over(1, 1).complete
    w0.checkpointed()
    w0.router.by_owner(entries[:2])
    handover = w0.hand_over(1, 2)
    assert handover.complete and [e.url for e in handover.sent] == [e.url for e in entries[:2]]
    part = SeenPartition("exact", 1000, 0.01)
    part.add_new(array("Q", [1, 2, 3, 4]).tobytes(), 1)
    assert part.lost_shard(1, 2, 1) == (b"", False)
    part.checkpointed()
    part.add_new(array("Q", [5]).tobytes(), 1, 1)  # (its successor's)
    marks, exact = part.lost_shard(1, 2, 2)
    assert exact and list(array("Q", marks)) == [5]
