"""Which proxy carries which host (core/proxy_routes.py), and the proxies' settings (config, raycrawl/proxies.py):
without Ray, the clock injected."""

from __future__ import annotations

from pathlib import Path

import pytest

from raycrawl.config import CrawlConfig, read_toml
from raycrawl.core.proxy_routes import DIRECT, ProxyPlan, ProxyRouter, merge_health, parse_rule
from raycrawl.errors import ConfigError
from raycrawl.proxies import proxy_plan

A, B, C = "http://127.0.0.1:8001", "http://127.0.0.1:8002", "socks5://127.0.0.1:1080"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_rules_route_hosts_to_a_pool_of_their_own_the_default_pool_or_none() -> None:
    rules = [parse_rule(r) for r in ("*.direct.test=none", f"*.special.test={C}", "www.pooled.test=pool")]
    plan = ProxyPlan.of([A, B], rules)
    assert plan.names == (A, B, C)
    assert plan.pool_of("a.direct.test") == DIRECT
    assert plan.pools[plan.pool_of("x.special.test")] == (2,)
    assert plan.pool_of("www.pooled.test") == 0 and plan.pool_of("other.test") == 0
    router = ProxyRouter(plan)
    assert router.choose("a.direct.test") == DIRECT and router.choose("x.special.test") == 2
    assert {router.choose(f"h{i}.test") for i in range(4)} == {0, 1}  # (the default pool, hosts spread)
    # no default pool: hosts no rule matches go direct
    assert ProxyPlan.of([], rules).pool_of("other.test") == DIRECT


def test_a_host_keeps_its_proxy_and_a_failing_one_rests_its_hosts_moving_to_the_others() -> None:
    clock = Clock()
    router = ProxyRouter(ProxyPlan.of([A, B], [], cooldown=30.0, strikes=3), clock)
    first = router.choose("one.test")
    assert all(router.choose("one.test") == first for _ in range(5))  # session stickiness
    for _ in range(3):
        router.report("one.test", first, None, "ClientProxyConnectionError")
    other = router.choose("one.test")
    assert other != first
    health = {row["proxy"]: row for row in router.health()}
    assert health[(A, B)[first]]["state"] == "resting" and health[(A, B)[first]]["failures"] == 3
    clock.now += 31.0
    assert router.choose("one.test") == other  # (back from rest, but the host stays where it went)
    assert {router.report("x.test", other, s, None) for s in (200, 404, 407, 429)} == {"ok", "proxy_auth", "banned"}


def test_health_of_every_shard_adds_up_per_proxy() -> None:
    clock = Clock()
    routers = [ProxyRouter(ProxyPlan.of([A], [], strikes=1), clock) for _ in range(2)]
    for n, router in enumerate(routers):
        proxy = router.choose(f"h{n}.test")
        router.report(f"h{n}.test", proxy, 200, None)
    routers[1].report("h1.test", 0, None, "ClientProxyConnectionError")
    (row,) = merge_health([r.health() for r in routers])
    assert (row["requests"], row["failures"], row["hosts"], row["state"]) == (3, 1, 2, "resting")


def test_a_password_comes_from_the_environment_never_from_a_flag(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"\$\{VARIABLE\}") as caught:
        CrawlConfig(proxy=("http://bot:hunter2@127.0.0.1:3128",))
    assert "hunter2" not in str(caught.value)
    cfg = CrawlConfig(proxy=("http://bot:${PROXY_PASS}@127.0.0.1:3128",))
    with pytest.raises(ConfigError, match="PROXY_PASS") as caught:
        proxy_plan(cfg, {})
    plan = proxy_plan(cfg, {"PROXY_PASS": "hunter2"})
    assert plan.urls == ("http://bot:hunter2@127.0.0.1:3128",) and plan.names == ("http://***@127.0.0.1:3128",)
    assert "hunter2" not in repr(plan) and plan.without_secrets().urls == ()
    for bad in ("ftp://127.0.0.1:21", "http://127.0.0.1", "not a url", "http://[::1"):
        with pytest.raises(ConfigError, match="proxy"):
            CrawlConfig(proxy=(bad,))
    with pytest.raises(ConfigError, match="proxy_rules"):
        CrawlConfig(proxy_rules=("*.test",))


def test_a_pool_file_and_proxy_tables_in_toml(tmp_path: Path) -> None:
    pool = tmp_path / "pool.txt"
    pool.write_text(f"# the pool\n{A}\n\nhttp://bot:written-here@127.0.0.1:8003\n")
    toml = tmp_path / "crawl.toml"
    toml.write_text(
        f'proxy_file = "{pool}"\n'
        '[[proxy]]\npattern = "*.direct.test"\nproxy = "none"\n'
        f'[[proxy]]\npattern = "*.two.test"\nproxy = ["{B}", "{C}"]\n'
    )
    cfg = CrawlConfig(**read_toml(toml))
    assert cfg.proxy_rules == ("*.direct.test=none", f"*.two.test={B} {C}")
    plan = proxy_plan(cfg, {})
    assert plan.names[:2] == (A, "http://***@127.0.0.1:8003") and plan.pool_of("x.direct.test") == DIRECT
    assert [plan.names[p] for p in plan.pools[plan.pool_of("a.two.test")]] == [B, C]
    (tmp_path / "empty.txt").write_text("# nothing\n")
    for path, message in ((tmp_path / "missing.txt", "cannot read"), (tmp_path / "empty.txt", "names no proxy")):
        with pytest.raises(ConfigError, match=message):
            proxy_plan(CrawlConfig(proxy_file=str(path)), {})
    toml.write_text('[[proxy]]\npattern = "*.x.test"\n')
    with pytest.raises(ConfigError, match=r"proxy: .*expected a table"):
        read_toml(toml)


def test_a_password_from_the_environment_stays_a_password_whatever_it_holds(tmp_path: Path) -> None:
    """Issue 46.2: substituted values are percent-encoded (a '/', '#' or '?' re-parsed the URL and the whole of it
    became the proxy's name); a proxy is named by scheme, host and port (a key as the user name is secret too);
    a pool-file line that does not parse is never echoed."""
    from raycrawl.adapters.egress import _parsed

    secret = "s3cr/et#X?y@z%"
    cfg = CrawlConfig(proxy=("http://crawler:${PROXY_PASS}@proxy.example:3128", "http://${PROXY_KEY}:@key.example:80"))
    plan = proxy_plan(cfg, {"PROXY_PASS": secret, "PROXY_KEY": "KEY-123"})
    assert plan.names == ("http://***@proxy.example:3128", "http://***@key.example:80")
    first, second = (_parsed(url) for url in plan.urls)
    assert (first.host, first.port, first.auth and first.auth.password) == ("proxy.example", 3128, secret)
    assert (second.host, second.auth and second.auth.login) == ("key.example", "KEY-123")
    assert secret not in repr(plan) and "KEY-123" not in repr(plan.without_secrets())
    pool = tmp_path / "pool.txt"
    for line in ("http://crawler:s3cr/et#X@proxy.example:3128", "hunter2secret", "http://bot:hunter2 secret@h:1"):
        pool.write_text(line + "\n")
        with pytest.raises(ConfigError) as caught:
            proxy_plan(CrawlConfig(proxy_file=str(pool)), {})
        assert "s3cr" not in str(caught.value) and "hunter2" not in str(caught.value), str(caught.value)
