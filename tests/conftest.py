"""Shared fixtures: one small local Ray per test module, the test web, and crawl helpers."""

from __future__ import annotations

import compileall
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from raycrawl.core.render_jobs import RenderJob
from raycrawl.ray_tuning import RAY_SYSTEM_CONFIG

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
# Ray takes "this node's address" to be the one of the default route (it asks the kernel which interface would
# reach 8.8.8.8) and swaps it in for 127.0.0.1 when a driver joins a cluster. Tests must touch loopback only:
# this switch (read when ray is imported, inherited by every Ray process the tests start) makes it 127.0.0.1.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
# The S3 server tests start takes these credentials; set before any Ray starts, so its workers have them too.
for _key, _value in __import__("raycrawl.testing.s3", fromlist=["TEST_CREDENTIALS"]).TEST_CREDENTIALS.items():
    os.environ.setdefault(_key, _value)


REPO = Path(__file__).resolve().parent.parent  # the repository's root (tests/unit/... and tests/e2e/ are below)
# The package's bytecode, made once: where PYTHONDONTWRITEBYTECODE is set (as on the machines CI runs on) Python
# never caches it, and every process that imports raycrawl -- each Ray worker and actor a test crawl starts --
# compiled the package's modules again (~0.15-0.2 s of CPU a process). An installed wheel has its bytecode.
compileall.compile_dir(REPO / "raycrawl", quiet=1)
DASHBOARD = REPO / "dashboards" / "raycrawl-grafana.json"
SERIES = re.compile(r"\braycrawl_[a-z_]+")


def dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return data


def dashboard_series() -> set[str]:
    """Every series the Grafana dashboard queries (unit/actors/test_dashboard.py, e2e/test_cluster_nodes.py)."""
    return {name for panel in dashboard()["panels"] for t in panel["targets"] for name in SERIES.findall(t["expr"])}


# What starts a Ray (the ``ray`` marker): the module-scoped local Ray, a ``ray start`` head, ``ray.init`` or a crawl.
STARTS_RAY = re.compile(r"\bray_local\b|\bRayHead\b|\bray\.init\(|\bCrawl\(|\brun\(cfg|raycrawl\.cli")


# The longest modules (seconds of a whole run, measured) run first: pytest-xdist (``--dist loadfile``) hands modules to
# its two workers in collection order, and the longest first is what lets both end at about the same time.
LONGEST_FIRST = (
    "test_chaos.py",  # 130 s
    "test_private_disks.py",  # 186 s
    "test_continuous.py",  # 130 s
    "test_shared_politeness_jobs.py",  # 115 s
    "test_autoscaling.py",  # 89 s
    "test_crawl.py",  # 81 s
    "test_resume_settings.py",  # 73 s
    "test_resume.py",  # 72 s
    "test_items.py",  # 72 s
    "test_job_submit.py",  # 64 s
    "test_politeness_e2e.py",  # 60 s
    "test_redis_outage.py",  # 59 s
    "test_render_nodes.py",  # 55 s
    "test_operate.py",  # 54 s
)


def _run_order(item: pytest.Item) -> tuple[int, int]:
    """Longest e2e modules first, the other e2e modules next, the unit tests (seconds in all) last."""
    path = Path(str(item.path))
    if path.name in LONGEST_FIRST and "e2e" in path.parts:
        return (0, LONGEST_FIRST.index(path.name))
    return (1 if "e2e" in path.parts else 2, 0)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests under tests/e2e/ are marked ``e2e`` (they start Ray, servers or processes; tests/unit/ starts none:
    ``pytest tests/unit`` is the fast lane), and those whose module starts a Ray are marked ``ray`` too
    (``-m "not ray"`` leaves them out). Modules run longest first (``LONGEST_FIRST``), each one's tests together."""
    items.sort(key=_run_order)  # (stable: a module's tests stay together and in their order)
    starts_ray: dict[Path, bool] = {}
    for item in items:
        path = Path(str(item.path))
        if "e2e" in path.parts:
            item.add_marker(pytest.mark.e2e)
            if path not in starts_ray:
                starts_ray[path] = bool(STARTS_RAY.search(path.read_text(encoding="utf-8")))
            if starts_ray[path]:
                item.add_marker(pytest.mark.ray)


