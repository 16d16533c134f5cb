"""robots.txt to the letter of RFC 9309: the cases of Google's robots_test.cc (google/robotstxt) that the RFC governs.

Each test names the case it ports. Google-only behaviour is left out unless noted; deliberate deviations are
listed in the README ("robots.txt") and at the end of this file.
"""

from __future__ import annotations

import pytest

from raycrawl.core.robots import rules_from_fetch
from raycrawl.core.robots_txt import RobotsGroup, RobotsLimits, normalize_escapes, parse_robots, product_token


def path_of(url: str) -> str:
    """Path and query of a test URL, as Google's GetPathParamsQuery takes them (no re-encoding)."""
    rest = url.split("://", 1)[-1]
    rest = rest.split("#", 1)[0]
    cut = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=-1)
    if cut < 0:
        return "/"
    tail = rest[cut:]
    return tail if tail.startswith("/") else "/" + tail


def allowed(robotstxt: str | bytes, agent: str, url: str) -> bool:
    body = robotstxt.encode() if isinstance(robotstxt, str) else robotstxt
    return parse_robots(body, agent).allows(path_of(url))


def test_system_empty_file_allows_everything() -> None:  # GoogleOnly_SystemTest (the RFC-governed parts)
    assert allowed("", "FooBot", "http://foo.bar/x")
    assert not allowed("user-agent: FooBot\ndisallow: /\n", "FooBot", "http://foo.bar/")


def test_line_syntax() -> None:  # ID_LineSyntax_Line
    url = "http://foo.bar/x/y"
    assert not allowed("user-agent: FooBot\ndisallow: /\n", "FooBot", url)
    assert allowed("foo: FooBot\nbar: /\n", "FooBot", url)
    assert not allowed("user-agent FooBot\ndisallow /\n", "FooBot", url)  # (a missing colon, read as Google does)


GROUPS = (
    "allow: /foo/bar/\n\nuser-agent: FooBot\ndisallow: /\nallow: /x/\nuser-agent: BarBot\ndisallow: /\nallow: /y/\n"
    "\n\nallow: /w/\nuser-agent: BazBot\n\nuser-agent: FooBot\nallow: /z/\ndisallow: /\n"
)


@pytest.mark.parametrize(
    ("agent", "path", "expected"),
    [
        ("FooBot", "/x/b", True),
        ("FooBot", "/z/d", True),
        ("FooBot", "/y/c", False),
        ("BarBot", "/y/c", True),
        ("BarBot", "/w/a", True),
        ("BarBot", "/z/d", False),
        ("BazBot", "/z/d", True),
        ("FooBot", "/foo/bar/", False),  # rules outside any group are ignored
        ("BarBot", "/foo/bar/", False),
        ("BazBot", "/foo/bar/", False),
    ],
)
def test_groups(agent: str, path: str, expected: bool) -> None:  # ID_LineSyntax_Groups
    assert allowed(GROUPS, agent, "http://foo.bar" + path) is expected


@pytest.mark.parametrize(
    "text",
    [
        "USER-AGENT: FooBot\nALLOW: /x/\nDISALLOW: /\n",
        "user-agent: FooBot\nallow: /x/\ndisallow: /\n",
        "uSeR-aGeNt: FooBot\nAlLoW: /x/\ndIsAlLoW: /\n",
    ],
)
def test_line_names_are_case_insensitive(text: str) -> None:  # ID_REPLineNamesCaseInsensitive
    assert allowed(text, "FooBot", "http://foo.bar/x/y")
    assert not allowed(text, "FooBot", "http://foo.bar/a/b")


@pytest.mark.parametrize("value", ["FOO BAR", "foo bar", "FoO bAr"])
@pytest.mark.parametrize("agent", ["Foo", "foo"])
def test_user_agent_values_are_case_insensitive(value: str, agent: str) -> None:  # ID_UserAgentValueCaseInsensitive
    text = f"User-Agent: {value}\nAllow: /x/\nDisallow: /\n"
    assert allowed(text, agent, "http://foo.bar/x/y")
    assert not allowed(text, agent, "http://foo.bar/a/b")


