"""Pages into data, end to end (issue 47): a crawl of the test web's articles with an extractor and a contract;
its items read back as a Ray Dataset; what the server saw."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from raycrawl.testing.articles import SHORT_PAGES, article_page, article_seed
from raycrawl.testing.extractors import hangs, raises
from raycrawl.testing.graph import WebSpec
from raycrawl.testing.process import TestWeb
from tests.conftest import assert_each_url_once, local_config, page_requests, run

pytestmark = pytest.mark.usefixtures("ray_local")

ARTICLES = 24
HOSTS = 2


def test_a_contract_accepts_rejects_and_quarantines_as_planted(tmp_path: Path) -> None:
    spec = WebSpec(hosts=HOSTS, pages_per_host=ARTICLES, profiles=("articles",) * HOSTS)
    with TestWeb(spec) as web:
        cfg = local_config(
            seeds=tuple(web.graph.seeds()), out=str(tmp_path / "out"), delay=0.05,
            extract="raycrawl.testing.extractors:flaky", extract_fields=("price=css:.price::text",),
            require=("title",), min_chars=("text=200",), extract_timeout=1.0, schema_version="v7",
        )  # fmt: skip
        summary, records = run(cfg)
        requests = web.requests()

    assert_each_url_once(records)
    numbers = range(ARTICLES)
    quarantined = sum(1 for n in numbers if raises(n) or hangs(n))
    assert quarantined >= 5
    verdicts = Counter(r["verdict"] for r in records if r["verdict"] is not None)
    assert verdicts == {
        "accepted": HOSTS * (ARTICLES - quarantined),
        "rejected": HOSTS * SHORT_PAGES,
        "quarantined": HOSTS * quarantined,
    }
    assert summary["verdicts"] == dict(verdicts) and summary["accepted"] == verdicts["accepted"]
    assert summary["verdict_rules"] == {
        "rejected: min_chars:text": HOSTS * SHORT_PAGES,
        "quarantined: raised:ValueError": HOSTS * sum(1 for n in numbers if raises(n)),
        "quarantined: timeout": HOSTS * sum(1 for n in numbers if hangs(n)),
    }
    hung = [r for r in records if r["verdict"] == "quarantined" and "extract-timeout" in (r["verdict_reason"] or "")]
    assert len(hung) == HOSTS * sum(1 for n in numbers if hangs(n))
    raised = [r for r in records if "ValueError" in (r["verdict_reason"] or "")]
    assert len(raised) == HOSTS * sum(1 for n in numbers if raises(n))
    assert all(r["verdict"] is None for r in records if r["status"] != 200 or r["url"].endswith("/"))
    # The links of the rejected (short) pages were never requested; the quarantined pages' were.
    paths = [r["path"] for r in page_requests(requests)]
    assert not [p for p in paths if p.startswith("/behind-short/")]
    assert len([p for p in paths if p.startswith("/short/")]) == HOSTS * SHORT_PAGES

    import raycrawl

    items = raycrawl.read_items(str(tmp_path / "out")).to_pandas()
    assert len(items) == verdicts["accepted"] and items["url"].is_unique
    assert list(items.columns)[:5] == ["url", "fetched_at", "warc_id", "extractor", "schema_version"]
    assert {"title", "text", "number", "price"} <= set(items.columns)
    assert set(items["schema_version"]) == {"v7"}
    assert set(items["extractor"]) == {"raycrawl.testing.extractors:flaky+fields"}
    by_url = {r["url"]: r for r in records}
    for row in items.itertuples():
        host_ip = row.url.split("//")[1].split(":")[0]
        planted = article_page(article_seed(host_ip, int(row.number)))
        assert row.title == planted.title and row.price == planted.price
        assert row.warc_id == by_url[row.url]["warc_id"]
    rejected = raycrawl.read_items(str(tmp_path / "out"), rejected=True).to_pandas()
    assert Counter(rejected["verdict"]) == {"rejected": HOSTS * SHORT_PAGES, "quarantined": HOSTS * quarantined}
    assert all("fewer than 200" in reason for reason in rejected[rejected.verdict == "rejected"]["verdict_reason"])
    stats = json.loads((tmp_path / "out" / "stats.json").read_text())
    assert stats["harvest_rate"] == pytest.approx(verdicts["accepted"] / stats["outcomes"]["fetched"], abs=1e-3)


@pytest.mark.parametrize("builtin", ["builtin:article", "builtin:meta"])
def test_builtin_extractors_and_css_fields_give_the_planted_values(tmp_path: Path, builtin: str) -> None:
    """Acceptance 1: articles among boilerplate; builtin:article's text holds the article's sentences and none of the
    boilerplate's on >= 95% of pages; builtin:meta and CSS fields give the known values; read back typed."""
    spec = WebSpec(hosts=HOSTS, pages_per_host=ARTICLES, profiles=("articles",) * HOSTS)
    with TestWeb(spec) as web:
        cfg = local_config(
            seeds=tuple(web.graph.seeds()), out=str(tmp_path / "out"), delay=0.05, extract=builtin,
            extract_fields=("price=css:.price::text", "links=css-all:.more a::attr(href)"), require=("title",),
        )  # fmt: skip
        summary, _ = run(cfg)

    import raycrawl

    dataset = raycrawl.read_items(str(tmp_path / "out"))
    items = dataset.to_pandas()
    articles = items[items["url"].str.contains("/a/")]
    assert len(articles) == HOSTS * ARTICLES and items["url"].is_unique
    schema = dataset.schema()
    assert str(schema.types[schema.names.index("links")]).startswith("list<")  # (a list of strings stays a list)
    clean = 0
    for row in articles.itertuples():
        host_ip, number = row.url.split("//")[1].split(":")[0], int(row.url.rsplit("/", 1)[1])
        planted = article_page(article_seed(host_ip, number))
        assert row.title == planted.title and row.price == planted.price
        assert row.description == planted.description and row.language == planted.language
        if builtin == "builtin:article":
            assert row.author == planted.author and row.date == planted.date
            text = " ".join(row.text.split())
            sentences = [s.strip() + "." for p in planted.paragraphs for s in p.split(".") if s.strip()]
            boilerplate = [s.strip() + "." for b in planted.boilerplate for s in b.split(".") if s.strip()]
            clean += all(s in text for s in sentences) and not any(s in text for s in boilerplate)
            assert row.markdown.startswith("#") or row.markdown.startswith("|")
        else:
            assert json.loads(row.json_ld)[0]["offers"]["price"] == planted.price
            assert json.loads(row.opengraph)["title"] == planted.title
    if builtin == "builtin:article":
        assert clean / len(articles) >= 0.95, clean
    assert summary["accepted"] == len(items)


