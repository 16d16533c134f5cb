"""Worker nodes that do not share the head's disk, as on a real cluster: each is ``ray start --address ...`` in a
mount namespace of its own with a private tmpfs over /tmp (its temporary directory, Ray's session directory, and
every test's output directory). The head offers no CPU, so every fetch runs on those nodes (as with
cluster.yaml).

- With ``--out s3://...`` (a real S3 API server on loopback) every page's record and WARC response ends up in
  the store exactly once, though one node is killed mid-crawl with WARC buffered on its tmpfs; and nothing is
  left in the surviving node's buffer.
- With a local ``--out`` the crawl is refused at start, with the fix, before one request is sent.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from conftest import LOOPBACK, assert_each_url_once, page_requests, wait_until, warc_page_responses
from ray_cluster import RayHead, descendants, kill_tree
from warcio.archiveiterator import ArchiveIterator

from raycrawl.adapters.output import read_pages
from raycrawl.adapters.storage import resolve
from raycrawl.testing import TestWeb, WebSpec
from raycrawl.testing.graph import WebGraph


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "needs root: worker nodes run in mount namespaces of their own (unshare --mount)"
    if shutil.which("unshare") is None:
        return "needs unshare (util-linux)"
    probe = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", "mount -t tmpfs none /mnt"],
        capture_output=True,
        check=False,
    )
    if probe.returncode != 0:
        return f"this machine does not allow mount namespaces: {probe.stderr.decode().strip()}"
    return None


pytestmark = pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))


class PrivateNode:
    """``ray start --address ... --block`` with a private tmpfs over /tmp; stopped by its own pid and tree."""

    def __init__(self, head: RayHead, address: str, workdir: Path) -> None:
        # Each node has a loopback address of its own (127.0.1.x), as nodes of a real cluster have theirs, and
        # reaches the head by a name its private /etc/hosts maps to 127.0.0.1. (`ray start` swaps "127.0.0.1" in
        # --address and --node-ip-address for the machine's outward address, one tests must never touch; and
        # conftest's RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, which keeps drivers on loopback, would make it refuse to
        # join a cluster at all.)
        port = head.address.rsplit(":", 1)[1]
        hosts = workdir / f"hosts-{address}"
        hosts.write_text("127.0.0.1 localhost\n127.0.0.1 raycrawl-head\n")
        # The machine's /tmp stays reachable at /mnt inside the namespace only long enough to bring back what the
        # node needs from it (this checkout and its virtualenv, when they live under /tmp, as in CI's clone).
        keep = " && ".join(f"mkdir -p {p} && mount --bind /mnt/{p.relative_to('/tmp')} {p}" for p in _kept_under_tmp())
        script = (
            f"mount --bind {hosts} /etc/hosts && mount --bind /tmp /mnt && "
            "mount -t tmpfs -o size=2g raycrawl-private /tmp && "
            + (f"{keep} && " if keep else "")
            + f"exec ray start --block --address=raycrawl-head:{port} --node-ip-address={address} --num-cpus=1 "
            "--disable-usage-stats"
        )
        self.address = address
        self._log = (workdir / f"node-{address}.log").open("wb")
        self.proc = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
            env={**head.env, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "1"},
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def tmp(self) -> Path:
        """This node's /tmp, seen from outside its namespace."""
        return Path(f"/proc/{self.proc.pid}/root/tmp")

    def signal_tree(self, signum: int, pids: set[int] | None = None) -> set[int]:
        """Send ``signum`` to ``pids`` (by default: ray start and every process under it); returns them."""
        pids = descendants({self.proc.pid}) if pids is None else pids
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signum)
        return pids

    def kill(self) -> None:
        """The node disappears: SIGKILL to ray start and everything it started."""
        kill_tree(lambda pid, cmdline: pid == self.proc.pid)
        self.proc.wait(timeout=30)
        self._log.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # (ray start --block stops what it started)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=30)
        self.kill()


