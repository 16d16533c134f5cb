import json
from pathlib import Path

import pytest

from raycrawl.api import load_seeds, prepare_out_dir, resume_config
from raycrawl.config import CrawlConfig, load_config
from raycrawl.errors import ConfigError, SeedError


def test_precedence_defaults_toml_env_cli(tmp_path: Path) -> None:
    toml = tmp_path / "crawl.toml"
    toml.write_text('delay = 2.5\nmax-pages = 10\nscope = "domain"\ndeny = ["a", "b"]\n')
    env = {"RAYCRAWL_MAX_PAGES": "20", "RAYCRAWL_USER_AGENT": "envbot/1"}
    cfg = load_config({"user_agent": "clibot/2", "shards": None}, str(toml), env)
    assert cfg.delay == 2.5  # TOML over default
    assert cfg.max_pages == 20  # env over TOML
    assert cfg.user_agent == "clibot/2"  # CLI over env
    assert cfg.scope == "domain" and cfg.deny == ("a", "b")
    assert cfg.per_host_concurrency == CrawlConfig().per_host_concurrency
    assert load_config({}, None, {"RAYCRAWL_CONFIG": str(toml)}).delay == 2.5


def test_crawl_table_and_env_lists(tmp_path: Path) -> None:
    toml = tmp_path / "c.toml"
    toml.write_text("[crawl]\nmax_depth = 3\n")
    cfg = load_config({}, str(toml), {"RAYCRAWL_ALLOW": "x, y", "RAYCRAWL_WARC": "no", "RAYCRAWL_MAX_PAGES": ""})
    assert cfg.max_depth == 3 and cfg.allow == ("x", "y") and cfg.warc is False and cfg.max_pages is None