def test_user_agent_value_up_to_its_first_space() -> None:  # GoogleOnly_AcceptUserAgentUpToFirstSpace
    text = "User-Agent: *\nDisallow: /\nUser-Agent: Foo Bar\nAllow: /x/\nDisallow: /\n"
    assert allowed(text, "Foo", "http://foo.bar/x/y")


def test_global_groups_are_secondary() -> None:  # ID_GlobalGroups_Secondary
    url = "http://foo.bar/x/y"
    assert allowed("", "FooBot", url)
    text = "user-agent: *\nallow: /\nuser-agent: FooBot\ndisallow: /\n"
    assert not allowed(text, "FooBot", url)
    assert allowed(text, "BarBot", url)
    only_specific = "user-agent: FooBot\nallow: /\nuser-agent: BarBot\ndisallow: /\nuser-agent: BazBot\ndisallow: /\n"
    assert allowed(only_specific, "QuxBot", url)


def test_rule_values_are_case_sensitive() -> None:  # ID_AllowDisallow_Value_CaseSensitive
    assert not allowed("user-agent: FooBot\ndisallow: /x/\n", "FooBot", "http://foo.bar/x/y")
    assert allowed("user-agent: FooBot\ndisallow: /X/\n", "FooBot", "http://foo.bar/x/y")


@pytest.mark.parametrize(
    ("text", "url", "expected"),
    [
        ("disallow: /x/page.html\nallow: /x/\n", "http://foo.bar/x/page.html", False),
        ("allow: /x/page.html\ndisallow: /x/\n", "http://foo.bar/x/page.html", True),
        ("allow: /x/page.html\ndisallow: /x/\n", "http://foo.bar/x/", False),
        ("disallow: \nallow: \n", "http://foo.bar/x/page.html", True),
        ("disallow: /\nallow: /\n", "http://foo.bar/x/page.html", True),
        ("disallow: /x\nallow: /x/\n", "http://foo.bar/x", False),
        ("disallow: /x\nallow: /x/\n", "http://foo.bar/x/", True),
        ("disallow: /x/page.html\nallow: /x/page.html\n", "http://foo.bar/x/page.html", True),
        ("allow: /page\ndisallow: /*.html\n", "http://foo.bar/page.html", False),
        ("allow: /page\ndisallow: /*.html\n", "http://foo.bar/page", True),
        ("allow: /x/page.\ndisallow: /*.html\n", "http://foo.bar/x/page.html", True),
        ("allow: /x/page.\ndisallow: /*.html\n", "http://foo.bar/x/y.html", False),
    ],
)
def test_longest_match(text: str, url: str, expected: bool) -> None:  # ID_LongestMatch
    assert allowed("user-agent: FooBot\n" + text, "FooBot", url) is expected


def test_most_specific_group() -> None:  # ID_LongestMatch, last case
    text = "User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n"
    assert allowed(text, "FooBot", "http://foo.bar/x/page")
    assert not allowed(text, "FooBot", "http://foo.bar/y/page")


def test_encoding() -> None:  # ID_Encoding
    text = "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar?qux=taz&baz=http://foo.bar?tar&par\n"
    assert allowed(text, "FooBot", "http://foo.bar/foo/bar?qux=taz&baz=http://foo.bar?tar&par")
    text = "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/ツ\n"
    assert allowed(text, "FooBot", "http://foo.bar/foo/bar/%E3%83%84")
    assert allowed(text, "FooBot", "http://foo.bar/foo/bar/ツ")  # (both sides normalised: RFC 9309 2.2.2)
    text = "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%E3%83%84\n"
    assert allowed(text, "FooBot", "http://foo.bar/foo/bar/%E3%83%84")
    assert allowed(text, "FooBot", "http://foo.bar/foo/bar/ツ")
    text = "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%62%61%7A\n"
    # RFC 9309 2.2.2's table: /foo/bar/%62%61%7A is matched as /foo/bar/baz (unreserved escapes decoded). Google's
    # parser compares it as written and disallows /foo/bar/baz; the RFC governs here.
    assert allowed(text, "FooBot", "http://foo.bar/foo/bar/baz")
    assert allowed(text, "FooBot", "http://foo.bar/foo/bar/%62%61%7A")


