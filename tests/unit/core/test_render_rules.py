"""Issue 35's decision of which pages go to a browser (core/render_rules.py): pure, without a browser."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raycrawl.config import CrawlConfig, read_toml
from raycrawl.core.render_rules import RenderRules, looks_like_shell
from raycrawl.errors import ConfigError

SHELLS = {
    "react": '<html><head><script src="/static/js/main.3f2a.js"></script></head><body><div id="root"></div></body>',
    "next": '<html><body><div id="__next"></div><script src="/_next/static/chunks/main.js"></script></body></html>',
    "angular": '<html><body ng-app="shop"><script>boot()</script></body></html>',
    "noscript": "<html><body><noscript>You need to enable JavaScript to run this app.</noscript>"
    '<script src="/app.js"></script></body></html>',
}
PAGES = {
    "article": "<html><body><h1>News</h1><p>" + "Plenty of words in a real article. " * 20 + "</p>"
    '<script src="/analytics.js"></script></body></html>',
    "links": '<html><body><div id="app"><a href="/a">a</a> <a href="/b">b</a> <a href="/c">c</a></div></body></html>',
    "plain": "<html><body><p>Short.</p></body></html>",  # (short, but nothing says a script builds it)
    "filled root": '<html><body><div id="root"><p>Rendered on the server.</p></div><script src="/x.js"></script>'
    "</body></html>",
    "bare script": '<html><body><p>Hello, reader.</p><a href="/more">more</a>'
    '<script src="/x.js"></script></body></html>',
}


@pytest.mark.parametrize("name", sorted(SHELLS))
def test_shells_are_told_with_their_reason(name: str) -> None:
    verdict = looks_like_shell(SHELLS[name])
    assert verdict.shell, verdict
    assert verdict.links == 0 and verdict.text_chars < 200


@pytest.mark.parametrize("name", sorted(PAGES))
def test_pages_with_their_content_are_not_shells(name: str) -> None:
    verdict = looks_like_shell(PAGES[name])
    assert not verdict.shell, verdict


def test_the_verdict_names_what_it_saw() -> None:
    assert "empty app root (#root)" in looks_like_shell(SHELLS["react"]).reason
    assert "script bundle" in looks_like_shell(SHELLS["react"]).reason
    assert looks_like_shell("<html><body><script src=/app.js></script>Loading…</body></html>").shell
    assert "noscript" in looks_like_shell(SHELLS["noscript"]).reason
    assert "ng-app" in looks_like_shell(SHELLS["angular"]).reason


def test_rules_decide_per_url_the_first_match_winning() -> None:
    rules = RenderRules.of("never", [r"^https://app\.example\.com/=always", r"/static/=never", r"\.example\.com/=auto"])
    assert rules.mode_for("https://app.example.com/x") == "always"
    assert rules.mode_for("https://www.example.com/static/a") == "never"
    assert rules.mode_for("https://www.example.com/a") == "auto"
    assert rules.mode_for("https://other.test/") == "never" and rules.ever
    assert not RenderRules.of("never").ever and RenderRules.of("auto").ever
    for bad in ("x=sometimes", "noequals", "(=always"):
        with pytest.raises(ValueError, match=r"expected|regular"):
            RenderRules.of("never", [bad])


@given(st.text(max_size=300))
def test_any_text_gets_a_verdict(text: str) -> None:
    verdict = looks_like_shell(text)
    assert verdict.reason and verdict.text_chars >= 0 and verdict.links >= 0


def test_render_tables_in_toml_and_bad_values(tmp_path: Path) -> None:
    toml = tmp_path / "crawl.toml"
    toml.write_text(
        'render_timeout = "30s"\n[[render]]\npattern = "^https://app\\\\.test/"\nmode = "auto"\n'
        '[[render]]\npattern = "/static/"\nmode = "never"\n'
    )
    cfg = CrawlConfig(**read_toml(toml))
    assert cfg.render_rules == ("^https://app\\.test/=auto", "/static/=never") and cfg.render_timeout == 30.0
    rules = RenderRules.of(cfg.render, cfg.render_rules)
    assert (
        rules.ever and rules.mode_for("https://app.test/x") == "auto" and rules.mode_for("https://b.test/") == "never"
    )
    toml.write_text('[[render]]\npattern = "x"\nhow = "always"\n')
    with pytest.raises(ConfigError, match=r"render: .*expected a table"):
        read_toml(toml)
    for bad, key in (({"render_rules": ("x=sometimes",)}, "render_rules"), ({"render_workers": 0}, "render_workers"),
                     ({"render_settle": 30.0}, "render_settle"), ({"render": "maybe"}, "render"),
                     ({"render_workers": 2, "render_workers_max": 1}, "render_workers_max")):  # fmt: skip
        with pytest.raises(ConfigError, match=key):
            CrawlConfig(**bad)  # type: ignore[arg-type]