@pytest.mark.parametrize(
    ("cli", "message"),
    [
        ({"delay": "-1"}, "delay = -1.0: expected seconds >= 0"),
        ({"delay": "fast"}, "delay = 'fast': expected a number"),
        ({"scope": "planet"}, "scope = 'planet': expected one of host, domain, any"),
        ({"max_pages": "1.5"}, "max_pages = '1.5': expected a whole number"),
        ({"dedup": "fuzzy"}, "dedup = 'fuzzy': expected one of exact, bloom"),
        ({"deny": ("(",)}, "deny: '(' is not a valid regular expression"),
        ({"resolve": ("nohost",)}, "resolve: 'nohost': expected HOST=IP"),
        # issue 46.9: values that loaded, then failed on every worker
        ({"resolve": ("a.test=notanip",)}, "resolve: 'a.test=notanip': expected HOST=IP"),
        ({"max_body_bytes": str(10**30)}, "max_body_bytes = 1000000000000000000000000000000: expected bytes from"),
        ({"shards": str(10**9)}, "shards = 1000000000: expected a whole number from 1 to 1024"),
        ({"bloom_capacity": str(10**18)}, "bloom_capacity = 1000000000000000000: expected a whole number from 1000"),
        ({"timeout": "1e308"}, "timeout = 1e+308: expected seconds > 0, at most 86400"),
        ({"max_crawl_delay": "1e300"}, "max_crawl_delay = 1e+300: expected a finite number"),
        ({"shared_politeness": "redis://localhost:notaport"}, "shared_politeness: 'redis://localhost:notaport' is not"),
        ({"shared_politeness": "redis://:s3cr/et@h:6379/0"}, "shared_politeness: 'redis://h:6379/0' is not a Redis"),
        ({"shared_politeness": "redis://:12#s3cret@h"}, "shared_politeness: 'redis://h': a password holding"),
        ({"redis_url": "redis://h:99999"}, "redis_url: 'redis://h:99999' is not a Redis URL"),
        ({"max_pagess": "3"}, "unknown setting 'max_pagess' (did you mean 'max_pages'?)"),
        # issue 47: an extractor that cannot be had is one line where the crawl starts, not every worker's failure
        ({"extract": "no_such_module_x:f"}, "extract: 'no_such_module_x:f': cannot import no_such_module_x"),
        ({"extract": "builtin:nope"}, "'builtin:nope': the built-in extractors are builtin:"),
        ({"extract": "json:no_such_function"}, "json has no function no_such_function"),
        ({"extract_fields": ("price",)}, "extract_fields: 'price': expected NAME=css:SELECTOR"),
        ({"extract_fields": ("price=xpath://p",)}, "price = 'xpath://p': expected css:SELECTOR"),
        ({"extract": "builtin:meta", "min_chars": ("text",)}, "min_chars: 'text': expected FIELD=N"),
        (
            {"require": ("title",)},
            "a content contract, --max-accepted, --follow-rejected and --score-links need an extractor",
        ),
        ({"extract": "builtin:meta", "max_accepted": "0"}, "max_accepted = 0: expected a whole number >= 1"),
        ({"extract": "builtin:meta", "score_links": "nosuchmodule:f"}, "score_links: 'nosuchmodule:f': cannot import"),
        ({"score_links": "raycrawl.testing.topics:score_links"}, "--score-links need an extractor"),
        ({"extract": "builtin:meta", "extract_timeout": "0"}, "extract_timeout = 0.0: expected seconds > 0"),
        ({"extract": "builtin:meta", "accept": "json:nope"}, "accept: 'json:nope': json has no function nope"),
        ({"extract": "builtin:meta", "schema_version": "a b"}, "schema_version = 'a b': expected 1-64 of"),
    ],
)
def test_bad_values_name_the_key(cli: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(cli, None, {})
    assert message in str(err.value) and "\n" not in str(err.value) and "s3cr" not in str(err.value)


def test_bad_toml_and_env(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("delay = = 1")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config({}, str(bad), {})
    with pytest.raises(ConfigError, match="does not exist"):
        load_config({}, str(tmp_path / "missing.toml"), {})
    with pytest.raises(ConfigError, match="environment variable RAYCRAWL_DELAYY: unknown setting 'DELAYY'"):
        load_config({}, None, {"RAYCRAWL_DELAYY": "1"})


def test_config_is_frozen() -> None:
    cfg = CrawlConfig()
    with pytest.raises(AttributeError):
        cfg.delay = 3  # type: ignore[misc]


def test_seeds_file_reports_bad_lines_and_keeps_good_ones(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("# comment\nhttp://a.test/\n\nnot a url\nftp://b.test/\nHTTP://A.test:80/\nhttps://c.test/x\n")
    good, problems = load_seeds(CrawlConfig(seeds_file=str(seeds)))
    assert good == ["http://a.test/", "https://c.test/x"]
    assert [(p.line, p.text) for p in problems] == [(4, "not a url"), (5, "ftp://b.test/")]
    with pytest.raises(SeedError, match=r"seeds.txt:4: not an http\(s\) URL"):
        load_seeds(CrawlConfig(seeds_file=str(seeds), strict=True))
    with pytest.raises(SeedError, match="no usable seed"):
        load_seeds(CrawlConfig(seeds=("mailto:x@y",)))
    with pytest.raises(SeedError, match="cannot read"):
        load_seeds(CrawlConfig(seeds_file=str(tmp_path / "nope.txt")))


def test_out_dir_with_a_crawl_is_refused_unless_fresh(tmp_path: Path) -> None:
    (tmp_path / "pages").mkdir()
    (tmp_path / "pages" / "pages-e000001-coordinator.jsonl").write_text('{"url": "x"}\n')
    with pytest.raises(ConfigError, match="already holds a crawl"):
        prepare_out_dir(CrawlConfig(out=str(tmp_path)))
    assert prepare_out_dir(CrawlConfig(out=str(tmp_path), fresh=True)) == str(tmp_path.resolve())
    assert not (tmp_path / "pages").exists()


def test_resume_refuses_a_seen_set_of_another_kind_even_from_an_older_checkpoint(tmp_path: Path) -> None:
    import json
    import zlib

    from raycrawl.adapters.snapshots import StorageSnapshotStore
    from raycrawl.adapters.storage import resolve

    state = {"format": 1, "num_shards": 2, "dedup": "exact", "pages_offset": 0}
    store = StorageSnapshotStore(resolve(str(tmp_path)))
    store.commit(1, {"coordinator": zlib.compress(json.dumps(state).encode())})
    with pytest.raises(ConfigError, match=r"dedup = 'bloom': cannot change when resuming .*'exact'"):
        resume_config(CrawlConfig(out=str(tmp_path), resume=True, dedup="bloom"))
    assert resume_config(CrawlConfig(out=str(tmp_path), resume=True)).dedup == "exact"


def test_a_resume_runs_with_the_crawls_settings_and_overrides_only_what_is_named() -> None:
    from raycrawl.config import resumed_config, saved_settings

    first = CrawlConfig(seeds=("http://a.test/",), delay=0.05, max_pages=300, allow_private_networks=True,
                        scope="any", deny=("/x/",), out="o1")  # fmt: skip
    saved = json.loads(json.dumps(saved_settings(first)))  # (as it travels in a checkpoint)
    assert "out" not in saved and "seeds" not in saved and "resume" not in saved
    resumed = resumed_config(CrawlConfig(out="o1", resume=True), saved, named={"out", "resume"})
    assert (resumed.delay, resumed.max_pages, resumed.allow_private_networks) == (0.05, 300, True)
    assert (resumed.scope, resumed.deny, resumed.out, resumed.resume) == ("any", ("/x/",), "o1", True)
    grown = resumed_config(CrawlConfig(out="o1", resume=True, max_pages=400), saved, named={"max_pages"})
    assert grown.max_pages == 400 and grown.delay == 0.05
    back_to_default = resumed_config(CrawlConfig(resume=True, delay=1.0), saved, named={"delay"})
    assert back_to_default.delay == 1.0  # named, even though it is the default
    assert resumed_config(CrawlConfig(resume=True, delay=1.0), saved, named=None).delay == 0.05  # API: not named
    with pytest.raises(ConfigError, match=r"scope = 'host': cannot change when resuming \(the crawl runs with 'any'\)"):
        resumed_config(CrawlConfig(resume=True, scope="host"), saved, named={"scope"})
    same = resumed_config(CrawlConfig(resume=True, scope="any"), saved, named={"scope"})
    assert same.scope == "any"  # naming a fixed setting with its own value is fine


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"seeds": "http://a.test/"}, "seeds = 'http://a.test/': expected a list of strings"),
        ({"deny": "/private/"}, "deny = '/private/'"),
        ({"delay": "1"}, "delay = '1': expected a number"),
        ({"max_pages": 1.5}, "max_pages = 1.5: expected a whole number"),
        ({"quiet": 1}, "quiet = 1: expected true or false"),
        ({"scope": "planet"}, "scope = 'planet': expected one of host, domain, any"),
        ({"delay": -1.0}, "delay = -1.0: expected seconds >= 0"),
        ({"user_agent": "Mozilla/5.0"}, "user_agent = 'Mozilla/5.0'"),
    ],
)
def test_crawlconfig_mistakes_from_python_name_the_field(kwargs: dict[str, object], says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        CrawlConfig(**kwargs)  # type: ignore[arg-type]
    assert says in str(caught.value) and "\n" not in str(caught.value)
    assert caught.value.key == next(iter(kwargs))


def test_lists_are_taken_where_tuples_are_declared() -> None:
    assert CrawlConfig(seeds=["http://a.test/"], deny=["x"]).seeds == ("http://a.test/",)  # type: ignore[arg-type]


def test_extraction_and_its_contract_from_toml_tables_env_and_flags(tmp_path: Path) -> None:
    toml = tmp_path / "c.toml"
    toml.write_text(
        '[extract]\nfunction = "builtin:meta"\ntimeout = 2\nschema_version = "v2"\n'
        '[extract.fields]\nprice = "css:.price::text"\nbuy = "css:a.buy::attr(href)"\n'
        '[accept]\nrequire = ["title"]\nlanguages = ["en", "de"]\n[accept.min_chars]\ntext = 200\n'
    )
    cfg = load_config({"max_accepted": "50"}, str(toml), {"RAYCRAWL_CONTENT_TYPES": "text/html"})
    assert cfg.extract == "builtin:meta" and cfg.extract_timeout == 2.0 and cfg.schema_version == "v2"
    assert cfg.extract_fields == ("price=css:.price::text", "buy=css:a.buy::attr(href)")
    settings = cfg.extract_settings()
    assert settings is not None and settings.extractor_name == "builtin:meta+fields"
    contract = settings.contract
    assert contract.required == ("title",) and contract.min_chars == (("text", 200),)
    assert contract.languages == {"en", "de"} and contract.content_types == {"text/html"} and cfg.max_accepted == 50
    assert load_config({"extract": "builtin:meta", "languages": ("en,de",)}, None, {}).extract_settings().contract \
        .languages == {"en", "de"}  # fmt: skip
    # (a top-level string names the function; a table's unknown key is one line naming it)
    assert load_config({}, _toml(tmp_path, 'extract = "builtin:meta"\n'), {}).extract == "builtin:meta"
    # score_links: a top-level key, or in [extract]; a flag or the environment likewise (a focused crawl: issue 48)
    focus = "raycrawl.testing.topics:score_links"
    top = load_config({}, _toml(tmp_path, f'extract = "builtin:meta"\nscore_links = "{focus}"\n'), {})
    inner = load_config({}, _toml(tmp_path, f'[extract]\nfunction = "builtin:meta"\nscore_links = "{focus}"\n'), {})
    env = load_config({"extract": "builtin:meta"}, None, {"RAYCRAWL_SCORE_LINKS": focus})
    assert top.score_links == inner.score_links == env.score_links == focus
    assert top.extract_settings().score_links == focus  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match=r"\[accept\]: unknown key 'requires' \(expected function, require"):
        load_config({}, _toml(tmp_path, '[extract]\nfunction = "builtin:meta"\n[accept]\nrequires = ["x"]\n'), {})
    # From Python the functions themselves: not saved in checkpoints (given again on resume)
    from raycrawl.config import saved_settings

    def mine(page: object) -> None:
        return None

    from raycrawl.config import resumed_config

    python = CrawlConfig(extract=mine, accept=lambda page, item: True)
    saved = saved_settings(python)
    assert python.extract_settings() is not None
    assert saved["extract"].startswith("python:") and saved["extract"].endswith(".mine")
    assert resumed_config(CrawlConfig(extract=mine, accept=python.accept, resume=True), saved, None).extract is mine
    with pytest.raises(ConfigError, match=r"extract: this crawl ran with a Python function \(.*mine\); give it again"):
        resumed_config(CrawlConfig(resume=True), saved | {"accept": None}, None)  # (not silently no extractor)
    with pytest.raises(ConfigError, match="extract = 3: expected a string"):
        CrawlConfig(extract=3)  # type: ignore[arg-type]


