"""The PATTERN=VALUE grammar every kind of rule shares (core/rules.py), and each kind's reading of its value."""

from __future__ import annotations

import pytest

from raycrawl.core import priority, proxy_routes, render_rules, revisit_schedule
from raycrawl.core.rules import split_rule, url_pattern


def test_a_url_rule_splits_at_its_last_equals_sign_and_a_proxy_rule_at_its_first() -> None:
    assert split_rule(r"\?page=2=5", "PATTERN=WEIGHT", "/news/=5") == (r"\?page=2", "5")
    assert split_rule("*.a.test=http://p.test/?k=v", "HOST=URL", "x=y", at_first=True) == (
        "*.a.test",
        "http://p.test/?k=v",
    )
    assert url_pattern("x", r"\?page=").search("/list?page=3") is not None


@pytest.mark.parametrize("text", ["/news/", "=5", "/news/=", "  =5", "/news/=  "])
def test_a_rule_without_a_pattern_or_a_value_says_the_form_and_an_example(text: str) -> None:
    with pytest.raises(ValueError, match=r"expected PATTERN=WEIGHT, e\.g\. /news/=5"):
        priority.parse_rule(text)


def test_every_kind_reads_its_value_and_names_the_rule_when_wrong() -> None:
    assert priority.parse_rule("/news/=5") == ("/news/", 5.0)
    assert revisit_schedule.parse_rule("/news/=1h") == ("/news/", 3600.0)
    pattern, mode = render_rules.parse_rule("/app/=always")
    assert pattern.pattern == "/app/" and mode == "always"
    assert proxy_routes.parse_rule("*.A.test=pool") == ("*.a.test", ("pool",))
    for parse, bad, says in [
        (priority.parse_rule, "[=5", "'[=5': '[' is not a valid regular expression"),
        (priority.parse_rule, "/x/=many", "the weight 'many' is not a number"),
        (priority.parse_rule, "/x/=inf", "the weight must be a finite number"),
        (revisit_schedule.parse_rule, "[a=1h", "is not a valid regular expression"),
        (render_rules.parse_rule, "/app/=sometimes", "expected URL_PATTERN=always|never|auto"),
        (render_rules.parse_rule, "(=auto", "'(' is not a valid regular expression"),
        (proxy_routes.parse_rule, "=pool", "expected HOST_PATTERN=none|pool|PROXY_URL"),
        (proxy_routes.parse_rule, "*.a.test=none pool", "none and pool stand alone"),
    ]:
        with pytest.raises(ValueError) as err:
            parse(bad)
        assert says in str(err.value), (bad, str(err.value))