def _kept_under_tmp() -> list[Path]:
    """The directories a node must still see though its /tmp is private: this checkout and the Python
    environment, where they are under /tmp (outermost first, each once)."""
    import raycrawl

    wanted = {Path(sys.prefix).resolve(), Path(raycrawl.__file__).resolve().parents[1]}
    under = sorted(p for p in wanted if p.is_relative_to("/tmp"))
    return [p for p in under if not any(p != q and p.is_relative_to(q) for q in under)]


def _alive_nodes(head: RayHead) -> list[str]:
    """The addresses of the cluster's live nodes, sorted (each must be a loopback one)."""
    code = "import ray; ray.init(address='auto'); print(*sorted(n['NodeManagerAddress'] for n in ray.nodes() if n['Alive']))"  # noqa: E501
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**head.env, "RAY_ADDRESS": head.address},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.stdout.strip().splitlines()[-1].split() if done.returncode == 0 and done.stdout.strip() else []


class PrivateCluster:
    """A head with no CPU and worker nodes of their own disks; a node killed by a test is replaced for the next."""

    def __init__(self, head: RayHead, logs: Path) -> None:
        self.head, self.logs = head, logs
        self.nodes: list[PrivateNode] = []
        self._started = 0

    def two_nodes(self) -> list[PrivateNode]:
        """Two live worker nodes, the cluster listing exactly them and the head."""
        self.nodes = [n for n in self.nodes if n.proc.poll() is None]
        while len(self.nodes) < 2:
            self._started += 1
            self.nodes.append(PrivateNode(self.head, f"127.0.1.{self._started + 1}", self.logs))
        wanted = sorted(["127.0.0.1", *(n.address for n in self.nodes)])
        wait_until(lambda: _alive_nodes(self.head) == wanted, 180, "two worker nodes to be listed alive")
        return list(self.nodes)

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
        self.head.stop()


@pytest.fixture(scope="module")
def private_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateCluster]:
    cluster = PrivateCluster(RayHead(), tmp_path_factory.mktemp("nodes"))
    try:
        cluster.head.start(cpus=0)  # as cluster.yaml's head: no CPU for tasks, every fetch on a worker node
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def cluster(private_cluster: PrivateCluster) -> tuple[RayHead, list[PrivateNode]]:
    return private_cluster.head, private_cluster.two_nodes()


def _page(ip: str, target: str, graph: WebGraph) -> tuple[int, int] | None:
    """(host, page) of a request to ``ip`` for ``target`` (its query left out), or None for other paths."""
    path = urlsplit(target).path
    page = 0 if path == "/" else int(path[3:]) if path.startswith("/p/") and path[3:].isdigit() else None
    return None if page is None else (int(ip.rsplit(".", 1)[1]) - graph.spec.first_ip, page)


def _buffered_pages(node: PrivateNode, graph: WebGraph) -> set[tuple[int, int]]:
    """The pages with a WARC record in the node's buffer files now (warcio leaves out a record being written)."""
    pages: set[tuple[int, int]] = set()
    for path in (node.tmp() / "raycrawl-buffers").rglob("*.warc.gz"):
        try:
            data = path.read_bytes()
        except OSError:  # (a cut deleted it meanwhile)
            continue
        with contextlib.suppress(Exception):  # (the records read before one it cannot read are kept)
            for rec in ArchiveIterator(io.BytesIO(data)):
                parts = urlsplit(rec.rec_headers.get_header("WARC-Target-URI") or "")
                found = _page(parts.hostname or "", parts.path, graph)
                if found is not None:
                    pages.add(found)
    return pages