@pytest.mark.parametrize(
    ("rule", "url"),
    [
        ("/%7Ejoe/", "http://h/~joe/x"),  # an escaped unreserved character in the rule, plain in the URL
        ("/~joe/", "http://h/%7Ejoe/x"),  # plain in the rule, escaped in the URL
        ("/~joe/", "http://h/%7ejoe/x"),  # (an escape in lower case too)
        ("/foo/bar/ツ", "http://h/foo/bar/%E3%83%84"),  # UTF-8 in the rule, the URL's percent-encoded form
        ("/foo/bar/ツ", "http://h/foo/bar/%e3%83%84"),
        ("/foo/bar/%E3%83%84", "http://h/foo/bar/ツ"),  # and the other way round
    ],
)
def test_rules_and_urls_are_compared_in_one_percent_encoded_form(rule: str, url: str) -> None:  # RFC 9309 2.2.2
    assert not allowed(f"User-agent: *\nDisallow: {rule}\n", "raycrawl", url)
    assert allowed(f"User-agent: *\nDisallow: {rule}\n", "raycrawl", "http://h/other/x")


def test_reserved_escapes_stay_escapes() -> None:  # RFC 9309 2.2.2: /foo/bar?baz=https%3A%2F%2Ffoo.bar
    text = "User-agent: *\nDisallow: /a%2Fb\nDisallow: /x%2A\n"
    assert not allowed(text, "raycrawl", "http://h/a%2fb")
    assert allowed(text, "raycrawl", "http://h/a/b")  # an escaped '/' is not a '/'
    assert allowed(text, "raycrawl", "http://h/xyz")  # an escaped '*' is no wildcard


def test_special_characters() -> None:  # ID_SpecialCharacters
    text = "User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n"
    assert not allowed(text, "FooBot", "http://foo.bar/foo/bar/quz")
    assert allowed(text, "FooBot", "http://foo.bar/foo/quz")
    assert allowed(text, "FooBot", "http://foo.bar/foo//quz")
    assert allowed(text, "FooBot", "http://foo.bar/foo/bax/quz")
    text = "User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n"
    assert not allowed(text, "FooBot", "http://foo.bar/foo/bar")
    assert allowed(text, "FooBot", "http://foo.bar/foo/bar/qux")
    assert allowed(text, "FooBot", "http://foo.bar/foo/bar/")
    assert allowed(text, "FooBot", "http://foo.bar/foo/bar/baz")
    text = "User-agent: FooBot\n# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n"
    assert allowed(text, "FooBot", "http://foo.bar/foo/bar")
    assert not allowed(text, "FooBot", "http://foo.bar/foo/quz")


def _long_rule_file(verb: str, head: str, fill: str) -> tuple[str, str]:
    limit = 2083 * 8
    line = head
    while len(line) < limit - len(head) - len(verb) + 1:
        line += fill
    return line, f"{verb}{line}/qux\n"


