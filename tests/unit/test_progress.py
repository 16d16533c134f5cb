"""Progress output by where the crawl runs: lines when stderr is not a terminal, nothing with --quiet."""

from __future__ import annotations

import pytest

from raycrawl.progress import RAY_JOB_ENV, Progress

STATUS = {"state": "running", "elapsed_s": 3.0, "pages": 42, "pages_per_s": 14.0, "queued": 7, "leased": 2,
          "hosts_ready": 3, "hosts_paused": 1, "errors": 0}  # fmt: skip


def test_lines_when_not_a_terminal_and_nothing_when_quiet(capsys: pytest.CaptureFixture[str]) -> None:
    progress = Progress(quiet=False)
    assert progress.mode == "lines"  # pytest's captured stderr is not a TTY
    progress(STATUS)
    progress(STATUS)  # within LOG_EVERY: no second line
    progress.close()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\r" not in err
    assert "pages 42" in err and "queued 7" in err and "hosts ready 3" in err and "paused 1" in err
    quiet = Progress(quiet=True)
    quiet(STATUS)
    quiet.close()
    assert capsys.readouterr().err == ""


def test_a_failed_checkpoint_is_warned_once(capsys: pytest.CaptureFixture[str]) -> None:
    progress = Progress(quiet=True)
    for _ in range(3):
        progress({**STATUS, "checkpoint_error": "checkpoint 3 failed, will retry: Redis unavailable"})
    assert capsys.readouterr().err.count("warning: checkpoint 3 failed") == 1


def test_inside_a_ray_job_the_mode_is_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(RAY_JOB_ENV, "{}")
    assert Progress(quiet=False).mode == "ray"


def test_the_last_figures_shown_are_the_final_ones(capsys: pytest.CaptureFixture[str]) -> None:
    progress = Progress(quiet=False)
    progress(STATUS)
    summary = {"elapsed_s": 9.0, "outcomes": {"fetched": 50, "error": 2, "robots_denied": 9}, "pages_per_s": 5.8,
               "left_queued": 3}  # fmt: skip
    progress.close(final=summary)
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "finished: pages 52" in last and "queued 3" in last and "errors 2" in last


def test_a_terminal_bar_shows_one_rate_only() -> None:
    bar = Progress(quiet=False)._bar_format()
    assert "rate" not in bar and "{postfix}" in bar


def test_a_crawl_that_extracts_shows_what_it_accepted_and_its_harvest_rate() -> None:
    from raycrawl.progress import status_line

    line = status_line({"state": "running", "pages": 40, "accepted": 30, "harvest_rate": 0.75})
    assert "accepted 30" in line and "harvest 75%" in line
    assert "accepted" not in status_line({"state": "running", "pages": 40})  # (no extractor: nothing said)
    recent = {"harvest_rate_recent": 0.5, "harvest_window": 100}
    assert "harvest 75% (last 100: 50%)" in status_line(
        {"state": "running", "accepted": 30, "harvest_rate": 0.75} | recent
    )


def test_the_recent_harvest_rate_is_over_the_last_pages_of_every_shard_and_survives_a_checkpoint() -> None:
    from raycrawl.core.stats import HARVEST_WINDOW, CrawlStats

    crawl, shard = CrawlStats(started_at=0.0), CrawlStats(started_at=0.0)
    for _ in range(HARVEST_WINDOW):  # the first pages: none accepted
        shard.note_page(False)
    crawl.add(shard)
    shard = CrawlStats(started_at=0.0)
    for _ in range(HARVEST_WINDOW // 4):  # then a quarter of a window, all accepted
        shard.note_page(True)
    crawl.add(shard)
    assert len(crawl.recent) == HARVEST_WINDOW and crawl.recent_harvest_rate == 0.25
    summary = crawl.summary(1.0)
    assert summary["harvest_rate_recent"] == 0.25 and summary["harvest_window"] == HARVEST_WINDOW
    again = CrawlStats.from_dict(crawl.to_dict(1.0), 2.0)
    assert again.recent == crawl.recent
    assert "harvest_rate_recent" not in CrawlStats(started_at=0.0).summary(1.0)  # (no extractor: nothing said)
