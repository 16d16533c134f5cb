"""The fetcher without Ray: what reaches the server, where the connection goes, and what comes back.

Every address here is loopback; the "blocked" cases use a loopback canary listener the fetcher must never
reach (the address guard refuses it because this crawl only allows the test host's /32).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from raycrawl.adapters.fetcher import Fetcher, FetchSettings
from raycrawl.core.records import FetchResult, Lease, UrlEntry
from raycrawl.testing import TestWeb, WebSpec
from raycrawl.testing.canary import Canary

CANARY_IP = "127.0.0.98"


@pytest.fixture(scope="module")
def web() -> Iterator[TestWeb]:
    spec = WebSpec(hosts=3, pages_per_host=20, private_links=False, profiles=("normal", "robots-redirect-2", "slow"),
                   slow_seconds=2.0)  # fmt: skip
    with TestWeb(spec) as web:
        yield web


@pytest.fixture
def canary() -> Iterator[list[int]]:
    """A listener on a loopback address the crawl does not allow; the list counts connections to it."""
    sock = socket.socket()
    sock.bind((CANARY_IP, 0))
    sock.listen(8)
    sock.settimeout(0.1)
    connections = [0, sock.getsockname()[1]]
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            connections[0] += 1
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield connections
    stop.set()
    thread.join()
    sock.close()


def fetch(settings: FetchSettings, urls: list[str], kind: str = "page", spacing: float = 0.0) -> list[FetchResult]:
    """Fetch urls in one stream, the i-th due ``i * spacing`` seconds after the fetcher is ready."""
    fetcher = Fetcher(settings)
    now = time.time()
    leases = [Lease(i, 0, kind, now + i * spacing, now + 600, UrlEntry(url, 0)) for i, url in enumerate(urls)]  # type: ignore[arg-type]
    try:
        results = [r for group in fetcher.fetch_stream(leases) for r in group]
    finally:
        fetcher.close()
    return sorted(results, key=lambda r: r.lease.lease_id)


def allow(web: TestWeb, host: int = 0) -> tuple[str, ...]:
    return (f"{web.graph.ip(host)}/32",)


def test_a_page_is_fetched_with_our_headers_and_its_links(web: TestWeb, tmp_path: Path) -> None:
    settings = FetchSettings(user_agent="raycrawl-test/1", allow_network=allow(web), warc_buffer=str(tmp_path))
    url = web.graph.url(0, 0)
    before = len(web.requests())
    [result] = fetch(settings, [url])
    seen = web.requests()[before:]
    assert result.status == 200 and result.error is None
    assert result.outlinks and all(link.startswith("http://") for link in result.outlinks)
    assert result.sent_at <= result.responded_at
    assert [(r["path"], r["ua"], r["host"]) for r in seen] == [("/", "raycrawl-test/1", web.graph.netloc(0))]
    assert list(tmp_path.glob("*.warc.gz"))  # request and response written


def test_connections_are_kept_alive_across_a_process_requests(web: TestWeb) -> None:
    settings = FetchSettings(allow_network=allow(web))
    urls = [web.graph.url(0, p) for p in range(1, 4)]
    before = len(web.requests())
    results = fetch(settings, urls, spacing=0.1)  # one after another: one connection can carry them all
    ports = {r["client_port"] for r in web.requests()[before:]}
    assert all(r.status == 200 for r in results)
    assert len(ports) == 1


def test_loopback_is_refused_by_default_and_nothing_is_sent(web: TestWeb) -> None:
    before = len(web.requests())
    [result] = fetch(FetchSettings(), [web.graph.url(1, 0)])
    assert result.status is None and result.error == "BlockedAddress" and not result.transient
    assert web.requests()[before:] == []


def test_a_name_goes_to_its_checked_address_with_its_own_host_header(web: TestWeb) -> None:
    port = web.graph.netloc(0).rsplit(":", 1)[1]
    settings = FetchSettings(resolve=(("site.test", web.graph.ip(0)),), allow_network=allow(web))
    before = len(web.requests())
    [result] = fetch(settings, [f"http://site.test:{port}/"])
    [seen] = web.requests()[before:]
    assert result.status == 200
    assert (seen["ip"], seen["host"]) == (web.graph.ip(0), f"site.test:{port}")


def test_a_name_resolving_to_a_refused_address_never_connects(web: TestWeb, canary: list[int]) -> None:
    settings = FetchSettings(resolve=(("evil.test", CANARY_IP),), allow_network=allow(web))
    literal = f"http://{CANARY_IP}:{canary[1]}/"
    results = fetch(settings, [f"http://evil.test:{canary[1]}/", literal])
    assert [(r.status, r.error, r.transient) for r in results] == [(None, "BlockedAddress", False)] * 2
    assert canary[0] == 0


def test_robots_redirects_are_followed_and_page_redirects_are_handed_back(web: TestWeb) -> None:
    settings = FetchSettings(allow_network=allow(web, 1))
    netloc = web.graph.netloc(1)
    before = len(web.requests())
    [robots] = fetch(settings, [f"http://{netloc}/robots.txt"], kind="robots")
    assert robots.status == 200 and robots.final_url == f"http://{netloc}/r/2" and b"Disallow" in (robots.body or b"")
    [page] = fetch(settings, [f"http://{netloc}/robots.txt"])
    assert page.status == 301 and page.outlinks == [f"http://{netloc}/r/1"]  # back through the frontier
    assert [r["path"] for r in web.requests()[before:]] == ["/robots.txt", "/r/1", "/r/2", "/robots.txt"]


def test_a_body_over_the_limit_is_cut_and_not_parsed(web: TestWeb) -> None:
    [result] = fetch(FetchSettings(allow_network=allow(web), max_body_bytes=100), [web.graph.url(0, 5)])
    assert result.status == 200 and result.truncated and result.size == 100 and result.outlinks == []


def test_a_slow_server_is_cut_by_the_read_timeout_or_the_deadline(web: TestWeb) -> None:
    url = web.graph.url(2, 0)  # answers after 2 s
    [by_timeout] = fetch(FetchSettings(allow_network=allow(web, 2), timeout=0.3, fetch_deadline=10), [url])
    [by_deadline] = fetch(FetchSettings(allow_network=allow(web, 2), timeout=10, fetch_deadline=0.3), [url])
    assert by_timeout.status is None and by_timeout.transient and by_timeout.error is not None
    assert "Deadline" not in by_timeout.error and "Timeout" in by_timeout.error
    assert by_deadline.status is None and by_deadline.transient and by_deadline.error == "Deadline: not done in 0.3 s"


def test_the_synthetic_web_answers_in_process_as_the_served_one(web: TestWeb, monkeypatch: pytest.MonkeyPatch) -> None:
    """benchmarks/machinery.py's web: same pages and links as the served test web, and not one request sent."""
    from raycrawl.testing.synthetic import SyntheticWeb

    synthetic = SyntheticWeb(web.spec, web.port)
    assert SyntheticWeb.from_env(synthetic.env()) is not None and SyntheticWeb.from_env({}) is None
    urls = [web.graph.url(0, 0), web.graph.url(0, 3), web.graph.url(0, 10**6), web.graph.url(0, 0) + "robots.txt"]
    served = fetch(FetchSettings(allow_network=("127.0.0.0/8",)), urls)
    before = len(web.requests())
    for name, value in synthetic.env().items():
        monkeypatch.setenv(name, value)
    answered = fetch(FetchSettings(), urls)  # (no network allowed at all: nothing could be sent)
    assert len(web.requests()) == before

    def seen(results: list[FetchResult]) -> list[tuple[int | None, list[str], str | None]]:
        return [(r.status, r.outlinks, r.sha256 if r.status == 200 else None) for r in results]

    assert seen(answered) == seen(served)
    assert [r.status for r in answered] == [200, 200, 404, 200]


