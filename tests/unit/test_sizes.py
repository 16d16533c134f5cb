"""Issue 49's size targets, held: no module of the package over 500 lines, no function over 60. (Complexity is
ruff's to hold: C901 and PLR0915, limits in pyproject.toml.)"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60


def oversized(package: Path) -> list[str]:
    found = []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        name = str(path.relative_to(package))
        if len(text.splitlines()) > MAX_MODULE_LINES:
            found.append(f"{name}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.append(f"{name}:{node.lineno} {node.name}: {length} lines")
    return found


def test_no_module_or_function_of_the_package_is_over_its_size() -> None:
    assert oversized(REPO / "raycrawl") == []


def test_the_size_rule_sees_a_long_module_and_a_long_function(tmp_path: Path) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(60))
    (tmp_path / "long.py").write_text("def f():\n" + body + "\n" * 440)
    assert oversized(tmp_path) == ["long.py: 501 lines", "long.py:1 f: 61 lines"]