def _toml(tmp_path: Path, text: str) -> str:
    path = tmp_path / "t.toml"
    path.write_text(text)
    return str(path)


def test_each_setting_is_defined_once_in_the_section_that_takes_it() -> None:
    """A section of core/ (politeness, frontier, fetch, traps, records) takes its settings from the config by
    name: same defaults (they are the config's), and a value set in the config reaches the section."""
    import dataclasses

    from raycrawl.actors.settings import fetch_settings, frontier_settings, section
    from raycrawl.core.fetch_settings import FetchSettings
    from raycrawl.core.frontier_settings import FrontierSettings
    from raycrawl.core.politeness import DelayPolicy
    from raycrawl.core.settle import RecordRules
    from raycrawl.core.traps import TrapRules

    config_fields = {f.name: f for f in dataclasses.fields(CrawlConfig)}
    shared = 0
    for cls in (DelayPolicy, FrontierSettings, FetchSettings, TrapRules, RecordRules):
        for f in dataclasses.fields(cls):
            if f.name in config_fields:
                shared += 1
                assert f.default == config_fields[f.name].default, f"{cls.__name__}.{f.name}"
    assert shared >= 29
    cfg = CrawlConfig(seeds=("http://a.test/",), max_queue_total=7, delay=0.5, fetch_deadline=9.0, max_redirects=4,
                      max_path_depth=6, tracking_params=("x",), allow_network=("127.0.0.0/8",))  # fmt: skip
    frontier = frontier_settings(cfg)
    assert frontier.max_queue_total == 7 and frontier.policy.delay == 0.5
    fetch = fetch_settings(cfg, "out", None)
    assert fetch.fetch_deadline == 9.0 and fetch.tracking_params == ("x",) and fetch.allow_network == ("127.0.0.0/8",)
    assert section(RecordRules, cfg).max_redirects == 4 and section(TrapRules, cfg).max_path_depth == 6


def test_the_checkpoint_state_is_typed_and_reads_older_checkpoints() -> None:
    from raycrawl.core.checkpoint_state import CheckpointState

    state = CheckpointState(2, "bloom", 3, config={"dedup": "bloom"}, scope_hosts=["a.test"], parts=["pages/p"])
    assert CheckpointState.from_dict(state.to_dict()) == state
    old = CheckpointState.from_dict({"format": 1, "num_shards": 2, "dedup": "exact", "pages_offset": 0})
    assert (old.dedup_partitions, old.parts, old.scope_hosts, old.saved_settings) == (1, [], [], {"dedup": "exact"})