def _holds_recorded_output(
    node: PrivateNode,
    graph: WebGraph,
    requested: set[tuple[int, int]],
    parents: dict[tuple[int, int], set[tuple[int, int]]],
) -> bool:
    """Whether the node's buffers hold the WARC record of a page its shard has already recorded: a page the server
    was asked for (``requested``) whose every parent asked for by then has its record there -- the crawl found it in
    the links of one of those, so that result reached its shard (which keeps its WARC span for the next cut to
    store). A cut stores a node's buffers before it deletes them: while the node is frozen and the record is there,
    that cut has not happened, and losing the node loses output the crawl must fetch again (a roll-back)."""
    buffered = _buffered_pages(node, graph)
    return any(
        (asked := parents.get(page, set()) & requested) and asked <= buffered
        for page in requested
        if page[1] != 0  # (every host's root is a seed: found without a parent)
    )


def _kill_one_holding_recorded_output(nodes: list[PrivateNode], web: TestWeb) -> PrivateNode:
    """Freeze each node in turn (SIGSTOP: a cut cannot store its buffers meanwhile); kill the first found holding
    output its shard recorded since the last cut, thaw the others."""
    graph, spec = web.graph, web.graph.spec
    parents: dict[tuple[int, int], set[tuple[int, int]]] = {}
    for host in range(spec.hosts):
        for page in range(spec.pages_per_host):
            for child in graph.links(host, page):
                parents.setdefault(child, set()).add((host, page))
    killed: list[PrivateNode] = []

    def one_killed() -> bool:
        # (the server's log read once a look, before any node is frozen: a page in it was found through a parent
        # asked for before it, so that parent is in it too)
        requested = {p for r in page_requests(web.requests()) if (p := _page(r["ip"], r["path"], graph))}
        for node in nodes:
            frozen = node.signal_tree(signal.SIGSTOP)
            if _holds_recorded_output(node, graph, requested, parents):
                node.kill()
                killed.append(node)
                return True
            node.signal_tree(signal.SIGCONT, frozen)
        return False

    wait_until(one_killed, 60, "a node holding WARC of a page its shard recorded since the last cut")
    return killed[0]