def test_no_request_leaves_before_its_slot_however_early_the_loop_wakes(
    web: TestWeb, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loop whose timers fire early (uvloop's are milliseconds: Ray makes it the loop of every process when it
    is installed) must not move a request before its ``not_before``."""
    import asyncio

    real_sleep = asyncio.sleep

    async def early(delay: float, result: object = None) -> object:
        return await real_sleep(max(0.0, delay - 0.003), result)  # wakes 3 ms early

    monkeypatch.setattr(asyncio, "sleep", early)
    results = fetch(FetchSettings(allow_network=allow(web)), [web.graph.url(0, p) for p in range(1, 6)], spacing=0.05)
    assert [r.status for r in results] == [200] * 5
    assert all(r.sent_at >= r.lease.not_before for r in results)


def test_behind_a_proxy_the_target_is_still_held_to_the_address_guard(web: TestWeb, canary: list[int]) -> None:
    from raycrawl.testing.tinyproxy import TinyProxy

    with TinyProxy("guarded") as proxy:
        settings = FetchSettings(resolve=(("evil.test", CANARY_IP),), allow_network=allow(web), proxies=(proxy.url,))
        fetcher = Fetcher(settings)
        now = time.time()
        urls = [f"http://evil.test:{canary[1]}/", f"http://{CANARY_IP}:{canary[1]}/", web.graph.url(0, 0)]
        leases = [Lease(i, 0, "page", now, now + 600, UrlEntry(url, 0), proxy=0) for i, url in enumerate(urls)]
        try:
            results = sorted(
                (r for group in fetcher.fetch_stream(leases) for r in group), key=lambda r: r.lease.lease_id
            )
        finally:
            fetcher.close()
        asked = proxy.requests()
    assert [(r.status, r.error) for r in results] == [(None, "BlockedAddress")] * 2 + [(200, None)]
    assert canary[0] == 0 and asked == [web.graph.url(0, 0)]  # (only the allowed target reached the proxy)


def fetch_leases(settings: FetchSettings, urls: list[tuple[str, int]]) -> list[FetchResult]:
    """(url, proxy number or -1) each, fetched at once in one stream."""
    fetcher = Fetcher(settings)
    now = time.time()
    leases = [Lease(i, 0, "page", now, now + 600, UrlEntry(url, 0), proxy=p) for i, (url, p) in enumerate(urls)]
    try:
        return sorted((r for group in fetcher.fetch_stream(leases) for r in group), key=lambda r: r.lease.lease_id)
    finally:
        fetcher.close()


@pytest.mark.parametrize("kind", ["http", "socks5"])
def test_a_proxys_name_is_trusted_for_the_proxy_only_never_as_a_target(web: TestWeb, kind: str) -> None:
    """Issue 46.1: with a proxy named ``localhost``, a link to ``localhost`` on another port (a refused address) is
    refused whether it goes direct or through the proxy; the proxy itself is still reached by its name."""
    from raycrawl.testing.socks import Socks5Proxy
    from raycrawl.testing.tinyproxy import TinyProxy

    proxy = TinyProxy("named") if kind == "http" else Socks5Proxy()
    with Canary("127.0.0.1") as canary, proxy:
        settings = FetchSettings(allow_network=allow(web), proxies=(f"{kind}://localhost:{proxy.port}",))
        evil = f"http://localhost:{canary.port}/"
        results = fetch_leases(settings, [(evil, -1), (evil, 0), (web.graph.url(0, 0), 0)])
        asked = proxy.requests() if isinstance(proxy, TinyProxy) else [f"{h}:{p}" for h, p in proxy.targets]
    assert [(r.status, r.error) for r in results] == [(None, "BlockedAddress")] * 2 + [(200, None)]
    assert canary.connections == 0
    assert asked == [web.graph.url(0, 0) if kind == "http" else web.graph.netloc(0)]


def test_a_socks5_proxy_is_handed_the_address_that_was_checked(web: TestWeb, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 46.3: a name that answers an allowed address first and a refused one after (DNS rebinding) is looked up
    once, by the guarded resolver; the proxy gets that address, never the name for a second lookup."""
    from raycrawl.testing.socks import Socks5Proxy

    real = socket.getaddrinfo
    lookups: list[str] = []

    def rebinding(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host != "rebind.test":
            return real(host, *args, **kwargs)
        lookups.append(host)
        return real(web.graph.ip(0) if len(lookups) == 1 else CANARY_IP, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    with Canary(CANARY_IP) as canary, Socks5Proxy() as proxy:
        settings = FetchSettings(allow_network=allow(web), proxies=(proxy.url,))
        url = f"http://rebind.test:{canary.port}/"
        [result] = fetch_leases(settings, [(url, 0)])
        targets = list(proxy.targets)
    assert canary.connections == 0 and lookups == ["rebind.test"]
    assert targets == [(web.graph.ip(0), canary.port)]  # (the checked address; nothing listens there: refused)
    assert result.status is None and result.error is not None