def test_max_accepted_stops_at_exactly_that_many_items_and_a_resume_goes_on(tmp_path: Path) -> None:
    spec = WebSpec(hosts=HOSTS, pages_per_host=ARTICLES, profiles=("articles",) * HOSTS)
    out = str(tmp_path / "out")
    import raycrawl

    with TestWeb(spec) as web:
        base = dict(seeds=tuple(web.graph.seeds()), out=out, delay=0.02, extract="builtin:meta", require=("title",))
        summary, records = run(local_config(**base, max_accepted=10))
        assert summary["accepted"] == 10 and summary["stop_reason"] == "max-accepted reached"
        assert raycrawl.read_items(out).count() == 10
        summary, records = run(local_config(**base, max_accepted=25, resume=True))
    assert_each_url_once(records)
    items = raycrawl.read_items(out).to_pandas()
    assert len(items) == 25 and items["url"].is_unique
    accepted = {r["url"] for r in records if r["verdict"] == "accepted"}
    assert set(items["url"]) == accepted and summary["accepted"] == 25


def test_retry_quarantined_judges_those_pages_again_and_their_old_verdicts_go(tmp_path: Path) -> None:
    spec = WebSpec(hosts=1, pages_per_host=ARTICLES, profiles=("articles",))
    out = str(tmp_path / "out")
    import raycrawl

    with TestWeb(spec) as web:
        base = dict(seeds=tuple(web.graph.seeds()), out=out, delay=0.02, extract_timeout=0.5, require=("title",))
        summary, records = run(local_config(**base, extract="raycrawl.testing.extractors:flaky"))
        quarantined = {r["url"] for r in records if r["verdict"] == "quarantined"}
        assert len(quarantined) == sum(1 for n in range(ARTICLES) if raises(n) or hangs(n))
        before = len(page_requests(web.requests()))
        # The operator fixed the cause: an extractor that reads every article (meta's), then retries those pages.
        summary, records = run(local_config(**base, extract="builtin:meta", resume=True, retry_quarantined=True))
        again = page_requests(web.requests())[before:]
    assert_each_url_once(records)
    assert sorted(f"http://{r['host']}{r['path']}" for r in again) == sorted(quarantined)
    assert not [r for r in records if r["verdict"] == "quarantined"]
    assert summary["verdicts"].get("quarantined", 0) == 0
    items = raycrawl.read_items(out).to_pandas()
    assert quarantined <= set(items["url"]) and items["url"].is_unique
    assert set(items[items.url.isin(quarantined)]["extractor"]) == {"builtin:meta"}
    rejected = raycrawl.read_items(out, rejected=True)
    assert rejected.count() == 0  # (their old rejected rows were taken out: there were no others)


