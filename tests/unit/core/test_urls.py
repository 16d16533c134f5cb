import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raycrawl.config import DEFAULT_TRACKING_PARAMS
from raycrawl.core.urls import canonicalize, fingerprint, host_key, origin, path_of

CASES = [
    ("HTTP://Example.COM:80/a/./b/../C?b=2&a=1#frag", "http://example.com/a/C?a=1&b=2"),
    ("https://example.com:443", "https://example.com/"),
    ("https://example.com:8443/x", "https://example.com:8443/x"),
    ("http://example.com/Path/CASE", "http://example.com/Path/CASE"),  # path case preserved
    ("http://example.com/%7euser/%2fx%zz", "http://example.com/~user/%2Fx%25zz"),
    ("http://example.com/a b/ü", "http://example.com/a%20b/%C3%BC"),
    ("http://user:secret@example.com/x", "http://example.com/x"),  # credentials never kept
    ("http://bücher.de/", "http://xn--bcher-kva.de/"),
    ("http://example.com./", "http://example.com/"),
    ("http://[0:0::1]:8080/", "http://[::1]:8080/"),
    ("http://example.com/?utm_source=x&id=3&gclid=1&fbclid=2", "http://example.com/?id=3"),
    ("http://example.com/?q=a%26b&q=a", "http://example.com/?q=a%26b&q=a"),  # a repeated key keeps its order
    ("http://example.com/?a=2&b=1&a=1", "http://example.com/?a=2&a=1&b=1"),
    ("http://example.com/a\\b\\c?x=\\", "http://example.com/a/b/c?x=%5C"),  # '\\' in the path is '/'
    (" \t http://example.com/a\tb\n \x00", "http://example.com/ab"),  # C0 and space stripped, tab/newline removed
    ("http://example.com/a\u00a0", "http://example.com/a%C2%A0"),  # no other whitespace is stripped
    ("http://example.com/\u3000", "http://example.com/%E3%80%80"),
    ("http://example.com/a/../../..", "http://example.com/"),
    ("http://example.com/.well-known/a/.", "http://example.com/.well-known/a/"),
    # WHATWG: a host is mapped to ASCII first, then read as IPv4 if it ends in a number
    ("http://\uff11\uff12\uff17.0.0.1/", "http://127.0.0.1/"),
    ("http://\u00b9/", "http://0.0.0.1/"),
]


@pytest.mark.parametrize(("raw", "expected"), CASES)
def test_canonical_forms(raw: str, expected: str) -> None:
    assert canonicalize(raw, DEFAULT_TRACKING_PARAMS) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "mailto:a@b.c",
        "javascript:alert(1)",
        "ftp://x/",
        "file:///etc/passwd",
        "http://",
        "http://exa mple.com/",
        "http://example.com:99999/",
        "http://example.com:x/",
        "//example.com/",
        "not a url",
        "",
    ],
)
def test_unfetchable_urls_are_rejected(raw: str) -> None:
    assert canonicalize(raw) is None


def test_tracking_list_is_configurable() -> None:
    assert canonicalize("http://h/?ref=1&x=2", ["ref"]) == "http://h/?x=2"
    assert canonicalize("http://h/?utm_x=1", []) == "http://h/?utm_x=1"


def test_fingerprint_is_fixed_width_and_stable() -> None:
    fp = fingerprint("http://example.com/")
    assert 0 <= fp < 2**64
    assert fp == fingerprint("http://example.com/")
    assert fp != fingerprint("http://example.com/a")


def test_url_parts() -> None:
    url = "https://example.com:8443/a/b?x=1"
    assert host_key(url) == "example.com:8443"
    assert origin(url) == "https://example.com:8443"
    assert path_of(url) == "/a/b?x=1"


urlish = st.one_of(
    st.text(max_size=80),
    st.builds(
        lambda scheme, host, path, q: f"{scheme}://{host}/{path}?{q}",
        st.sampled_from(["http", "HTTPS", "hTtp", "ftp"]),
        st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=20),
        st.text(max_size=40),
        st.text(max_size=40),
    ),
)


