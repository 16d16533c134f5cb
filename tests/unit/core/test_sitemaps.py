"""The sitemap parser (sitemaps.org 0.9): what it takes from good files, and what bad ones cost."""

from __future__ import annotations

import gzip
import time
from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from raycrawl.core.robots import rules_from_fetch
from raycrawl.core.robots_txt import robots_sitemaps
from raycrawl.core.sitemaps import Sitemap, parse_sitemap, parse_w3c_datetime

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def urlset(*urls: str, extra: str = "") -> bytes:
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {NS}>{"".join(urls)}{extra}</urlset>'.encode()


def test_a_urlset_gives_its_locations_with_lastmod_and_priority() -> None:
    body = urlset(
        "<url><loc> http://a.test/1 </loc><lastmod>2024-03-01</lastmod><priority>0.8</priority></url>",
        "<url><loc>http://a.test/2</loc><changefreq>daily</changefreq></url>",
        "<url><lastmod>2024-03-01</lastmod></url>",  # no loc: skipped
        "<url><loc>http://a.test/3</loc><priority>7</priority><lastmod>yesterday</lastmod></url>",
    )
    sitemap = parse_sitemap(body)
    assert sitemap.kind == "urlset" and sitemap.error is None and not sitemap.over_limit
    assert [e.loc for e in sitemap.entries] == ["http://a.test/1", "http://a.test/2", "http://a.test/3"]
    first, second, third = sitemap.entries
    assert first.lastmod == datetime(2024, 3, 1, tzinfo=UTC).timestamp() and first.priority == 0.8
    assert second.lastmod is None and second.priority is None
    assert third.priority is None and third.lastmod is None  # out of range / not a date: ignored, entry kept


def test_an_index_lists_sitemaps() -> None:
    body = (
        f"<sitemapindex {NS}><sitemap><loc>http://a.test/s1.xml.gz</loc>"
        "<lastmod>2004-10-01T18:23:17+00:00</lastmod></sitemap>"
        "<sitemap><loc>http://a.test/s2.xml</loc></sitemap></sitemapindex>"
    ).encode()
    sitemap = parse_sitemap(body)
    assert sitemap.is_index
    assert [e.loc for e in sitemap.entries] == ["http://a.test/s1.xml.gz", "http://a.test/s2.xml"]
    assert sitemap.entries[0].lastmod == datetime(2004, 10, 1, 18, 23, 17, tzinfo=UTC).timestamp()


def test_gzip_and_text_sitemaps() -> None:
    compressed = gzip.compress(urlset("<url><loc>http://a.test/z</loc></url>"))
    assert [e.loc for e in parse_sitemap(compressed).entries] == ["http://a.test/z"]
    text = b"\xef\xbb\xbfhttp://a.test/1\r\n# not a url\nftp://a.test/2\nhttps://a.test/3\n"
    sitemap = parse_sitemap(text)
    assert sitemap.kind == "text" and [e.loc for e in sitemap.entries] == ["http://a.test/1", "https://a.test/3"]


def test_the_protocols_limits_bound_the_work() -> None:
    many = urlset(*(f"<url><loc>http://a.test/{i}</loc></url>" for i in range(120)))
    capped = parse_sitemap(many, max_entries=100)
    assert capped.over_limit and len(capped.entries) == 100
    too_big = parse_sitemap(many, max_bytes=2000)  # cut mid-file: what came before is kept, the cut is said
    assert too_big.over_limit and 0 < len(too_big.entries) < 120 and too_big.error is not None
    bomb = gzip.compress(b"<urlset>" + b" " * 5_000_000 + b"</urlset>")
    started = time.process_time()
    bounded = parse_sitemap(bomb, max_bytes=100_000)
    assert bounded.over_limit and bounded.entries == ()
    assert time.process_time() - started < 5  # (a generous bound on the work: reading stops at max_bytes)


def test_malformed_files_are_counted_not_raised() -> None:
    cut = urlset("<url><loc>http://a.test/1</loc></url>", "<url><loc>http://a.test/2</loc></url>")[:-9]
    partial = parse_sitemap(cut)
    assert partial.kind == "urlset" and [e.loc for e in partial.entries] == ["http://a.test/1", "http://a.test/2"]
    assert partial.error is not None and "malformed" in partial.error
    assert parse_sitemap(b"<html><body>not a sitemap</body></html>").kind == "invalid"
    assert parse_sitemap(b"").kind == "invalid"
    assert parse_sitemap(b"\x1f\x8b\x08garbage").kind == "invalid"
    assert parse_sitemap(b"just words, no urls").kind == "invalid"


def test_entity_declarations_are_refused_before_parsing() -> None:
    laughs = (
        b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
        + b"".join(b'<!ENTITY lol%d "%s">' % (i, b"&lol%d;" % (i - 1) * 10 if i else b"&lol;" * 10) for i in range(9))
        + b"]><urlset><url><loc>&lol8;</loc></url></urlset>"
    )
    sitemap = parse_sitemap(laughs)
    assert sitemap.kind == "invalid" and sitemap.entries == () and "document type" in str(sitemap.error)


