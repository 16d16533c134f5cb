"""A setting is described once, on its field (config/setting.py ``setting(...)``, in its group's module), and every
table is made from that."""

from __future__ import annotations

import dataclasses

import pytest

from raycrawl import cli
from raycrawl.config import (
    DURATIONS,
    FIXED_ON_RESUME,
    HELP_GROUPS,
    PER_RUN,
    PYTHON_ONLY,
    SETTINGS,
    TABLE_KEYS,
    CrawlConfig,
    load_config,
)
from raycrawl.errors import ConfigError


def test_every_field_is_described_and_every_flag_has_a_group_and_a_help_line() -> None:
    assert set(SETTINGS) == {f.name for f in dataclasses.fields(CrawlConfig)}
    flags = [name for name, info in SETTINGS.items() if name != "seeds" and not info.python_only]
    assert [name for name in flags if SETTINGS[name].group not in HELP_GROUPS] == []
    assert [name for name in flags if not SETTINGS[name].help] == []
    assert sorted(name for group in cli.GROUPS.values() for name in group) == sorted(flags)


def test_the_tables_the_parser_the_readers_and_resuming_use_are_made_from_the_descriptions() -> None:
    assert "delay" in cli.SECONDS and "revisit_after" in DURATIONS and "delay" not in DURATIONS
    assert {"scope", "dedup", "user_agent"} <= FIXED_ON_RESUME and {"out", "resume", "score"} <= PER_RUN
    assert {"filesystem", "score", "egress"} == PYTHON_ONLY
    assert TABLE_KEYS["extract"]["timeout"] == "extract_timeout" and next(iter(TABLE_KEYS["accept"])) == "function"
    assert cli.METAVARS["out"] == "DIR" and "one per CPU" in cli.NO_DEFAULT["shards"]


def test_what_a_setting_says_of_itself_is_its_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["crawl", "--help"])
    crawl_help = " ".join(capsys.readouterr().out.split())
    assert "--delay SECONDS" in crawl_help and SETTINGS["delay"].help in crawl_help
    assert "politeness:" in crawl_help and "--out DIR" in crawl_help


def test_a_least_value_in_a_description_is_checked_with_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    described = dataclasses.replace(SETTINGS["max_attempts"], at_least=2)
    monkeypatch.setitem(SETTINGS, "max_attempts", described)
    with pytest.raises(ConfigError, match=r"max_attempts = 1: expected a whole number >= 2"):
        load_config({"max_attempts": "1"}, None, {})
    assert load_config({"max_attempts": "2"}, None, {}).max_attempts == 2
