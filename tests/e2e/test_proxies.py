"""Issue 34: egress through proxies, end to end with real proxies on loopback (Debian's tinyproxy): requests reach
the test web through the proxy their host's rule names (the proxies' logs and the server's agree), one host goes
direct, a dead proxy in a pool is rested and its hosts go on through the other, the proxy's password (from the
environment) appears in no log, stats, record or WARC, and the WARC says which proxy carried each response."""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from conftest import assert_each_url_once, committed_warc
from warcio.archiveiterator import ArchiveIterator

from raycrawl.adapters.output import read_pages
from raycrawl.testing import TestWeb, WebSpec
from raycrawl.testing.tinyproxy import TinyProxy

PASSWORD = "pw-6f1d9c-never-shown"


def _everything_written(out: Path) -> bytes:
    """Every byte the crawl wrote under its output, gzip members opened."""
    blobs = []
    for path in out.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            blobs.append(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
    return b"\n".join(blobs)


def test_hosts_go_through_their_proxies_a_dead_one_is_rested_and_no_password_shows(tmp_path: Path) -> None:
    spec = WebSpec(hosts=6, pages_per_host=12, links_per_page=4, cross_host_links=0.0)
    out = tmp_path / "out"
    with (
        TestWeb(spec) as web,
        TinyProxy("proxy-a", user="crawler", password=PASSWORD) as a,
        TinyProxy("proxy-b") as b,
        TinyProxy("proxy-dead") as dead,
    ):
        dead.stop()  # (its port refuses connections from now on)
        host = [f"127.0.0.{h + 2}" for h in range(spec.hosts)]
        proxy_a = f"http://crawler:${{TEST_PROXY_PASSWORD}}@127.0.0.1:{a.port}"
        crawl = [
            sys.executable, "-m", "raycrawl.cli", "crawl", *web.graph.seeds(), "--out", str(out),
            "--delay", "0.05", "--allow-network", "127.0.0.0/8", "--checkpoint-interval", "2",
            # the default pool: a dead proxy and proxy-b (hosts 4-5); host 0 through proxy-a, 1 through proxy-b,
            # 2 and 3 direct
            "--proxy", dead.url, "--proxy", b.url, "--proxy-cooldown", "10m",
            "--proxy-rules", f"{host[0]}={proxy_a}", "--proxy-rules", f"{host[1]}={b.url}",
            "--proxy-rules", f"{host[2]}=none", "--proxy-rules", f"{host[3]}=none",
        ]  # fmt: skip
        env = os.environ | {"TEST_PROXY_PASSWORD": PASSWORD}
        done = subprocess.run(crawl, capture_output=True, text=True, timeout=600, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        seen = web.requests()
        through_a, through_b = set(a.requests()), set(b.requests())

    # every page once, as without proxies
    reachable = set(web.graph.reachable([(h, 0) for h in range(spec.hosts)]))
    records = read_pages(str(out))
    assert_each_url_once(records)
    assert {r["url"] for r in records if r["outcome"] == "fetched"} == reachable, [
        (r["url"], r["outcome"], r.get("error")) for r in records if host[4] in r["url"]
    ]

    # the server saw each host through its proxy (Via), or direct; never a proxy's credentials
    via: dict[str, set[str]] = defaultdict(set)
    for r in seen:
        via[r["ip"]].add(r.get("via", "direct").split(" ")[1] if "via" in r else "direct")
        assert "proxy_authorization" not in r
    assert via == {
        host[0]: {"proxy-a"}, host[1]: {"proxy-b"}, host[2]: {"direct"}, host[3]: {"direct"},
        host[4]: {"proxy-b"}, host[5]: {"proxy-b"},
    }  # fmt: skip
    # ... and the proxies' logs agree with it, request for request
    by_proxy: dict[str, set[str]] = defaultdict(set)
    for r in seen:
        if "via" in r:
            by_proxy[r["via"].split(" ")[1]].add(f"http://{r['host']}{r['path']}")
    assert by_proxy["proxy-a"] == through_a, sorted(by_proxy["proxy-a"] ^ through_a)
    assert by_proxy["proxy-b"] == through_b, (
        sorted(through_b - by_proxy["proxy-b"]),
        sorted(r["ip"] + r["path"] for r in seen if r["ip"] == host[4]),
    )

    # the dead proxy was tried, rested, and said so; the password is nowhere
    stats = json.loads((out / "stats.json").read_text())
    health = {row["proxy"]: row for row in stats["proxies"]}
    assert health[dead.url]["failures"] >= 3 and health[dead.url]["rests"] >= 1
    assert health[dead.url]["state"] == "resting" and health[b.url]["requests"] > 0
    assert health[f"http://***@127.0.0.1:{a.port}"]["failures"] == 0
    written = _everything_written(out)
    assert PASSWORD.encode() not in written
    assert PASSWORD not in done.stdout + done.stderr

    # the WARC names the proxy of each response, and no WARC-IP-Address it cannot know
    carried: dict[str, set[str | None]] = defaultdict(set)
    for data in committed_warc(out):
        for rec in ArchiveIterator(io.BytesIO(data)):
            if rec.rec_type == "response":
                ip = rec.rec_headers.get_header("WARC-Target-URI").split("/")[2].split(":")[0]
                proxy = rec.rec_headers.get_header("WARC-Proxy")
                carried[ip].add(proxy)
                assert (proxy is None) == (rec.rec_headers.get_header("WARC-IP-Address") is not None)
    assert carried[host[0]] == {f"http://***@127.0.0.1:{a.port}"}
    assert carried[host[2]] == {None} and carried[host[4]] == {b.url}


def test_a_proxy_that_wants_credentials_ends_the_pages_in_error_and_nothing_of_its_answer_is_archived(
    tmp_path: Path,
) -> None:
    # (tinyproxy answers 407 to a request without credentials; to wrong ones it answers 401, which a crawler cannot
    # tell from the target's own 401)
    spec = WebSpec(hosts=1, pages_per_host=3, links_per_page=2, cross_host_links=0.0)
    out = tmp_path / "out"
    with TestWeb(spec) as web, TinyProxy("proxy-a", user="crawler", password="the-right-one") as a:
        crawl = [
            sys.executable, "-m", "raycrawl.cli", "crawl", *web.graph.seeds(), "--out", str(out),
            "--delay", "0", "--allow-network", "127.0.0.0/8", "--max-attempts", "2", "--backoff-base", "0.1",
            "--proxy", a.url,
        ]  # fmt: skip
        done = subprocess.run(crawl, capture_output=True, text=True, timeout=600)
        seen = web.requests()
    assert done.returncode == 0, done.stderr[-3000:]
    assert seen == []  # (nothing got past the proxy)
    records = read_pages(str(out))
    assert records and all(r["outcome"] == "error" and "ProxyAuthRefused" in r["error"] for r in records), records
    assert not any(rec.rec_type == "response" for data in committed_warc(out)
                   for rec in ArchiveIterator(io.BytesIO(data)))  # fmt: skip
    stats = json.loads((out / "stats.json").read_text())
    assert stats["proxies"][0]["failures"] >= 2 and stats["proxies"][0]["state"] == "resting"


def test_a_host_routed_through_a_socks5_proxy_is_crawled_through_it(tmp_path: Path) -> None:
    from raycrawl.testing.socks import Socks5Proxy

    spec = WebSpec(hosts=2, pages_per_host=8, links_per_page=3, cross_host_links=0.0)
    out = tmp_path / "out"
    with TestWeb(spec) as web, Socks5Proxy() as socks:
        socks_host, direct_host = web.graph.ip(0), web.graph.ip(1)
        crawl = [
            sys.executable, "-m", "raycrawl.cli", "crawl", *web.graph.seeds(), "--out", str(out),
            "--delay", "0", "--allow-network", "127.0.0.0/8", "--proxy-rules", f"{socks_host}={socks.url}",
        ]  # fmt: skip
        done = subprocess.run(crawl, capture_output=True, text=True, timeout=600)
        targets = list(socks.targets)
    assert done.returncode == 0, done.stderr[-3000:]
    reachable = set(web.graph.reachable([(h, 0) for h in range(spec.hosts)]))
    records = read_pages(str(out))
    assert_each_url_once(records)
    assert {r["url"] for r in records if r["outcome"] == "fetched"} == reachable
    assert targets and {host for host, _ in targets} == {socks_host}  # (the other host never went through it)
    carried: dict[str, set[str | None]] = defaultdict(set)
    for data in committed_warc(out):
        for rec in ArchiveIterator(io.BytesIO(data)):
            if rec.rec_type == "response":
                ip = rec.rec_headers.get_header("WARC-Target-URI").split("/")[2].split(":")[0]
                carried[ip].add(rec.rec_headers.get_header("WARC-Proxy"))
    assert carried == {socks_host: {socks.url}, direct_host: {None}}
