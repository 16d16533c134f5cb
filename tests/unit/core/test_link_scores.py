"""score_links (issue 48): a page's answer checked, its links scored, and the frontier's order by those scores."""

from __future__ import annotations

from collections import Counter

import pytest

from raycrawl.core.frontier import FrontierShard
from raycrawl.core.frontier_settings import FrontierSettings
from raycrawl.core.link_scores import MAX_SCORE, checked, score_of
from raycrawl.core.outlinks import children, screen
from raycrawl.core.politeness import DelayPolicy
from raycrawl.core.priority import Priority, by_depth
from raycrawl.core.records import Ack, FetchResult, Lease, UrlEntry
from raycrawl.core.scope import ScopePolicy
from raycrawl.core.traps import TrapRules

LINKS = ("http://a.test/x", "http://a.test/y", "http://b.test/z")


def test_an_answer_is_a_number_for_every_link_or_a_table_by_link_url() -> None:
    assert checked(3, LINKS) == 3.0 and checked(-0.5, LINKS) == -0.5
    # A table: canonical keys as they are, other spellings canonicalised, keys the page does not link left out.
    table = checked(
        {"http://a.test/x": 2, "HTTP://A.TEST/y#frag": 1.5, "http://c.test/": 9, "http://a.test/q": 0}, LINKS
    )
    assert table == {"http://a.test/x": 2.0, "http://a.test/y": 1.5}
    assert score_of(table, "http://a.test/y") == 1.5 and score_of(table, "http://b.test/z") == 0.0
    assert score_of(4.0, "http://b.test/z") == 4.0 and score_of(None, "http://b.test/z") == 0.0
    assert checked(1e300, LINKS) == MAX_SCORE  # (never ahead of a host's sitemaps)


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ("high", "the score is str"),
        (True, "the score is bool"),
        (float("nan"), "the score is nan"),
        ({"http://a.test/x": float("inf")}, "the score of http://a.test/x is inf"),
        ({"http://a.test/x": "1"}, "the score of http://a.test/x is str"),
        ({1: 2.0}, "keyed by link URL, not int"),
        (None, "the score is NoneType"),
    ],
)
def test_an_answer_that_is_not_a_score_is_refused_saying_why(answer: object, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace(".", r"\.")):
        checked(answer, LINKS)


def _fetched(url: str, outlinks: list[str], scores: float | dict[str, float] | None, status: int = 200) -> FetchResult:
    entry = UrlEntry(url, 1, link_score=7.0)
    result = FetchResult(Lease(1, 0, "page", 0.0, 0.0, entry), status=status, outlinks=outlinks)
    result.link_scores = scores
    return result


def test_a_pages_links_carry_its_scores_to_the_frontier_entries() -> None:
    dropped: Counter[str] = Counter()
    links = children(_fetched("http://a.test/p", list(LINKS), {"http://a.test/y": 5.0}), None, dropped)
    assert [(url, score) for url, *_, score in links] == [(LINKS[0], 0.0), (LINKS[1], 5.0), (LINKS[2], 0.0)]
    links = children(_fetched("http://a.test/p", list(LINKS), 2.5), None, dropped)
    assert {score for *_, score in links} == {2.5}
    # A redirect's target keeps the score its own link had (a hop is not a page that scored anything).
    (target,) = children(_fetched("http://a.test/old", ["http://a.test/new"], None, status=301), None, dropped)
    assert target[-1] == 7.0
    candidates = screen(links, TrapRules(), ScopePolicy("any", []), dropped)
    assert {url: info[-1] for url, info in candidates.items()} == dict.fromkeys(LINKS, 2.5)


def test_an_entry_keeps_its_link_score_through_a_row_and_the_frontier_orders_by_it() -> None:
    entry = UrlEntry("http://a.test/x", 3, "http://a.test/", link_score=2.5)
    assert UrlEntry.from_row(entry.to_row()) == entry
    assert UrlEntry.from_row(UrlEntry("http://a.test/x", 3).to_row()).link_score == 0.0
    # by depth, a link score of 2.5 puts a depth-3 URL ahead of a depth-1 one (one unit is one level)
    assert by_depth(entry) < by_depth(UrlEntry("http://a.test/y", 1))
    key = Priority.of((), links_scored=True).frontier_key()
    assert key is not by_depth  # (hosts are ranked by their best URL: scores say more than depth)
    assert key(entry) < key(UrlEntry("http://a.test/y", 1)) and key(entry) == -(-3 + 2.5)
    assert key(UrlEntry("http://a.test/s.xml", 9, kind="sitemap")) < key(
        UrlEntry("http://a.test/z", 0, link_score=MAX_SCORE)
    )


def test_scarce_capacity_goes_to_the_host_whose_link_scored_best() -> None:
    """Within a host and across hosts, a scored link goes before unscored ones of the same depth."""
    now = [1000.0]
    settings = FrontierSettings(policy=DelayPolicy(delay=1.0, delay_factor=0.0))
    shard = FrontierShard(0, settings, Priority.of((), links_scored=True).frontier_key(), lambda: now[0])
    shard.push([UrlEntry(f"http://h{h}.test/p{i}", 2, link_score=(4.0 if (h, i) == (3, 5) else 0.0))
                for h in range(5) for i in range(8)])  # fmt: skip
    robots = shard.lease(10)  # (robots.txt first, one per host, answered: every host may go)
    shard.ack([Ack(lease.lease_id, 404, now[0], 0.0, False) for lease in robots])
    now[0] += 5
    (first,) = shard.lease(1)
    assert first.url == "http://h3.test/p5"


def _scored(scorer: object, links: tuple[str, ...] = LINKS) -> object:
    from raycrawl.adapters.extraction import Extraction
    from raycrawl.core.extract_settings import ExtractSettings
    from raycrawl.core.page import Page

    extraction = Extraction(ExtractSettings(extract=lambda page: {"t": 1}, extract_timeout=0.5, score_links=scorer))
    page = Page("http://a.test/p", 200, b"<p>x</p>", links=links)
    return extraction.score_links(page, extraction.judge(page).item)


def _hangs(page: object, item: object) -> float:
    import time

    time.sleep(5)
    return 1.0


def test_a_scorer_that_fails_hangs_or_answers_nonsense_leaves_the_links_unscored(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from raycrawl.adapters import say_once

    say_once.said.discard("score_links")
    assert _scored(lambda page, item: {page.links[1]: item["t"] * 2}) == {LINKS[1]: 2.0}
    assert _scored(lambda page, item: 1 / 0) is None
    assert _scored(lambda page, item: "high") is None
    assert _scored(_hangs) is None  # (stopped at --extract-timeout)
    assert _scored(lambda page, item: 1 / 0, links=()) is None  # (no links: not asked)
    assert capsys.readouterr().err.count("score_links") == 1  # said once per process, not per page