def test_long_lines_are_cut() -> None:  # GoogleOnly_LineTooLong (bounds what one line can cost)
    longline, rule = _long_rule_file("disallow: ", "/x/", "a")
    text = "user-agent: FooBot\n" + rule
    assert allowed(text, "FooBot", "http://foo.bar/fux")
    assert not allowed(text, "FooBot", f"http://foo.bar{longline}/fux")
    line_a, rule_a = _long_rule_file("allow: ", "/x/", "a")
    line_b, rule_b = _long_rule_file("allow: ", "/x/", "b")
    text = "user-agent: FooBot\ndisallow: /\n" + rule_a + rule_b
    assert not allowed(text, "FooBot", "http://foo.bar/")
    assert allowed(text, "FooBot", f"http://foo.bar{line_a}/qux")
    assert allowed(text, "FooBot", f"http://foo.bar{line_b}/fux")


@pytest.mark.parametrize(
    ("rule", "yes", "no"),
    [
        ("allow: /fish", ["/fish", "/fish.html", "/fish/salmon.html", "/fishheads", "/fishheads/yummy.html",
                          "/fish.html?id=anything"], ["/bar", "/Fish.asp", "/catfish", "/?id=fish"]),
        ("allow: /fish*", ["/fish", "/fish.html", "/fish/salmon.html", "/fishheads", "/fishheads/yummy.html",
                           "/fish.html?id=anything"], ["/bar", "/Fish.bar", "/catfish", "/?id=fish"]),
        ("allow: /fish/", ["/fish/", "/fish/salmon", "/fish/?salmon", "/fish/salmon.html", "/fish/?id=anything"],
         ["/bar", "/fish", "/fish.html", "/Fish/Salmon.html"]),
        ("allow: /*.php", ["/filename.php", "/folder/filename.php", "/folder/filename.php?parameters",
                           "//folder/any.php.file.html", "/filename.php/", "/index?f=filename.php/"],
         ["/bar", "/php/", "/index?php", "/windows.PHP"]),
        ("allow: /*.php$", ["/filename.php", "/folder/filename.php"],
         ["/bar", "/filename.php?parameters", "/filename.php/", "/filename.php5", "/php/", "/filename?php",
          "/aaaphpaaa", "//windows.PHP"]),
        ("allow: /fish*.php", ["/fish.php", "/fishheads/catfish.php?parameters"], ["/bar", "/Fish.PHP"]),
    ],
)  # fmt: skip
def test_documentation_checks(rule: str, yes: list[str], no: list[str]) -> None:  # GoogleOnly_DocumentationChecks
    text = f"user-agent: FooBot\ndisallow: /\n{rule}\n"
    for path in yes:
        assert allowed(text, "FooBot", "http://foo.bar" + path), path
    for path in no:
        assert not allowed(text, "FooBot", "http://foo.bar" + path), path


def test_order_of_precedence() -> None:  # GoogleOnly_DocumentationChecks, "Order of precedence"
    assert allowed("user-agent: FooBot\nallow: /p\ndisallow: /\n", "FooBot", "http://example.com/page")
    assert allowed(
        "user-agent: FooBot\nallow: /folder\ndisallow: /folder\n", "FooBot", "http://example.com/folder/page"
    )
    assert not allowed("user-agent: FooBot\nallow: /page\ndisallow: /*.htm\n", "FooBot", "http://example.com/page.htm")
    text = "user-agent: FooBot\nallow: /$\ndisallow: /\n"
    assert allowed(text, "FooBot", "http://example.com/")
    assert not allowed(text, "FooBot", "http://example.com/page.html")


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"])
def test_line_endings(ending: str) -> None:  # ID_LinesNumbersAreCountedCorrectly
    text = ending.join(["User-Agent: foo", "Allow: /some/path", "User-Agent: bar", "", "", "Disallow: /"])
    assert allowed(text, "bar", "http://foo.bar/some/path") is False
    assert allowed(text, "foo", "http://foo.bar/other") is True
    mixed = "User-Agent: foo\nAllow: /some/path\r\nUser-Agent: bar\n\r\n\nDisallow: /"
    assert not allowed(mixed, "bar", "http://foo.bar/x")


