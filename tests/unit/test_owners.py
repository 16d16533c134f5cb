"""One owner per invariant (docs/architecture.md, Invariants): the state an invariant rests on is written by its
owner's module only. Read from the source: an assignment (``x.attr = ...``, ``x.attr += ...``, a tuple target)
to an owned attribute anywhere else fails."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

PACKAGE = REPO / "raycrawl"
# attribute -> the module (under raycrawl/) that alone assigns it
OWNERS = {
    "next_allowed": "core/hosts.py",  # invariant 1: a host's clock moves through HostState's clock_* transitions
    "_queued": "core/shard_queues.py",  # invariant 2: a shard's queued count (it says when a crawl is done)
    "stored": "core/workbench.py",  # ... and a host's count of URLs in the queue store
    "stored_best": "core/workbench.py",
    "_leases": "core/lease_table.py",  # invariant 4: the leases out, until their answers are settled
    "heap_token": "core/due_hosts.py",  # which hosts may be leased next (a host is due once, live)
}


def assignments(package: Path, attributes: set[str]) -> list[str]:
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = list(node.targets)
            elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                targets = [node.target]
            while targets:
                target = targets.pop()
                if isinstance(target, ast.Tuple | ast.List):
                    targets.extend(target.elts)
                elif isinstance(target, ast.Attribute) and target.attr in attributes:
                    found.append(f"{path.relative_to(package)}:{node.lineno} assigns {target.attr}")
    return found


def test_owned_state_is_assigned_by_its_owner_only() -> None:
    strays = [line for line in assignments(PACKAGE, set(OWNERS)) if not line.startswith(tuple(OWNERS.values()))]
    assert strays == []


def test_the_owner_rule_sees_a_stray_write(tmp_path: Path) -> None:
    core = tmp_path / "raycrawl" / "core"
    core.mkdir(parents=True)
    (core / "frontier.py").write_text("def f(hs):\n    hs.next_allowed, x = 1.0, 2\n    hs.next_allowed += 1\n")
    assert assignments(tmp_path / "raycrawl", {"next_allowed"}) == [
        "core/frontier.py:2 assigns next_allowed",
        "core/frontier.py:3 assigns next_allowed",
    ]