@settings(max_examples=800, deadline=None)
@given(urlish)
def test_canonicalize_never_raises_and_is_idempotent(raw: str) -> None:
    once = canonicalize(raw, DEFAULT_TRACKING_PARAMS)
    if once is not None:
        assert canonicalize(once, DEFAULT_TRACKING_PARAMS) == once
        assert once.startswith(("http://", "https://"))


def test_credentials_never_reach_a_message() -> None:
    from raycrawl.core.urls import redact_credentials

    assert redact_credentials("ftp://bob:hunter2@files.test/x") == "ftp://files.test/x"
    assert "hunter2" not in redact_credentials("see http://:hunter2@[bad and gopher://u:hunter2@h/")


def _escapes_by_definition(text: str, safe: frozenset[str]) -> str:
    """The escape rules spelt out one character at a time (the regex version in urls.py must agree)."""
    from raycrawl.core.urls import _UNRESERVED

    hexdigits = set("0123456789abcdefABCDEF")
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "%" and i + 2 < len(text) and text[i + 1] in hexdigits and text[i + 2] in hexdigits:
            decoded = chr(int(text[i + 1 : i + 3], 16))
            out.append(decoded if decoded in _UNRESERVED else text[i : i + 3].upper())
            i += 3
            continue
        out.append(ch if ch in safe else "".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass")))
        i += 1
    return "".join(out)


@given(st.text(alphabet=st.sampled_from("%aF09~-._/?&=+:@!$'()*,; #[]\"<>é\u00a0\ud800字")) | st.text())
def test_escape_normalisation_agrees_with_its_definition(text: str) -> None:
    from raycrawl.core.urls import _PATH_ESCAPES, _PATH_SAFE, _QUERY_ESCAPES, _QUERY_SAFE, _normalise_escapes

    assert _normalise_escapes(text, _PATH_ESCAPES) == _escapes_by_definition(text, _PATH_SAFE)
    assert _normalise_escapes(text, _QUERY_ESCAPES) == _escapes_by_definition(text, _QUERY_SAFE)


@pytest.mark.parametrize(
    ("query", "tracking", "expected"),
    [
        ("utm_source=a&b=1&UTM_Medium=c&fbclid=x", ("utm_*", "fbclid"), "b=1"),
        ("utm=1&xutm_a=2", ("utm_*",), "utm=1&xutm_a=2"),  # a pattern matches the whole name, not a part
        ("a=1&b=2", (), "a=1&b=2"),
        ("ref=1&ref_src=2", ("ref",), "ref_src=2"),
    ],
)
def test_tracking_patterns_match_whole_names_case_insensitively(
    query: str, tracking: tuple[str, ...], expected: str
) -> None:
    assert canonicalize(f"http://a.test/?{query}", tracking) == f"http://a.test/?{expected}".rstrip("?")


REQUEST_FORMS = [
    # (as written, as requested): only what RFC 3986 section 6.2.2 allows changes, and what a request line needs
    ("http://h/search?q=x&lang=en", "http://h/search?q=x&lang=en"),
    ("HTTP://H.Example:80/a/./b/../c?b=2&a=1&a=0#frag", "http://h.example/a/c?b=2&a=1&a=0"),
    ("http://h/%7euser/%2fx?utm_source=1&q=%aa", "http://h/%7Euser/%2Fx?utm_source=1&q=%AA"),
    ("http://h/a b/ü?x=y z", "http://h/a%20b/%C3%BC?x=y%20z"),
    ("http://user:pw@h/x", "http://h/x"),
    ("http://h/p\\q\\r?s=\\", "http://h/p/q/r?s=%5C"),
    ("http://h/a?x=1+2&y=%20", "http://h/a?x=1+2&y=%20"),
    ("http://h/100%", "http://h/100%25"),
]


@pytest.mark.parametrize(("written", "requested"), REQUEST_FORMS)
def test_request_form_keeps_the_spelling(written: str, requested: str) -> None:
    from raycrawl.core.urls import request_form

    assert request_form(written) == requested


@settings(max_examples=800, deadline=None)
@given(urlish)
def test_request_form_is_sendable_idempotent_and_has_the_same_canonical_form(raw: str) -> None:
    from raycrawl.core.urls import request_form

    requested = request_form(raw)
    assert (requested is None) == (canonicalize(raw) is None)
    if requested is not None:
        assert requested.isascii() and not any(c in requested for c in " \t\r\n#")
        assert request_form(requested) == requested
        assert canonicalize(requested, DEFAULT_TRACKING_PARAMS) == canonicalize(raw, DEFAULT_TRACKING_PARAMS)


@settings(max_examples=500, deadline=None)
@given(urlish)
def test_link_forms_from_one_parse_agree_with_the_two_forms(raw: str) -> None:
    from raycrawl.core.urls import link_forms, request_form

    canonical, requested = link_forms(raw, DEFAULT_TRACKING_PARAMS)
    assert canonical == canonicalize(raw, DEFAULT_TRACKING_PARAMS)
    expected = request_form(raw) if canonical is not None else None
    assert requested == (expected if expected != canonical else None)


def test_a_host_longer_than_a_dns_name_is_refused() -> None:
    """Labels of 63 characters each can make a host of 511: no DNS name is over 253, and a queue store's key
    of one is refused (issue 46.7). A name of 253 is kept."""
    label = "a" * 63
    longest = ".".join([label] * 3 + ["b" * 61])  # 253 characters
    assert len(longest) == 253 and canonicalize(f"http://{longest}/") == f"http://{longest}/"
    assert canonicalize(f"http://{longest}./x") == f"http://{longest}/x"  # (the final dot is not counted)
    for host in (longest + "c", ".".join([label] * 8)):
        assert canonicalize(f"http://{host}/") is None


# Links near the shape link_forms takes without parsing (core/urls.py ``_PLAIN_LINK``), and just past it: each
# must get what the parse gives.
_hosts = st.sampled_from(
    ["example.com", "a.b-c.org", "127.0.0.2", "127.1", "0x7f.0.0.1", "1.2.3.4.5", "a..b", "example.com.", "-a.com",
     "a_b.com", "Example.com", "x" * 64 + ".com", ".".join(["a" * 63] * 4), "09.1", "a", "xn--bcher-kva.de"]
)  # fmt: skip
_ports = st.sampled_from(["", ":80", ":443", ":8080", ":08080", ":65535", ":65536", ":99999", ":0", ":1"])
_paths = st.text(alphabet=st.sampled_from("/aZ09-._~!$&'()*+,;=:@%?#é "), max_size=24)


@settings(max_examples=1500, deadline=None)
@given(st.sampled_from(["http", "https", "HTTP", "ftp"]), _hosts, _ports, _paths)
def test_links_taken_without_a_parse_get_what_the_parse_gives(scheme: str, host: str, port: str, path: str) -> None:
    from raycrawl.core.urls import _parsed_link_forms, link_forms

    for url in (f"{scheme}://{host}{port}{path}", f"{scheme}://{host}{port}/{path}"):
        for spelling in (True, False):
            assert link_forms(url, DEFAULT_TRACKING_PARAMS, spelling) == _parsed_link_forms(
                url, DEFAULT_TRACKING_PARAMS, spelling
            )


def test_plain_links_are_their_own_canonical_form() -> None:
    from raycrawl.core.urls import _already_canonical

    assert _already_canonical("http://127.0.0.2:8080/page/7")
    assert _already_canonical("https://example.com/a/b-c_d~e.html")
    plain_but_not_canonical = ["http://example.com:80/", "http://Example.com/", "http://example.com/a/../b"]
    not_plain = ["http://example.com", "http://example.com/?q=1", "http://example.com/#x", "http://example.com/%7e"]
    for url in [*plain_but_not_canonical, *not_plain, "http://127.1/"]:
        assert not _already_canonical(url)


@settings(max_examples=1500, deadline=None)
@given(
    st.sampled_from(["http://", "https://", "HTTP://", "hTtPs://", "http:/", "http:", "ftp://", "", "//"]),
    st.text(alphabet=st.sampled_from("aZ09.-_:@/?#[]%é&=\\"), max_size=30),
)
def test_urls_split_without_urlsplit_get_its_parts(prefix: str, rest: str) -> None:
    from urllib.parse import urlsplit

    from raycrawl.core.urls import _url_parts

    url = prefix + rest
    try:
        parts = urlsplit(url)
    except ValueError:
        with pytest.raises(ValueError):
            _url_parts(url)
        return
    assert _url_parts(url) == (parts.scheme.lower(), parts.netloc, parts.path, parts.query)