@pytest.fixture(autouse=True)
def unit_tests_start_no_ray(request: pytest.FixtureRequest) -> Iterator[None]:
    """The fast lane (``pytest tests/unit``): a test there that starts Ray fails -- it belongs in tests/e2e/."""
    yield
    if "unit" in Path(str(request.node.path)).parts:
        ray = sys.modules.get("ray")
        assert ray is None or not ray.is_initialized(), "a unit test started Ray: move it to tests/e2e/"


def wait_until(condition: Any, timeout: float, what: str) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def start_redis(port: int, workdir: Any) -> subprocess.Popen[bytes]:
    """A redis-server of our own on 127.0.0.1:port (never a system service), ready when this returns."""
    import redis

    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server is not installed (apt-get install -y redis-server); .ci/run installs it")
    command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen([*command, "--dir", str(workdir)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = redis.Redis(host="127.0.0.1", port=port)

    def answers() -> bool:
        try:
            return bool(client.ping())
        except redis.ConnectionError:
            return proc.poll() is not None  # exited: stop waiting, fail below

    try:
        wait_until(answers, 20, "redis-server to answer")
    except AssertionError:
        proc.kill()
    if proc.poll() is not None:
        pytest.fail("redis-server did not start")
    return proc


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from raycrawl.testing import free_port

    port = free_port()
    proc = start_redis(port, tmp_path_factory.mktemp("redis"))
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A real S3 API server (moto's standalone server) on a free loopback port."""
    from raycrawl.testing.s3 import S3Server

    server = S3Server(tmp_path_factory.mktemp("s3"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_uri(s3_server: Any, request: pytest.FixtureRequest) -> str:
    """A bucket of this test's own, as the URI a user passes: ``s3://bucket/crawl?endpoint_override=...``."""
    bucket = "t-" + "".join(c if c.isalnum() else "-" for c in request.node.name.lower())[:40].strip("-")
    bucket = f"{bucket}-{os.urandom(3).hex()}"
    s3_server.create_bucket(bucket)
    return str(s3_server.uri(bucket, "crawl"))


# The small local Ray of the modules that ask for ``ray_local``: started by the first of them and shared by the next
# ones (a start and a stop cost ~4-5 s a module; its idle workers are warm for the next crawl). A module that does not
# ask for it gets none: the shared one is stopped before it (it may start a Ray of its own, in process or not), and at
# the end of the session.
_SHARED_RAY = {"up": False}
# What starts a Ray or a crawl other than the shared one: a `ray start` head, ray.init, a crawl in process, by the CLI,
# as a job or in a notebook's kernel
OWN_RAY = re.compile(r"\bRayHead\b|\bray\.init\(|\bCrawl\(|\brun\(cfg|raycrawl\.cli|\bray\b.*\bstart\b|jobs/|ipynb")


@pytest.fixture(scope="module")
def ray_local() -> Iterator[None]:
    import ray

    if not (_SHARED_RAY["up"] and ray.is_initialized()):
        if ray.is_initialized():
            ray.shutdown()
        ray.init(
            address="local",  # a Ray of the tests' own, never another one running on the machine
            num_cpus=2,
            include_dashboard=False,
            logging_level="WARNING",
            log_to_driver=False,
            _node_ip_address="127.0.0.1",  # tests touch loopback only, Ray included
            _system_config=dict(RAY_SYSTEM_CONFIG),  # as `raycrawl crawl` starts its own Ray
        )
        _SHARED_RAY["up"] = True
    yield
    # A module that left work running (a failed test's actors, tasks holding CPUs) must not slow the next: what it
    # left is ended with its Ray.
    if not _ray_at_rest():
        _stop_shared_ray()


def _ray_at_rest() -> bool:
    """Every actor of the shared Ray is dead and its CPUs are free (within a few seconds: a crawl's end frees them)."""
    import ray
    from ray._private import state  # (the GCS's own table: the state API needs the dashboard, which tests leave out)

    def at_rest() -> bool:
        alive = any(actor["State"] != "DEAD" for actor in state.actors().values())
        return not alive and ray.available_resources().get("CPU", 0.0) >= ray.cluster_resources().get("CPU", 0.0)

    try:
        wait_until(at_rest, 5.0, "the shared Ray at rest")
    except Exception:  # (timed out, or no answer: not at rest)
        return False
    return True


def _stop_shared_ray() -> None:
    import ray

    if _SHARED_RAY["up"]:
        ray.shutdown()
        _SHARED_RAY["up"] = False


@pytest.fixture(scope="module", autouse=True)
def no_shared_ray_unless_asked(request: pytest.FixtureRequest) -> None:
    """A module that starts a Ray or a crawl of its own (in this process or another: ``OWN_RAY``) without
    ``ray_local`` -- and every unit test module -- starts with no Ray in this process, as if it ran alone. Modules
    that start neither (a fetcher against the test web, the archive tools) leave the shared one up for the next."""
    if not _SHARED_RAY["up"]:
        return
    path = Path(str(request.node.path))
    source = path.read_text(encoding="utf-8")
    if "unit" in path.parts or ("ray_local" not in source and OWN_RAY.search(source)):
        _stop_shared_ray()


@pytest.fixture(scope="session", autouse=True)
def shared_ray_stopped_at_the_end() -> Iterator[None]:
    yield
    _stop_shared_ray()


LOOPBACK = ("127.0.0.0/8",)


def local_config(**kw: Any) -> Any:
    """A CrawlConfig for the test web: loopback is opted in explicitly, as a user would have to."""
    from raycrawl.config import CrawlConfig

    kw.setdefault("quiet", True)
    return CrawlConfig(allow_network=LOOPBACK, **kw)


def run(cfg: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run a crawl to its end; (summary, records)."""
    from raycrawl.api import Crawl

    crawl = Crawl(cfg).start()
    summary = crawl.wait(timeout=600)
    return summary, crawl.records()


def page_requests(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in requests if r["path"] != "/robots.txt"]


def assert_each_url_once(records: list[dict[str, Any]]) -> None:
    counts = Counter(r["url"] for r in records)
    assert [u for u, n in counts.items() if n > 1] == []


def committed_pages(out: Any) -> bytes:
    """The committed page parts of the crawl at ``out`` (a directory or a URI), one after the other."""
    from raycrawl.adapters.output import PAGES_DIR, committed_parts
    from raycrawl.adapters.storage import resolve

    storage = resolve(str(out))
    return b"".join(storage.read(name) or b"" for name in committed_parts(storage, PAGES_DIR))


def committed_warc(out: Any) -> list[bytes]:
    """The committed WARC parts of the crawl at ``out`` (a directory or a URI), read through the storage API."""
    from raycrawl.adapters.output import WARC_DIR, committed_parts
    from raycrawl.adapters.storage import resolve

    storage = resolve(str(out))
    return [storage.read(name) or b"" for name in committed_parts(storage, WARC_DIR)]


def warc_records(out: Any) -> dict[tuple[str, str], Any]:
    """(WARC-Type, canonical target URL) -> the record's WARC headers, for the response and revisit records of the
    committed WARC parts at ``out``."""
    import io

    from warcio.archiveiterator import ArchiveIterator

    from raycrawl.config import DEFAULT_TRACKING_PARAMS
    from raycrawl.core.urls import canonicalize

    found: dict[tuple[str, str], Any] = {}
    for data in committed_warc(out):
        for record in ArchiveIterator(io.BytesIO(data)):
            if record.rec_type in ("response", "revisit"):
                url = canonicalize(record.rec_headers.get_header("WARC-Target-URI"), DEFAULT_TRACKING_PARAMS)
                found[(record.rec_type, str(url))] = record.rec_headers
    return found


def warc_page_responses(out: Any) -> Counter[str]:
    """How many response records each page has across the committed WARC parts (robots.txt left out), by
    canonical URL. ``out``: a directory or a URI.

    WARC-Target-URI is the URL as it was requested (spelt as its link wrote it); records' ``url`` is canonical.
    """
    import io

    from warcio.archiveiterator import ArchiveIterator

    from raycrawl.config import DEFAULT_TRACKING_PARAMS
    from raycrawl.core.urls import canonicalize

    counts: Counter[str] = Counter()
    for data in committed_warc(out):
        for rec in ArchiveIterator(io.BytesIO(data)):
            uri = rec.rec_headers.get_header("WARC-Target-URI")
            if rec.rec_type == "response" and not uri.endswith("/robots.txt"):
                counts[canonicalize(uri, DEFAULT_TRACKING_PARAMS) or uri] += 1
    return counts


class FakeClock:
    """A clock the test moves (``clock.now += seconds``), for code that takes its clock injected."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def fetched_page(url: str, gap: float) -> RenderJob:
    """A page as a fetch worker hands it to rendering: fetched once, here, its host's next request ``gap`` later."""
    with urllib.request.urlopen(url, timeout=10) as response:
        body, headers, status, reason = (
            response.read(),
            list(response.headers.items()),
            response.status,
            response.reason,
        )
    return RenderJob(url, status, reason, headers, body, not_before=time.time() + gap, gap=gap)
