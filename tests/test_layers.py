"""The layer rule of ARCHITECTURE.md, checked from the source: each part of `cfgtool` imports only the parts on
the rows above its own (same row: only without a cycle), and no modules import each other in a circle. Every
import counts, also one inside a function or under `TYPE_CHECKING`: hiding an import does not remove the
dependency, it only moves the failure to run time."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import cfgtool

PACKAGE = Path(cfgtool.__file__).parent

# Rows from the bottom (imports nothing of cfgtool's) to the top (the CLI). A part is a package or a loose module.
ROWS: tuple[tuple[str, ...], ...] = (
    ("_version", "_lazy", "errors"),
    ("diagnostics",),
    ("_util",),
    ("hocon",),
    ("store",),
    ("snapshot",),
    ("build",),
    ("validate", "policies"),
    ("access",),
    ("compile",),
    ("versions",),
    ("client",),
    ("serve", "spark", "agent", "scaffold", "edit", "rollout"),
    ("console",),  # mounted into the server: it reads serve's versions in memory
    ("cli",),
    ("__main__", "__init__"),
)
ROW = {part: n for n, row in enumerate(ROWS) for part in row}


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(path: Path, name: str) -> Iterator[tuple[str, int]]:
    """Every cfgtool module `path` imports (absolute or relative, at any depth), with its line."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "cfgtool":
                    yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if target.split(".")[0] != "cfgtool":
                continue
            for alias in node.names:  # `from cfgtool.x import y`: y may be a module
                yield f"{target}.{alias.name}", node.lineno


def resolve(target: str, known: dict[str, Path]) -> str | None:
    while target and target not in known:
        target = target.rpartition(".")[0]
    return target or None


def part(module: str) -> str:
    bits = module.split(".")
    return bits[1] if len(bits) > 1 else "__init__"


def graph() -> dict[str, dict[str, int]]:
    known = modules()
    edges: dict[str, dict[str, int]] = {}
    for name, path in known.items():
        for target, line in imports(path, name):
            found = resolve(target, known)
            if found and found != name and found != "cfgtool":
                edges.setdefault(name, {}).setdefault(found, line)
    return edges


def test_every_part_has_a_row() -> None:
    unknown = {part(m) for m in modules()} - set(ROW)
    assert not unknown, f"give {sorted(unknown)} a row in ROWS and in ARCHITECTURE.md's layer table"


def test_no_part_imports_a_part_on_a_row_above() -> None:
    upward = [
        f"{PACKAGE.parent / known}:{line}: {name} imports {target} ({part(target)} is above {part(name)})"
        for name, targets in graph().items()
        for target, line in targets.items()
        for known in [modules()[name].relative_to(PACKAGE.parent)]
        if part(name) != "__init__" and ROW[part(target)] > ROW[part(name)]
    ]
    assert not upward, "\n".join(upward)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The groups of nodes that reach each other through `edges` (Tarjan's strongly connected components)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while (top := stack.pop()) != node:
                group.append(top)
            if group:
                found.append(sorted([node, *group]))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_modules_import_each_other_in_a_circle() -> None:
    edges = {name: set(targets) for name, targets in graph().items()}
    for package in {m for m in modules() if (PACKAGE.parent / m.replace(".", "/") / "__init__.py").exists()}:
        for targets in edges.values():  # a package's __init__ re-exports lazily: importing it is not a cycle
            targets.discard(package)
    assert not cycles(edges), "\n".join(" <-> ".join(group) for group in cycles(edges))


def test_no_parts_on_one_row_import_each_other_in_a_circle() -> None:
    edges: dict[str, set[str]] = {}
    for name, targets in graph().items():
        for target in targets:
            if part(name) != part(target) and "__init__" not in (part(name), part(target)):
                edges.setdefault(part(name), set()).add(part(target))
    assert not cycles(edges), "\n".join(" <-> ".join(group) for group in cycles(edges))


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("from cfgtool.build import cache\n", "cfgtool.build.cache"),
        ("def f():\n    from cfgtool.store import keys\n", "cfgtool.store.keys"),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import cfgtool.cli.app\n", "cfgtool.cli.app"),
        ("from ..store import keys\n", "cfgtool.store.keys"),
    ],
)
def test_hidden_and_relative_imports_are_seen(tmp_path: Path, source: str, found: str) -> None:
    path = tmp_path / "m.py"
    path.write_text(source)
    assert found in [t for t, _ in imports(path, "cfgtool.snapshot.m")]
