"""DESIGN.md's import rule: core/ is pure (no ray, no HTTP client, no redis); adapters/ never import ray."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "raycrawl"
FORBIDDEN = {"core": {"ray", "aiohttp", "httpx", "redis"}, "adapters": {"ray"}}


def imported_roots(path: Path) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports(layer: str) -> None:
    files = sorted((PACKAGE / layer).rglob("*.py"))
    assert files, f"no modules under {layer}/"
    offenders = {str(f.relative_to(PACKAGE)): sorted(imported_roots(f) & FORBIDDEN[layer]) for f in files}
    assert {k: v for k, v in offenders.items() if v} == {}