@pytest.mark.parametrize("bom", [b"\xef\xbb\xbf", b"\xef\xbb", b"\xef"])
def test_a_byte_order_mark_is_skipped(bom: bytes) -> None:  # ID_UTF8ByteOrderMarkIsSkipped
    body = bom + b"User-Agent: foo\nDisallow: /AnyValue\n"
    assert not allowed(body, "foo", "http://foo.bar/AnyValue")


def test_a_broken_or_misplaced_byte_order_mark_is_garbage() -> None:  # ID_UTF8ByteOrderMarkIsSkipped
    # The first line is garbage: the Disallow after it belongs to no group.
    assert allowed(b"\xef\x11\xbfUser-Agent: foo\nDisallow: /AnyValue\n", "foo", "http://foo.bar/AnyValue")
    assert allowed(b"User-Agent: foo\n\xef\xbb\xbfDisallow: /AnyValue\n", "foo", "http://foo.bar/AnyValue")


def test_sitemap_lines_belong_to_no_group() -> None:  # ID_NonStandardLineExample_Sitemap
    text = "Sitemap: http://foo.bar/sitemap.xml\nUser-Agent: foo\nSitemap: http://foo.bar/s2.xml\nDisallow: /x\n"
    assert not allowed(text, "foo", "http://foo.bar/x")


@pytest.mark.parametrize(
    ("pattern", "escaped"),
    [
        ("http://www.example.com", "http://www.example.com"),
        ("/a/b/c", "/a/b/c"),
        ("á", "%C3%A1"),
        ("%aa", "%AA"),
        ("/%7e%41%2f", "/~A%2F"),
        ("/a b", "/a%20b"),
    ],
)
def test_patterns_are_percent_encoded(pattern: str, escaped: str) -> None:  # TestMaybeEscapePattern
    assert normalize_escapes(pattern) == escaped


# --- the product token (ID_VerifyValidUserAgentsToObey, and whole-word matching) ------------------------------


@pytest.mark.parametrize(
    ("user_agent", "token"),
    [
        ("raycrawl/0.1", "raycrawl"),
        ("raycrawl/0.1 (+https://example.com/bot)", "raycrawl"),
        ("Mozilla/5.0 (compatible; examplebot/1.0; +https://example.com/bot)", "examplebot"),
        ("Mozilla/5.0 (compatible; Example-Bot/2.1)", "example-bot"),
        ("Foo_Bar", "foo_bar"),
        ("FooBot", "foobot"),
        ("ツ", None),
        ("Mozilla/5.0", None),
    ],
)
def test_product_token_of_a_user_agent(user_agent: str, token: str | None) -> None:
    assert product_token(user_agent) == token


def test_a_group_for_a_prefix_of_our_token_is_not_ours() -> None:
    text = "User-agent: ray\nDisallow: /\n\nUser-agent: *\nDisallow: /private/\n"
    assert allowed(text, "raycrawl", "http://h/page")
    assert not allowed(text, "raycrawl", "http://h/private/x")
    assert not allowed("User-agent: RayCrawl\nDisallow: /\n", "raycrawl", "http://h/page")
    assert allowed("User-agent: raycrawler\nDisallow: /\n", "raycrawl", "http://h/page")
    assert not allowed("User-agent: raycrawl/2.0\nDisallow: /\n", "raycrawl", "http://h/page")


def test_robots_txt_itself_is_always_allowed() -> None:
    assert allowed("User-agent: *\nDisallow: /\n", "raycrawl", "http://h/robots.txt")


def test_query_rules_match_the_query_as_written() -> None:
    text = "User-agent: *\nDisallow: /search?q=\n"
    assert not allowed(text, "raycrawl", "http://h/search?q=x&lang=en")
    assert allowed(text, "raycrawl", "http://h/search?lang=en&q=x")  # (why links are requested as written)


