"""Issue 5 end to end: the CLI crawls the hostile host next to ordinary ones and everything stays bounded.

The crawl runs as a user runs it (a subprocess with its own local Ray), so exit code, stderr and the memory
of every process of the crawl can be observed. Only loopback is ever connected to; the canary is a loopback
listener the crawler must never reach, whatever spelling of its address a page uses.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from conftest import committed_pages
from warcio.archiveiterator import ArchiveIterator

from raycrawl.adapters.output import read_pages
from raycrawl.testing import TestWeb, WebSpec
from raycrawl.testing.canary import Canary
from raycrawl.testing.hostile import CASES
from raycrawl.testing.process import gaps_by_host

CANARY_IP = "127.0.0.99"
DELAY = 0.1
DEADLINE = 2.0
GIB = 1 << 30


def by_host(requests: list[dict[str, Any]]) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {}
    for r in requests:
        times.setdefault(r["host"], []).append(r["t"])
    return times


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            tree.setdefault(ppid, []).append(int(entry))
    return tree


RAY_DAEMONS = ("ray::DashboardAgent", "ray::RuntimeEnvAgent")


def _memory(pid: int, peaks: dict[int, tuple[str, int]]) -> tuple[int, int]:
    """Proportional set size now (shared pages counted once, split between the processes mapping them) of the
    crawl's own processes, and of all descendants of pid including Ray's daemons. Also records each process's
    peak resident size (VmHWM, kept by the kernel, so a spike between two samples is not missed)."""
    tree = _children()
    todo, total, crawl = [pid], 0, 0
    while todo:
        p = todo.pop()
        todo.extend(tree.get(p, []))
        try:
            status = Path(f"/proc/{p}/status").read_text()
            rollup = Path(f"/proc/{p}/smaps_rollup").read_text()
            cmd = Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        for line in rollup.splitlines():
            if line.startswith("Pss:"):
                pss = int(line.split()[1]) * 1024
                total += pss
                if p == pid or (cmd.startswith("ray::") and not cmd.startswith(RAY_DAEMONS)):
                    crawl += pss
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                peaks[p] = (cmd[:80], int(line.split()[1]) * 1024)
    return crawl, total


def test_the_hostile_web_is_bounded_counted_and_never_fatal(tmp_path: Path) -> None:
    canary = Canary(CANARY_IP)
    spec = WebSpec(
        hosts=4,
        pages_per_host=120,
        private_links=False,
        cross_host_links=0.0,
        profiles=("hostile",),
        canary=f"{CANARY_IP}:{canary.port}",
    )
    try:
        with TestWeb(spec) as web:
            allow = [arg for h in range(spec.hosts) for arg in ("--allow-network", f"{web.graph.ip(h)}/32")]
            out = tmp_path / "out"
            # Every page of the ordinary hosts is a seed, so each always has a URL waiting: a gap in its requests
            # is then the crawler's stall, never a host waiting for its next link to be discovered.
            seeds = tmp_path / "seeds.txt"
            pages = [web.graph.url(h, p) for h in range(1, spec.hosts) for p in range(spec.pages_per_host)]
            seeds.write_text("\n".join(pages) + "\n")
            args = [
                sys.executable, "-m", "raycrawl.cli", "crawl", web.graph.seeds()[0], "--seeds-file", str(seeds),
                "--out", str(out), "--scope", "any", "--deny", "/outofscope/", "--delay", str(DELAY),
                "--fetch-deadline", str(DEADLINE), "--backoff-base", "0.5", "--max-backoff", "2",
                "--shards", "2", "--quiet", *allow,
            ]  # fmt: skip
            env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"} | {"RAY_USAGE_STATS_ENABLED": "0"}
            proc = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            peaks: dict[int, tuple[str, int]] = {}
            peak_crawl = peak_total = 0
            deadline = time.monotonic() + 400
            while proc.poll() is None and time.monotonic() < deadline:
                crawl, total = _memory(proc.pid, peaks)
                peak_crawl, peak_total = max(peak_crawl, crawl), max(peak_total, total)
                time.sleep(0.2)  # a monitor's sampling interval (VmHWM per process catches spikes in between)
            if proc.poll() is None:
                proc.kill()
            stdout, stderr = proc.communicate(timeout=60)
            requests = web.requests()
    finally:
        canary.close()

    # 1. It ends by itself, exit 0, bounded memory, each case with the right outcome.
    err = stderr.decode(errors="replace")
    assert proc.returncode == 0, err[-3000:]
    assert "Traceback" not in err
    biggest = max(rss for _, rss in peaks.values())
    print(f"peak memory (PSS): crawl processes {peak_crawl / 2**20:.0f} MiB, with Ray's daemons "
          f"{peak_total / 2**20:.0f} MiB; largest process (peak RSS) {biggest / 2**20:.0f} MiB")  # fmt: skip
    assert peak_crawl < GIB
    assert biggest < GIB // 4  # no process ever held a bomb's worth, even between two samples

    hostile_host = web.graph.netloc(0)
    records = {r["url"]: r for r in read_pages(str(out))}
    for path, (outcome, error) in CASES.items():
        record = records.get(f"http://{hostile_host}{path}")
        assert record is not None, path
        assert record["outcome"] == outcome, (path, record)
        assert error in (record["error"] or ""), (path, record)

    # 2. The canary saw nothing, in any spelling; the blocked addresses are on record.
    assert canary.connections == 0
    blocked = [r for r in records.values() if CANARY_IP in r["url"] or "7f00:63" in r["url"]]
    assert blocked and all(r["outcome"] == "error" for r in blocked)

    # 3. Bounded cost per trap; the drip is cut at the deadline; the other hosts keep their pace.
    hostile_paths = Counter(r["path"].split("/")[1] + "/" + r["path"].split("/")[2] if r["path"].count("/") > 1
                            else r["path"] for r in requests if r["host"] == hostile_host)  # fmt: skip
    assert hostile_paths["trap/deep"] <= 25 and hostile_paths["trap/repeat"] <= 25
    assert hostile_paths["loop/a"] + hostile_paths["loop/b"] <= 11
    assert hostile_paths["chain/" + "0"] >= 1
    chain_requests = sum(n for p, n in hostile_paths.items() if p.startswith("chain/"))
    assert chain_requests <= 11
    drips = sorted(r["t"] for r in requests if r["host"] == hostile_host and r["path"] == "/drip")
    assert len(drips) == 3  # max_attempts, each ended by the deadline (a drip would last 7 hours)
    assert all(b - a >= DEADLINE for a, b in itertools.pairwise(drips))
    normal = [r for r in requests if r["host"] != hostile_host and r["path"] != "/robots.txt"]
    gaps = gaps_by_host(normal)
    assert len(normal) == 3 * spec.pages_per_host
    assert min(min(g) for g in gaps.values()) >= DELAY
    # While the drip held a fetch for its whole deadline, each ordinary host still being crawled kept going:
    # requests inside the drip windows (the ideal is DEADLINE / DELAY = 20 a window; a host the drip blocked would
    # have none in any of them). Counted over the windows together: a loaded machine once stalled one host for a
    # whole window (CI, two tests side by side), which a blocked host would not tell apart from. How close to the
    # ideal is for the benchmarks to measure, not for a test on a shared machine.
    for host, times in by_host(normal).items():
        windows = [start for start in drips if max(times) > start + DEADLINE]
        inside = {start: sum(1 for t in times if start <= t <= start + DEADLINE) for start in windows}
        assert sum(inside.values()) >= 0.1 * len(windows) * DEADLINE / DELAY, (host, inside)

    # 4. No credential, no non-http(s) URL, nothing disallowed or out of scope, anywhere.
    assert all(r["url"].startswith(("http://", "https://")) for r in records.values())
    for r in requests:
        assert not r["path"].startswith(("/private/", "/outofscope/", "/ftp", "/data", "/etc"))
        assert "authorization" not in r and "secret" not in json.dumps(r)
    output_text = committed_pages(out).decode() + (out / "stats.json").read_text() + stdout.decode() + err
    for warc in (out / "warc").glob("*.warc.gz"):
        with warc.open("rb") as f:
            for rec in ArchiveIterator(f):  # (bodies are the pages as served: /junk's text has the link)
                output_text += str(rec.rec_headers.headers) + str(rec.http_headers.headers if rec.http_headers else "")
    assert "secret" not in output_text and "Authorization" not in output_text
    dropped = json.loads((out / "stats.json").read_text())["dropped_links"]
    for rule in ("path_too_deep", "repeated_segment", "url_too_long", "redirect_loop", "too_many_redirects"):
        assert dropped.get(rule, 0) >= 1, (rule, dropped)
    print("dropped by rule:", dropped)
    print("hostile host requests:", dict(hostile_paths))
