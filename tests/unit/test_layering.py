"""The import rule of docs/architecture.md: core/ is pure (no ray, no HTTP client, no redis; no print, clock or open
of its own); adapters/ never import ray; and no import inside the package runs up a layer."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import REPO

PACKAGE = REPO / "raycrawl"
FORBIDDEN = {"core": {"ray", "aiohttp", "httpx", "redis"}, "adapters": {"ray"}}

# The layers, lowest first; a module may import modules of its own layer or below. Modules at the package's top
# level are the API, the CLI and their helpers, except the foundations every layer may read.
LAYERS = ("core", "adapters", "foundation", "actors", "top")
FOUNDATION = {"raycrawl.config", "raycrawl.errors", "raycrawl.proxies", "raycrawl.ray_tuning", "raycrawl.version"}


def layer_of(module: str) -> str:
    parts = module.split(".")
    if module in FOUNDATION or module.startswith("raycrawl.config."):  # (config is a package)
        return "foundation"
    if len(parts) > 1 and parts[1] in ("core", "adapters", "actors"):
        return parts[1]
    return "top"  # api, cli, operate, results, the package root, testing/ ...


def module_of(path: Path, package: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_roots(path: Path) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def imported_modules(path: Path) -> set[str]:
    """The raycrawl modules ``path`` imports, at its top or inside a function (``from raycrawl import x`` names
    the package root, which imports the API)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] == "raycrawl")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "raycrawl":
            found.add(str(node.module))
    return found


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports(layer: str) -> None:
    files = sorted((PACKAGE / layer).rglob("*.py"))
    assert files, f"no modules under {layer}/"
    offenders = {str(f.relative_to(PACKAGE)): sorted(imported_roots(f) & FORBIDDEN[layer]) for f in files}
    assert {k: v for k, v in offenders.items() if v} == {}


def upward_imports(package: Path) -> list[str]:
    found = []
    for path in sorted(package.rglob("*.py")):
        module = module_of(path, package)
        rank = LAYERS.index(layer_of(module))
        for target in sorted(imported_modules(path)):
            if LAYERS.index(layer_of(target)) > rank:
                found.append(f"{module} ({layer_of(module)}) imports {target} ({layer_of(target)})")
    return found


def test_no_import_runs_up_a_layer() -> None:
    assert len(list(PACKAGE.rglob("*.py"))) > 50
    assert upward_imports(PACKAGE) == []


def test_the_rule_sees_an_upward_import(tmp_path: Path) -> None:
    """The check can fail: a core module importing the config, and an actor importing the package root."""
    core = tmp_path / "raycrawl" / "core"
    core.mkdir(parents=True)
    (core / "bad.py").write_text("from raycrawl.config import CrawlConfig\n")
    actors = tmp_path / "raycrawl" / "actors"
    actors.mkdir()
    (actors / "bad.py").write_text("def f():\n    from raycrawl import __version__\n")
    assert upward_imports(tmp_path / "raycrawl") == [
        "raycrawl.actors.bad (actors) imports raycrawl (top)",
        "raycrawl.core.bad (core) imports raycrawl.config (foundation)",
    ]


# What core/ never calls: it says nothing (a print), reads no clock (a clock is injected) and opens no file (storage
# is an adapter behind a Protocol). Names as called: ``print(...)``, ``time.time()``, ``open(...)`` ...
IMPURE_CALLS = {"print", "open", "time.time", "time.monotonic", "time.perf_counter", "time.sleep", "datetime.now",
                "datetime.datetime.now", "input"}  # fmt: skip


def called_name(node: ast.Call) -> str | None:
    parts: list[str] = []
    target: ast.expr = node.func
    while isinstance(target, ast.Attribute):
        parts.append(target.attr)
        target = target.value
    if not isinstance(target, ast.Name):
        return None
    return ".".join([target.id, *reversed(parts)])


def impure_calls(package: Path) -> list[str]:
    found = []
    for path in sorted((package / "core").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and called_name(node) in IMPURE_CALLS:
                found.append(f"{path.relative_to(package)}:{node.lineno} calls {called_name(node)}()")
    return found


def test_core_prints_nothing_reads_no_clock_and_opens_no_file() -> None:
    assert impure_calls(PACKAGE) == []


def test_the_purity_rule_sees_a_print_a_clock_and_an_open(tmp_path: Path) -> None:
    core = tmp_path / "raycrawl" / "core"
    core.mkdir(parents=True)
    (core / "bad.py").write_text(
        "import time\nfrom datetime import datetime\n\ndef f(clock=time.time):\n    print('x')\n"
        "    return time.monotonic(), open('f'), datetime.now(), clock()\n"
    )
    assert impure_calls(tmp_path / "raycrawl") == [
        "core/bad.py:5 calls print()",
        "core/bad.py:6 calls time.monotonic()",
        "core/bad.py:6 calls open()",
        "core/bad.py:6 calls datetime.now()",
    ]


def test_test_files_have_names_of_their_own() -> None:
    """pytest imports test files by their base name (tests/ has no packages): two of one name cannot both run."""
    names = [path.name for path in (REPO / "tests").rglob("test_*.py")]
    assert sorted(n for n in set(names) if names.count(n) > 1) == []