def test_crawl_delay_of_our_group() -> None:
    text = "User-agent: *\nCrawl-delay: 7\nUser-agent: raycrawl\nCrawl-delay: 2.5\nDisallow: /x\n"
    assert parse_robots(text.encode(), "raycrawl").crawl_delay == 2.5
    assert parse_robots(text.encode(), "other").crawl_delay == 7.0
    assert parse_robots(b"User-agent: *\nCrawl-delay: nan\n", "a").crawl_delay is None


# --- bounds on what a hostile file can cost --------------------------------------------------------------------


def test_rules_past_the_cap_fall_back_to_disallow() -> None:
    limits = RobotsLimits(max_rules=10, max_wildcard_rules=3, max_wildcards=2)
    lines = "".join(f"Allow: /a{i}/\n" for i in range(20))
    group = parse_robots(f"User-agent: *\n{lines}".encode(), "x", limits)
    assert len(group.rules) == 11 and group.simplified == 10
    assert group.allows("/a3/") and not group.allows("/a15/") and not group.allows("/b")


def test_wildcards_past_the_caps_err_towards_fetching_less() -> None:
    limits = RobotsLimits(max_rules=100, max_wildcard_rules=1, max_wildcards=2)
    text = b"User-agent: *\nDisallow: /a*b*c*d\nDisallow: /x*y\nAllow: /p*q*r*s\nAllow: /m*n\n"
    group = parse_robots(text, "x", limits)
    assert group.simplified == 4
    assert not group.allows("/a-b-zzz")  # cut after its second '*': a superset of what it said
    assert not group.allows("/x-no-y")  # past the wildcard-rule cap: its literal prefix
    assert [allow for allow, _ in group.rules] == [False, False]  # both wildcard Allows dropped (they allow more)


def test_group_survives_a_checkpoint() -> None:
    group = parse_robots(b"User-agent: *\nDisallow: /x*y$\nAllow: /x/ok\nCrawl-delay: 3\n", "bot")
    again = RobotsGroup.from_dict(group.to_dict())
    assert again.rules == group.rules and again.crawl_delay == 3.0
    for path in ("/x1y", "/x/ok", "/xy/", "/z"):
        assert again.allows(path) == group.allows(path)


# --- how a fetch ends decides the verdict (RFC 9309 2.3.1) ------------------------------------------------------


def test_a_cut_or_failed_fetch_is_unreachable_never_allow_all() -> None:
    body = b"User-agent: *\n# the rest never came"
    assert rules_from_fetch(200, body, "bot", 0.0, 60.0, failed=True).verdict == "unreachable"
    assert rules_from_fetch(None, None, "bot", 0.0, 60.0).verdict == "unreachable"
    assert rules_from_fetch(503, b"", "bot", 0.0, 60.0).verdict == "unreachable"
    assert rules_from_fetch(429, b"", "bot", 0.0, 60.0).verdict == "unreachable"
    assert rules_from_fetch(404, b"", "bot", 0.0, 60.0).verdict == "allow_all"
    assert rules_from_fetch(301, b"", "bot", 0.0, 60.0).verdict == "allow_all"  # (past the redirect limit)


def test_a_file_cut_at_the_size_limit_drops_its_last_partial_line() -> None:
    body = b"User-agent: *\nDisallow: /\nAllow: /ok\nAllow: /priv"
    rules = rules_from_fetch(200, body, "bot", 0.0, 60.0, truncated=True)
    assert rules.allows("http://h/ok") and not rules.allows("http://h/private")
    assert rules_from_fetch(200, body, "bot", 0.0, 60.0).allows("http://h/private")


# Deliberate differences from Google's parser (each also in the README):
# - GoogleOnly_IndexHTMLisDirectory: "Allow: /dir/index.html" does not also allow "/dir/" (not in RFC 9309).
# - Google accepts misspelt keys ("dissallow", "useragent"); RFC 9309 does not, and neither does raycrawl.
# - Over RobotsLimits (rules, wildcard rules, wildcards per pattern) raycrawl errs towards fetching less.
