"""Dead letters without Ray: the records taken out of a committed part, the part that replaces it, and the old
part deleted only once the checkpoint that lists the new one commits."""

from __future__ import annotations

import json
from pathlib import Path

from raycrawl.actors.output_cut import OutputParts
from raycrawl.adapters.output import read_pages, write_committed
from raycrawl.core.dead_letters import BUDGET_OUTCOMES, QUARANTINED, RETRIED_OUTCOMES, take_dead_letters
from raycrawl.core.frontier import FrontierShard
from raycrawl.core.frontier_settings import FrontierSettings
from raycrawl.core.records import Ack, UrlEntry


def lines(*records: dict[str, object]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


RECORDS = [
    {"url": "http://a.test/1", "outcome": "fetched", "depth": 1},
    {"url": "http://a.test/2", "outcome": "error", "depth": 2, "parent": "http://a.test/", "requested_url": "http://a.test/2?"},
    {"url": "http://a.test/3", "outcome": "out_of_budget", "depth": 3},
    {"url": "http://a.test/s.xml", "outcome": "error", "depth": 0, "kind": "sitemap"},
]  # fmt: skip


def test_dead_letters_come_out_of_a_part_with_fresh_attempts() -> None:
    found = take_dead_letters(lines(*RECORDS) + b"not json\n", RETRIED_OUTCOMES)
    assert found.entries == [
        UrlEntry("http://a.test/2", 2, "http://a.test/", 0, (), "http://a.test/2?"),
        UrlEntry("http://a.test/s.xml", 0, None, 0, (), None, "sitemap"),
    ]
    assert found.outcomes == {"error": 2}
    assert [json.loads(line)["url"] for line in found.kept[:2]] == ["http://a.test/1", "http://a.test/3"]
    assert found.kept[2] == b"not json\n"
    assert len(take_dead_letters(lines(*RECORDS), RETRIED_OUTCOMES | BUDGET_OUTCOMES).entries) == 3
    # --retry-quarantined: by verdict, whatever the outcome (issue 47)
    judged = [{"url": "http://a.test/q", "outcome": "fetched", "verdict": "quarantined", "depth": 1},
              {"url": "http://a.test/r", "outcome": "fetched", "verdict": "rejected", "depth": 1}]  # fmt: skip
    found = take_dead_letters(lines(*RECORDS, *judged), (), QUARANTINED)
    assert [e.url for e in found.entries] == ["http://a.test/q"] and found.verdicts == {"quarantined": 1}


def test_a_part_is_replaced_and_the_old_one_deleted_only_after_the_commit(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "pages").mkdir(parents=True)
    (out / "pages" / "pages-e000001-shard000.jsonl").write_bytes(lines(*RECORDS[:2]))
    (out / "pages" / "pages-e000001-shard001.jsonl").write_bytes(lines(RECORDS[2]))
    parts = ["pages/pages-e000001-shard000.jsonl", "pages/pages-e000001-shard001.jsonl"]
    write_committed(OutputParts(str(out), None, None, "r").storage, 1, parts)
    output = OutputParts(str(out), None, None, "r")
    output.resume(parts)
    taken = output.take_dead_letters(2, RETRIED_OUTCOMES)
    assert [e.url for e in taken.entries] == ["http://a.test/2"]
    assert output.parts == ["pages/pages-e000001-shard001.jsonl", "pages/pages-e000002-retried0000.jsonl"]
    assert {r["url"] for r in read_pages(str(out))} == {"http://a.test/1", "http://a.test/2", "http://a.test/3"}
    assert (out / "pages" / "pages-e000001-shard000.jsonl").exists()  # the committed output is untouched so far
    output.committed(2)
    assert not (out / "pages" / "pages-e000001-shard000.jsonl").exists()
    assert {r["url"] for r in read_pages(str(out))} == {"http://a.test/1", "http://a.test/3"}


def test_a_host_closed_by_an_error_is_opened_again_for_its_dead_letters() -> None:
    now = [1000.0]
    shard = FrontierShard(0, FrontierSettings(max_attempts=1), clock=lambda: now[0])
    shard.push([UrlEntry("http://a.test/x", 0)])
    (robots,) = shard.lease(10)
    shard.ack([Ack(robots.lease_id, 503, now[0], 0.01, True, "HTTP 503")])  # robots.txt unreachable: closed
    assert [t.outcome for t in shard.take_terminals()] == ["error"]
    shard.retry([UrlEntry("http://a.test/x", 0)])
    assert shard.take_terminals() == []
    now[0] += 100
    (again,) = shard.lease(10)
    assert again.kind == "robots"  # asked for anew