def test_raycrawl_extract_gives_what_a_crawl_with_that_contract_gives_without_a_request(tmp_path: Path) -> None:
    """Issue 48, acceptance 2: a finished crawl's WARC extracted again with a changed contract (``raycrawl extract``,
    the CLI in a subprocess) gives the items and verdicts a crawl with that contract writes; the server sees
    nothing meanwhile."""
    import subprocess
    import sys

    import raycrawl

    spec = WebSpec(hosts=HOSTS, pages_per_host=ARTICLES, profiles=("articles",) * HOSTS)
    first, again, direct = (str(tmp_path / name) for name in ("first", "again", "direct"))
    changed = ("--extract", "builtin:meta", "--extract-fields", "price=css:.price::text", "--min-chars",
               "description=20")  # fmt: skip
    with TestWeb(spec) as web:
        base = dict(seeds=tuple(web.graph.seeds()), delay=0.02, follow_rejected=True)
        run(local_config(**base, out=first, extract="builtin:meta", require=("title",)))
        _, direct_records = run(local_config(**base, out=direct, extract="builtin:meta", min_chars=("description=20",),
                                             extract_fields=("price=css:.price::text",)))  # fmt: skip
        before = len(web.requests())
        done = subprocess.run(
            [sys.executable, "-m", "raycrawl.cli", "extract", first, "--into", again, "--quiet", *changed],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        assert len(web.requests()) == before  # nothing fetched
    assert "pages judged" in done.stdout
    stats = json.loads((tmp_path / "again" / "stats.json").read_text())
    assert stats["verdicts"] == dict(Counter(r["verdict"] for r in direct_records if r["verdict"]))
    columns = ["url", "title", "description", "language", "price", "json_ld", "opengraph", "extractor"]
    redone = raycrawl.read_items(again).to_pandas()[columns].sort_values("url").reset_index(drop=True)
    crawled = raycrawl.read_items(direct).to_pandas()[columns].sort_values("url").reset_index(drop=True)
    assert len(redone) == len(crawled) > 0 and redone.equals(crawled)
    rejected = raycrawl.read_items(again, rejected=True).to_pandas()
    assert sorted(rejected["url"]) == sorted(r["url"] for r in direct_records if r["verdict"] == "rejected")


def test_extract_only_the_quarantined_pages_again(tmp_path: Path) -> None:
    import raycrawl
    from raycrawl.config import CrawlConfig
    from raycrawl.reextract import extract_from_warc

    spec = WebSpec(hosts=1, pages_per_host=ARTICLES, profiles=("articles",))
    out, again = str(tmp_path / "out"), str(tmp_path / "again")
    with TestWeb(spec) as web:
        _, records = run(local_config(seeds=tuple(web.graph.seeds()), out=out, delay=0.02, extract_timeout=0.5,
                                      extract="raycrawl.testing.extractors:flaky"))  # fmt: skip
    quarantined = {r["url"] for r in records if r["verdict"] == "quarantined"}
    settings = CrawlConfig(extract="builtin:meta").extract_settings()
    assert settings is not None
    summary = extract_from_warc(out, again, settings, only="quarantined")
    assert summary["verdicts"] == {"accepted": len(quarantined)} and len(quarantined) >= 3
    assert set(raycrawl.read_items(again).to_pandas()["url"]) == quarantined
