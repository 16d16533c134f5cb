"""Issue 13 end to end: the CLI crawls hosts that send bytes no well-behaved library would, next to an ordinary host.

One crawl (a subprocess, as a user runs it) of three hosts of the test web: ``odd`` (raw-socket responses: bytes
that are not UTF-8 in headers and reason phrases, codec names as charsets, six Content-Encoding layers, resets
mid-body, a body dripped until the deadline cuts it, a robots.txt with a BOM, a query rule and a prefix group,
links to be requested as written), ``odd-cut-robots`` (its robots.txt reset mid-body), and an ordinary host.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import committed_pages
from warcio.archiveiterator import ArchiveIterator

from raycrawl.testing import TestWeb, WebSpec
from raycrawl.testing.odd import CASES, DRIP_STEP

DELAY = 0.05
DEADLINE = 1.0
BACKOFF_BASE = 0.5


@dataclass
class OddCrawl:
    returncode: int
    stdout: str
    stderr: str
    out: Path
    odd: str  # netloc of the odd host
    cut_robots: str
    normal: str
    normal_pages: set[str]
    requests: list[dict[str, Any]]
    events: list[dict[str, Any]]


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> OddCrawl:
    tmp = tmp_path_factory.mktemp("odd")
    spec = WebSpec(hosts=3, pages_per_host=15, private_links=False, cross_host_links=0.0,
                   profiles=("odd", "odd-cut-robots"))  # fmt: skip
    with TestWeb(spec) as web:
        allow = [arg for h in range(spec.hosts) for arg in ("--allow-network", f"{web.graph.ip(h)}/32")]
        out = tmp / "out"
        args = [
            sys.executable, "-m", "raycrawl.cli", "crawl", web.graph.url(0, 0), web.graph.url(2, 0),
            "--out", str(out), "--scope", "any", "--delay", str(DELAY), "--fetch-deadline", str(DEADLINE),
            "--timeout", str(DEADLINE), "--backoff-base", str(BACKOFF_BASE), "--max-backoff", "2",
            "--shards", "2", "--quiet", *allow,
        ]  # fmt: skip
        env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"} | {"RAY_USAGE_STATS_ENABLED": "0"}
        proc = subprocess.run(args, cwd=tmp, env=env, capture_output=True, timeout=400)
        normal_pages = {web.graph.url(2, p) for p in range(spec.pages_per_host)}
        return OddCrawl(
            proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace"), out,
            web.graph.netloc(0), web.graph.netloc(1), web.graph.netloc(2), normal_pages, web.requests(), web.events(),
        )  # fmt: skip


def _records(out: Path) -> list[dict[str, Any]]:
    text = committed_pages(out).decode("utf-8")  # strict: the parts are valid UTF-8
    return [json.loads(line) for line in text.splitlines()]


def test_the_crawl_ends_well_with_one_record_per_linked_url(crawl: OddCrawl) -> None:
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    assert "Traceback" not in crawl.stderr and "Traceback" not in crawl.stdout
    records = _records(crawl.out)
    assert [u for u, n in Counter(r["url"] for r in records).items() if n > 1] == []

    odd = {r["requested_url"].split(crawl.odd, 1)[1]: r for r in records if crawl.odd in r["url"]}
    expected = {"/", *CASES}
    assert set(odd) == expected, set(odd) ^ expected
    for path, (outcome, error) in CASES.items():
        assert odd[path]["outcome"] == outcome, (path, odd[path])
        assert error in (odd[path]["error"] or ""), (path, odd[path])

    # The host whose robots.txt was cut: its URLs end as errors, nothing of it was fetched.
    cut = [r for r in records if crawl.cut_robots in r["url"]]
    assert {r["url"].split(crawl.cut_robots, 1)[1] for r in cut} == {"/", "/p/1"}
    assert all(r["outcome"] == "error" and "robots.txt unreachable" in r["error"] for r in cut), cut

    # The ordinary host, next to all of it, is crawled completely.
    fetched = {r["url"] for r in records if r["outcome"] == "fetched"}
    assert crawl.normal_pages <= fetched


def test_every_odd_but_readable_page_had_its_links_followed(crawl: OddCrawl) -> None:
    records = {r["requested_url"]: r for r in _records(crawl.out)}
    readable = [p for p, (outcome, _) in CASES.items() if outcome == "fetched" and not p.startswith("/found/")]
    for path in readable:
        record = records[f"http://{crawl.odd}{path}"]
        for link in record["outlinks"]:
            assert link in {r["url"] for r in records.values()}, (path, link)
    found = {p for p in CASES if p.startswith("/found/")}
    assert len(found) >= 9 and all(records[f"http://{crawl.odd}{p}"]["outcome"] == "fetched" for p in found)


def test_a_malformed_content_type_is_kept_in_the_record_and_the_page_sniffed(crawl: OddCrawl) -> None:
    records = {r["requested_url"]: r for r in _records(crawl.out)}
    page = records[f"http://{crawl.odd}/ct-malformed"]
    assert page["content_type"] == "text/html\ufffd"  # what was sent, made clean (0xFF is no UTF-8)
    assert page["outlinks"] == [f"http://{crawl.odd}/found/ct-malformed"]  # sniffed as HTML: its link followed
    assert records[f"http://{crawl.odd}/found/ct-malformed"]["outcome"] == "fetched"


def test_robots_txt_was_obeyed_to_the_letter_and_links_sent_as_written(crawl: OddCrawl) -> None:
    odd_paths = [r["path"] for r in crawl.requests if r["host"] == crawl.odd]
    # BOM skipped (/private/ is disallowed by the first group), the query rule applied to the link as written,
    # and the group for 'ray' not taken for 'raycrawl' (else nothing but robots.txt would have been fetched).
    assert not any(p.startswith(("/private/", "/search")) for p in odd_paths)
    assert "/find?b=2&a=1&a=0" in odd_paths  # exactly as the link wrote it: order and repeated keys kept
    assert "/dir/sub" in odd_paths and "/sp%7Ecial" in odd_paths and "/found/loc%FF%FE%20ation" in odd_paths
    assert set(odd_paths) <= {"/robots.txt", "/", *CASES}, set(odd_paths) - {"/robots.txt", "/", *CASES}
    # Nothing past the robots.txt that was cut short: only robots.txt itself, asked again a bounded number of times.
    cut_paths = [r["path"] for r in crawl.requests if r["host"] == crawl.cut_robots]
    assert cut_paths and set(cut_paths) == {"/robots.txt"} and len(cut_paths) <= 3


def test_every_output_file_is_valid(crawl: OddCrawl) -> None:
    stats = json.loads((crawl.out / "stats.json").read_bytes().decode("utf-8"))
    assert stats["outcomes"]["error"] >= 8
    for line in crawl.stdout.splitlines():
        assert "\ufffd" not in line or line.isprintable()
    responses = 0
    for warc in (crawl.out / "warc").glob("*.warc.gz"):
        with warc.open("rb") as f:
            kinds = []
            for record in ArchiveIterator(f):
                record.content_stream().read()
                kinds.append(record.rec_type)
                if record.rec_type == "response":
                    responses += 1
                    assert record.rec_headers.get_header("WARC-IP-Address", "").startswith("127.0.0.")
            assert kinds[0] == "warcinfo"
        # warcio's checker: every digest matches (the raw header bytes of the odd host included)
        done = subprocess.run([sys.executable, "-m", "warcio.cli", "check", str(warc)], capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
    fetched = [r for r in _records(crawl.out) if r["outcome"] == "fetched"]
    assert responses >= len(fetched)


def test_a_body_cut_by_the_deadline_is_followed_by_the_hosts_delay_and_backoff(crawl: OddCrawl) -> None:
    """The politeness clock counts from the cut (the end of the exchange), not from when the headers came."""
    cuts = sorted(e["t"] for e in crawl.events if e["event"] == "cut" and e["path"] == "/drip-cut")
    assert len(cuts) == 3  # max_attempts, each cut by the deadline
    odd_times = sorted(r["t"] for r in crawl.requests if r["host"] == crawl.odd)
    for cut in cuts:
        later = [t for t in odd_times if t > cut]
        if later:
            # The server notices the cut within one drip step of it; the backoff after a failure >= its base.
            assert later[0] - cut >= max(DELAY, BACKOFF_BASE) - 2 * DRIP_STEP, (cut, later[0])
