"""Issue 47, the parts without Ray: the page an extractor sees, the built-in metadata and CSS-field extractors, the
content contract's verdicts, the extraction's time bound, and items as typed rows and Parquet parts (core/page.py,
core/extractors.py, core/contract.py, core/items.py, adapters/extraction.py, adapters/items.py). A crawl that runs
them: tests/e2e/test_items.py."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raycrawl.core.contract import ContentContract, judge
from raycrawl.core.extractors import CssField, CssFields, meta
from raycrawl.core.page import Page

PRODUCT = {"@context": "https://schema.org", "@type": "Product", "name": "Kettle", "offers": {"price": "19.90"}}
HTML = f"""<!doctype html><html lang="de-AT"><head><meta charset="windows-1252">
<title>  Der   Kessel \xfcber alles </title>
<meta name="description" content="A kettle.">
<meta property="og:title" content="Kettle (OG)"><meta property="og:image" content="/k.png">
<link rel="canonical" href="/p/kettle"><link rel="alternate" hreflang="en" href="https://a.test/en/kettle">
<script type="application/ld+json">{json.dumps(PRODUCT)}</script>
<script type="application/ld+json">{{ not json</script>
</head><body><nav>Home | Shop</nav><h1>Kettle</h1><span class="price"> 19,90 &euro; </span>
<ul><li class="tag">steel</li><li class="tag">1.7 l</li></ul><a class="buy" href="/cart?add=1">Buy</a></body></html>"""


def page_of(html: str | bytes, content_type: str | None = "text/html", url: str = "http://a.test/p/1") -> Page:
    body = html.encode("windows-1252") if isinstance(html, str) else html
    return Page(url, 200, body, (("Content-Type", content_type),) if content_type else (), content_type=content_type)


def test_a_page_is_decoded_and_parsed_once_when_asked() -> None:
    page = page_of(HTML, "text/html")  # (no charset in the header: the page's <meta> says windows-1252)
    assert page._text is None and page._tree is None  # nothing made before it is asked for
    assert "Kessel \xfcber" in page.text and page.tree is page.tree
    assert page.header("content-type") == "text/html" and page.media_type == "text/html"
    assert page.requested_url == page.final_url == "http://a.test/p/1"


def test_meta_reads_what_a_page_says_of_itself() -> None:
    item = meta(page_of(HTML))
    assert item is not None
    assert item["title"] == "Der Kessel \xfcber alles" and item["description"] == "A kettle."
    assert item["language"] == "de-AT" and item["canonical"] == "http://a.test/p/kettle"
    assert item["hreflang"] == [{"lang": "en", "href": "https://a.test/en/kettle"}]
    assert item["opengraph"] == {"title": "Kettle (OG)", "image": "/k.png"}
    assert item["json_ld"] == [PRODUCT]  # (the block that does not parse is skipped)
    assert meta(page_of(b"%PDF-1.7 ...", "application/pdf")) is None  # not a data page
    bare = meta(page_of("<html><head><meta property='og:title' content='Only OG'></head></html>"))
    assert bare is not None and bare["title"] == "Only OG" and bare["json_ld"] == []


def test_css_fields_take_text_or_attributes_of_the_first_or_every_match() -> None:
    fields = CssFields.parse({
        "name": "css:h1", "price": "css:.price::text", "buy": "css:a.buy::attr(href)",
        "tags": "css-all:li.tag::text", "missing": "css:.nothing-here",
    })  # fmt: skip
    assert fields(page_of(HTML)) == {
        "name": "Kettle", "price": "19,90 \u20ac", "buy": "/cart?add=1", "tags": ["steel", "1.7 l"], "missing": None,
    }  # fmt: skip
    for bad in ("xpath://h1", "css:", "css:h1::attr()", "css:p[[::text"):
        with pytest.raises(ValueError, match="price"):
            CssField.parse("price", bad)


def test_the_contract_accepts_rejects_and_quarantines() -> None:
    page = page_of(HTML)
    contract = ContentContract(required=("title",), min_chars=(("text", 20),), languages=frozenset({"de", "en"}))

    def extract(p: Page) -> dict[str, Any] | None:
        if p.url.endswith("/none"):
            return None
        if p.url.endswith("/boom"):
            raise KeyError("price")
        return {"title": "T", "text": p.url.rsplit("/", 1)[1] * 30, "language": "de-AT"}

    assert judge(page, extract, contract).verdict == "accepted"
    nothing = judge(page_of(HTML, url="http://a.test/none"), extract, contract)
    assert (nothing.item, nothing.verdict, nothing.reason) == (None, None, None)
    boom = judge(page_of(HTML, url="http://a.test/boom"), extract, contract)
    assert boom.verdict == "quarantined" and boom.reason is not None and "KeyError" in boom.reason
    short = judge(page_of(HTML, url="http://a.test/"), extract, contract)
    assert short.verdict == "rejected" and short.reason == "text has 0 characters, fewer than 20"
    french = judge(page, lambda p: {"title": "T", "text": "x" * 20, "language": "fr"}, contract)
    assert (french.verdict, french.reason) == ("rejected", "language fr is not allowed")
    untitled = judge(page, lambda p: {"title": "", "text": "x" * 20, "language": "en"}, contract)
    assert untitled.reason == "required field title is missing"
    typed = judge(page, lambda p: {}, ContentContract(content_types=frozenset({"application/json"})))
    assert typed.reason == "content type text/html is not allowed"
    said = judge(page, lambda p: {"a": 1}, ContentContract(), accept=lambda p, item: "no price")
    assert (said.verdict, said.reason) == ("rejected", "no price")
    odd = judge(page, lambda p: ["not", "a", "dict"], ContentContract())  # type: ignore[arg-type,return-value]
    assert odd.verdict == "quarantined" and "list" in str(odd.reason)


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=3000), st.sampled_from(["text/html", None, "application/xhtml+xml; charset=utf-16"]))
def test_any_bytes_give_an_item_or_none_never_an_exception(body: bytes, content_type: str | None) -> None:
    fields = CssFields.parse({"h": "css:h1", "all": "css-all:a::attr(href)"})
    for data in (body, b"<html><head><script type='application/ld+json'>" + body):
        page = page_of(data, content_type)
        for extract in (meta, fields):
            assert judge(page, extract, ContentContract(required=("title",))).verdict in (None, "accepted", "rejected")


def test_meta_gives_the_known_values_of_pages_whose_data_is_planted() -> None:
    """The article pages (raycrawl/testing/articles.py: known head, JSON-LD and price among boilerplate), in every
    layout: meta and CSS fields give exactly what was planted; the same seed makes the same page."""
    from raycrawl.testing.articles import LAYOUTS, article_page

    assert article_page(7) == article_page(7)
    fields = CssFields.parse({"price": "css:.price::text", "headline": "css:h1::text"})
    for seed in range(4 * len(LAYOUTS)):
        planted = article_page(seed)
        page = page_of(planted.html.encode(), "text/html; charset=utf-8", f"http://a.test/a/{seed}")
        item = meta(page)
        assert item is not None
        assert (item["title"], item["description"], item["language"]) == (
            planted.title, planted.description, planted.language)  # fmt: skip
        [ld] = item["json_ld"]
        assert (ld["headline"], ld["author"]["name"], ld["datePublished"], ld["offers"]["price"]) == (
            planted.title, planted.author, planted.date, planted.price)  # fmt: skip
        assert fields(page) == {"price": planted.price, "headline": planted.title}
        text = page.tree.body.text(separator=" ") if page.tree.body is not None else ""
        assert all(p in " ".join(text.split()) for p in planted.paragraphs)


def test_an_extractor_is_named_by_a_builtin_a_module_function_or_given_and_fields_add_to_it(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """adapters/extraction.py: what --extract and [extract.fields] will name, made once per process."""
    from raycrawl.adapters.extraction import extraction_problem, extractor_from

    (tmp_path / "my_extract.py").write_text(
        "def title_len(page):\n"
        "    return None if page.url.endswith('/skip') else {'n': len(page.tree.css_first('h1').text())}\n"
        "def broken(page):\n    raise RuntimeError('no')\nNOT_A_FUNCTION = 3\n"
    )
    (tmp_path / "bad_import.py").write_text("raise ImportError('needs a library this machine lacks')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    page = page_of(HTML)
    fields = {"price": "css:.price::text"}
    own = extractor_from("my_extract:title_len", fields)
    assert own is not None and own(page) == {"n": 6, "price": "19,90 \u20ac"}
    assert own(page_of(HTML, url="http://a.test/skip")) is None  # (not a data page: fields add nothing)
    only_fields = extractor_from(None, fields)
    assert only_fields is not None and only_fields(page) == {"price": "19,90 \u20ac"}
    builtin = extractor_from("builtin:meta")
    assert builtin is not None and (builtin(page) or {})["title"] == "Der Kessel \xfcber alles"
    assert extractor_from(lambda p: {"x": 1})(page) == {"x": 1}  # type: ignore[misc]
    assert extractor_from(None) is None and extractor_from("") is None
    for spec, says in [
        ("builtin:nothing", "the built-in extractors are builtin:article, builtin:meta"),
        ("my_extract", "expected builtin:NAME or module:function"),
        ("no_such_module_here:f", "cannot import no_such_module_here (ModuleNotFoundError"),
        ("bad_import:f", "cannot import bad_import (ImportError: needs a library"),
        ("my_extract:NOT_A_FUNCTION", "my_extract has no function NOT_A_FUNCTION"),
    ]:
        problem = extraction_problem(spec)
        assert problem is not None and says in problem, problem
    assert "price" in str(extraction_problem(None, {"price": "xpath://p"}))
    assert extraction_problem("my_extract:broken") is None  # (it raises on pages: their verdict, not the config's)


def test_an_extraction_that_hangs_or_spins_is_stopped_and_quarantined_on_any_thread() -> None:
    import signal
    import threading
    import time

    from raycrawl.adapters.extraction import Extraction
    from raycrawl.core.extract_settings import ExtractSettings

    def sleeps(page: Page) -> dict[str, Any]:
        time.sleep(3600)
        return {}

    def spins(page: Page) -> dict[str, Any]:
        spun = 0
        while True:
            try:
                spun += 1
            except Exception:  # (an extractor's own handler does not take the timeout)
                spun = 0

    page = page_of(HTML)
    for hang in (sleeps, spins):
        extraction = Extraction(ExtractSettings(extract=hang, extract_timeout=0.2))
        started = time.monotonic()
        judged = extraction.judge(page)
        assert judged.verdict == "quarantined" and judged.rule == "timeout", judged
        assert time.monotonic() - started < 5
    before = signal.getsignal(signal.SIGALRM)
    fine = Extraction(ExtractSettings(extract="builtin:meta", extract_timeout=0.2))
    assert fine.judge(page).verdict == "accepted"
    # The timer was cancelled and the handler put back: nothing rings later
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0) and signal.getsignal(signal.SIGALRM) is before
    box: list[Any] = []
    off_main = threading.Thread(target=lambda: box.append(Extraction(ExtractSettings(sleeps, extract_timeout=0.2))
                                                          .judge(page)))  # fmt: skip
    off_main.start()
    off_main.join(5)
    assert box and box[0].verdict == "quarantined" and box[0].rule == "timeout"


def test_items_become_typed_rows_and_a_value_of_another_type_is_rejected_not_a_crash() -> None:
    from raycrawl.adapters.items import columns_of, item_parts
    from raycrawl.core.items import ItemLine, ItemSchema

    def line(url: str, item: dict[str, Any] | None, verdict: str = "accepted") -> bytes:
        return ItemLine(url, "2026-12-05T00:00:00Z", None, "x", "1", verdict, None, item).to_json()

    lines = [
        line("http://a.test/1", {"price": 3, "tags": ["a", "b"], "ld": [{"k": 1}], "url": "mine", "when": object()}),
        line("http://a.test/2", {"price": 2.5, "tags": None, "ld": {"k": 2}}),  # (no "url" field: null there)
        line("http://a.test/3", {"price": "cheap"}),  # a string where the crawl's price is int: rejected
        line("http://a.test/4", {"title": "short"}, "rejected"),
        line("http://a.test/5", None, "quarantined"),
    ]
    made = item_parts(lines, {})
    assert made.conflicts == 2 and made.accepted is not None and made.rejected is not None
    rows = made.accepted.to_pylist()
    assert [r["url"] for r in rows] == ["http://a.test/1"]  # (2.5 in an int column: a conflict too)
    assert rows[0]["price"] == 3 and rows[0]["tags"] == ["a", "b"] and json.loads(rows[0]["ld"]) == [{"k": 1}]
    assert rows[0]["url_"] == "mine" and rows[0]["when"].startswith("<object")  # (provenance keeps its name)
    rejected = made.rejected.to_pylist()
    assert [(r["url"], r["verdict"]) for r in rejected] == [
        ("http://a.test/2", "rejected"), ("http://a.test/3", "rejected"), ("http://a.test/4", "rejected"),
        ("http://a.test/5", "quarantined"),
    ]  # fmt: skip
    assert "price is float here, int" in rejected[0]["verdict_reason"]
    assert columns_of(made.accepted.schema) == made.columns == {
        "price": "int", "tags": "list<string>", "ld": "json", "url_": "string", "when": "string",
    }  # fmt: skip
    lists = ItemSchema()
    assert lists.admit({"ld": [], "tags": []}) == ({"ld": None, "tags": None}, None) and lists.columns == {}
    assert lists.admit({"ld": [{"a": 1}], "tags": ["x"]})[1] is None
    assert lists.admit({"ld": [], "tags": []}) == ({"ld": "[]", "tags": []}, None)  # (empty, as its column holds it)
    floats = ItemSchema({"price": "float"})
    assert floats.admit({"price": 3}) == ({"price": 3.0}, None)  # (an int is taken in a float column)
    assert floats.merge({"price": "int", "new": "bool"}) == ["price"] and floats.columns["new"] == "bool"


def test_article_finds_the_main_text_without_boilerplate_and_the_metadata() -> None:
    from raycrawl.core.article import article
    from raycrawl.testing.articles import article_page

    clean = 0
    for seed in range(40):
        planted = article_page(seed)
        item = article(page_of(planted.html.encode(), "text/html; charset=utf-8", f"http://a.test/{seed}"))
        assert item is not None
        assert (item["title"], item["author"], item["date"], item["language"], item["description"]) == (
            planted.title, planted.author, planted.date, planted.language, planted.description)  # fmt: skip
        text = " ".join(item["text"].split())
        sentences = [s.strip() + "." for p in planted.paragraphs for s in p.split(".") if s.strip()]
        boilerplate = [s.strip() + "." for b in planted.boilerplate for s in b.split(".") if s.strip()]
        clean += all(s in text for s in sentences) and not any(s in text for s in boilerplate)
    assert clean >= 38
    assert article(page_of(b"%PDF-1.7", "application/pdf")) is None
    empty = article(page_of(b"<html><head><title>T</title></head><body></body></html>"))
    assert empty is not None and empty["title"] == "T" and empty["text"] is None


def test_a_rendered_page_is_extracted_from_its_rendered_dom() -> None:
    from raycrawl.adapters.extraction import page_of
    from raycrawl.core.records import FetchResult, Lease, UrlEntry
    from raycrawl.core.render_jobs import RenderOutcome

    entry = UrlEntry("http://a.test/app", 2, "http://a.test/", requested="http://a.test/app?")
    result = FetchResult(Lease(1, 0, "page", 0.0, 1.0, entry), status=200, content_type="text/html; charset=latin-1")
    shell = b"<html><head><title>Loading</title></head><body><div id=app></div></body></html>"
    headers = [(b"Content-Type", b"text/html; charset=latin-1")]
    fetched = page_of(result, shell, headers, None)
    assert not fetched.rendered and fetched.body == shell and fetched.requested_url == "http://a.test/app?"
    assert (fetched.depth, fetched.parent, fetched.header("content-type")) == (
        2,
        "http://a.test/",
        "text/html; charset=latin-1",
    )
    built = RenderOutcome(html="<html><head><title>Kettle \u2615</title></head><body><h1>Kettle</h1></body></html>")
    rendered = page_of(result, shell, headers, built)
    assert rendered.rendered and meta(rendered)["title"] == "Kettle \u2615"  # (the DOM's UTF-8, not the header's)
    assert page_of(result, shell, headers, RenderOutcome(reason="no render")).body == shell  # (nothing rendered)


def test_a_timer_signal_handled_after_its_extraction_ended_raises_nothing() -> None:
    """A signal's handler runs when the main thread next checks, which may be after the work ended and even after a
    ring left by an earlier call was put back: such a ring must not raise into whatever code runs then."""
    import signal

    from raycrawl.adapters.extraction import _with_alarm

    rings: list[Any] = []
    assert _with_alarm(10.0, lambda: rings.append(signal.getsignal(signal.SIGALRM)) or 1) == 1
    rings[0](signal.SIGALRM, None)  # (a late trip reaching the call's ring: nothing raised)