def _crawl(head: RayHead, seeds: list[str], out: str, *extra: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "raycrawl.cli", "crawl", *seeds, "--out", out, "--ray-address", head.address]
    command += ["--delay", "0.02", "--checkpoint-interval", "2", "--allow-network", LOOPBACK[0], "--quiet", *extra]
    return subprocess.Popen(command, env=head.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_local_out_on_nodes_without_its_disk_is_refused_at_start(
    cluster: tuple[RayHead, list[PrivateNode]], tmp_path: Path
) -> None:
    head, _ = cluster
    with TestWeb(WebSpec(hosts=2, pages_per_host=5)) as web:
        proc = _crawl(head, web.graph.seeds(), str(tmp_path / "out"))
        _, err = proc.communicate(timeout=300)
        requests = web.requests()
    assert proc.returncode == 2, err
    (line,) = err.strip().splitlines()
    assert "cannot see it" in line and "s3://bucket/prefix" in line and "every node mounts" in line, line
    assert requests == []  # refused before anything was fetched
    assert not (tmp_path / "out" / "pages").exists()


def test_output_in_object_storage_survives_a_node_that_disappears(
    cluster: tuple[RayHead, list[PrivateNode]], s3_uri: str
) -> None:
    head, nodes = cluster
    # (twice the pages and cuts 4 s apart: more looks, and more output between two cuts for one to find, before the
    # crawl ends -- once in CI none was found in the ~10 s the 1,200 pages of a smaller crawl left after the first 300)
    spec = WebSpec(hosts=12, pages_per_host=200, page_bytes=300)
    with TestWeb(spec) as web:
        proc = _crawl(head, web.graph.seeds(), s3_uri, "--checkpoint-interval", "4")
        wait_until(lambda: len(page_requests(web.requests())) >= 300, 300, "300 pages before a node goes")
        victim = _kill_one_holding_recorded_output(nodes, web)  # with its tmpfs: its WARC since the last cut is gone
        survivor = next(n for n in nodes if n is not victim)
        out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    reachable = set(web.graph.reachable([(h, 0) for h in range(spec.hosts)]))

    records = read_pages(s3_uri)
    assert_each_url_once(records)
    assert {r["url"] for r in records if r["outcome"] == "fetched"} == reachable  # nothing lost
    warc = warc_page_responses(s3_uri)
    assert set(warc) == reachable and max(warc.values()) == 1  # every page's WARC response, once
    # Nothing of the crawl stays on the surviving node: its buffers were stored and deleted at the last cut.
    left: list[Any] = list((survivor.tmp() / "raycrawl-buffers").rglob("*.warc.gz"))
    assert left == []
    stats = json.loads(resolve(s3_uri).read("stats.json") or b"{}")
    assert stats["events"]["rollbacks"] >= 1  # the lost buffer was redone from the last checkpoint
    print(f"records: {len(records)}; WARC responses: {sum(warc.values())}; per node: {stats['fetch_nodes']}; "
          f"rollbacks: {stats['events'].get('rollbacks', 0)}; {out.strip().splitlines()[-1][:120]}")  # fmt: skip


def _placement(out: str) -> dict[str, list[str]]:
    """Where the running crawl's shards and partitions are (node addresses), from its stats.json."""
    stats = json.loads(resolve(out).read("stats.json") or b"{}")
    return dict(stats.get("placement") or {})


@pytest.mark.parametrize("holding", ["shard", "partition"])
def test_losing_the_node_of_a_shard_or_a_partition_loses_nothing_and_doubles_nothing(
    cluster: tuple[RayHead, list[PrivateNode]], s3_uri: str, holding: str
) -> None:
    """Issue 28's run: 5 light hosts to the S3 server, a worker node killed mid-crawl (as a spot instance goes).
    Killed with a shard: the shard is rebuilt alone (or the crawl rolls back to its last checkpoint, when the node
    held output of the interval); with a seen-set partition (and no shard): the partition is rebuilt. Either way the
    actors made again go to nodes that are alive, and the crawl ends well."""
    head, nodes = cluster
    counts = (
        ["--shards", "2", "--dedup-partitions", "1"]
        if holding == "shard"
        else ["--shards", "1", "--dedup-partitions", "2"]
    )
    spec = WebSpec(hosts=5, pages_per_host=200, page_bytes=300)
    addresses = {n.address for n in nodes}
    with TestWeb(spec) as web:
        proc = _crawl(head, web.graph.seeds(), s3_uri, *counts, "--delay", "0.1")  # (~20 s: the kill is mid-crawl)

        def victim() -> PrivateNode | None:
            where = _placement(s3_uri)
            shards, partitions = set(where.get("shards", [])), set(where.get("partitions", []))
            held = shards if holding == "shard" else partitions - shards
            return next((n for n in nodes if n.address in held and n.address in addresses), None)

        wait_until(lambda: len(page_requests(web.requests())) >= 150, 300, "150 pages before a node goes")
        wait_until(lambda: victim() is not None, 60, f"a worker node holding a {holding} in stats.json")
        node = victim()
        assert node is not None
        node.kill()
        _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    reachable = set(web.graph.reachable([(h, 0) for h in range(spec.hosts)]))
    records = read_pages(s3_uri)
    assert_each_url_once(records)  # nothing doubled
    assert {r["url"] for r in records if r["outcome"] == "fetched"} == reachable  # nothing lost
    warc = warc_page_responses(s3_uri)
    assert set(warc) == reachable and max(warc.values()) == 1
    stats = json.loads(resolve(s3_uri).read("stats.json") or b"{}")
    assert node.address not in {*stats["placement"]["shards"], *stats["placement"]["partitions"]}, stats["placement"]
    events = stats["events"]
    if holding == "partition":
        assert events.get("dedup_recoveries", 0) + events.get("rollbacks", 0) >= 1
    else:  # (the shard rebuilt alone; a roll-back too when the node held output of the interval)
        assert events.get("shard_rebuilds", 0) + events.get("rollbacks", 0) >= 1
    print(f"{holding}: killed {node.address}; placement after: {stats['placement']}; events: {stats['events']}")