def test_w3c_datetimes() -> None:
    assert parse_w3c_datetime("2005") == datetime(2005, 1, 1, tzinfo=UTC).timestamp()
    assert parse_w3c_datetime("2005-07") == datetime(2005, 7, 1, tzinfo=UTC).timestamp()
    assert parse_w3c_datetime("2005-07-16T19:20+01:00") == datetime(2005, 7, 16, 18, 20, tzinfo=UTC).timestamp()
    assert parse_w3c_datetime("2005-07-16T19:20:30.45Z") == datetime(2005, 7, 16, 19, 20, 30, 450000, UTC).timestamp()
    for bad in ("", "soon", "2005-13", "2005-02-30", "9" * 100):
        assert parse_w3c_datetime(bad) is None


def test_robots_sitemap_lines_belong_to_no_group() -> None:
    body = (
        b"User-agent: *\nSitemap: http://a.test/one.xml\nDisallow: /private\n"
        b"sitemap:http://b.test/two.xml.gz # a comment\nSitemap: http://a.test/one.xml\nSitemap:\n"
    )
    assert robots_sitemaps(body) == ("http://a.test/one.xml", "http://b.test/two.xml.gz")
    assert robots_sitemaps(b"".join(b"Sitemap: http://a.test/%d.xml\n" % i for i in range(500)), limit=50)[-1] == (
        "http://a.test/49.xml"
    )
    rules = rules_from_fetch(200, body, "raycrawl", now=0.0, ttl=60.0)
    assert rules.sitemaps == ("http://a.test/one.xml", "http://b.test/two.xml.gz")
    assert not rules.allows("http://a.test/private")  # the Sitemap line did not end the * group
    restored = type(rules).from_dict(rules.to_dict(), "raycrawl")
    assert restored.sitemaps == rules.sitemaps


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=4000))
def test_arbitrary_bytes_never_raise(body: bytes) -> None:
    for data in (body, b"<urlset>" + body, b"<sitemapindex><sitemap><loc>" + body, gzip.compress(body)):
        assert isinstance(parse_sitemap(data, max_entries=50, max_bytes=10_000), Sitemap)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=40), max_size=30))
def test_any_locations_written_as_xml_read_back(paths: list[str]) -> None:
    from xml.sax.saxutils import escape

    locs = [f"http://a.test/{p.strip()}" for p in paths]
    body = urlset(*(f"<url><loc>{escape(loc)}</loc></url>" for loc in locs))
    assert [e.loc for e in parse_sitemap(body).entries] == [loc.strip() for loc in locs]


def test_a_doctype_is_refused_in_any_encoding_expat_reads() -> None:
    """A UTF-16 document without a BOM hides '<!DOCTYPE' from a byte search; the parser itself refuses it."""
    entity = "x" * 1000
    doc = (
        f'<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE u [<!ENTITY a "{entity}">'
        '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>'
        f"<urlset {NS}><url><loc>http://a.test/&c;</loc></url></urlset>"
    )
    for data in (doc.encode("utf-16-le"), doc.encode("utf-16-be"), gzip.compress(doc.encode("utf-16-le"))):
        sitemap = parse_sitemap(data)
        assert sitemap.kind == "invalid" and sitemap.entries == () and "document type" in str(sitemap.error)
    plain = doc.replace("&c;", "p").split("]>", 1)[1]  # the same file without its DOCTYPE is read
    assert [e.loc for e in parse_sitemap(plain.encode("utf-16-le")).entries] == ["http://a.test/p"]


def test_many_gzip_members_cost_linear_time_and_are_capped() -> None:
    """Empty gzip members, each ~20 bytes: reading stops at MAX_GZIP_MEMBERS, in time linear in what it read."""
    from raycrawl.core.sitemaps import MAX_GZIP_MEMBERS

    empty = gzip.compress(b"")
    first = gzip.compress(urlset("<url><loc>http://a.test/1</loc></url>"))
    few = first + empty * 10 + gzip.compress(b"")
    assert [e.loc for e in parse_sitemap(few).entries] == ["http://a.test/1"]  # members are joined
    body = first + empty * 2_000_000  # ~38 MB: slicing the rest per member would take hours
    started = time.process_time()
    capped = parse_sitemap(body)
    assert time.process_time() - started < 5
    assert capped.over_limit and [e.loc for e in capped.entries] == ["http://a.test/1"]
    under = first + empty * (MAX_GZIP_MEMBERS - 2)
    assert not parse_sitemap(under).over_limit


def test_elements_outside_entries_are_not_kept() -> None:
    """Memory stays at one entry: a file of many elements that are not entries holds none of them."""
    import tracemalloc

    junk = "<x>y</x>" * 200_000  # 1.6 MB of elements in an entry, and as many outside one
    body = urlset(f"<url><loc>http://a.test/1</loc>{junk}</url>", extra=junk)
    tracemalloc.start()
    try:
        sitemap = parse_sitemap(body)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [e.loc for e in sitemap.entries] == ["http://a.test/1"] and sitemap.error is None
    assert peak < 2 * len(body)  # (a tree of them took ~21x the file's size)
