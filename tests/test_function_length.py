"""The length rule of CONTRIBUTING.md, checked from the source: no function of `cfgtool` is over 120 lines, and
none in `cfgtool/cli/` is over 80, so that a command reads as a list of steps and its rules live in the library.
A function's length runs from its `def` (decorators not counted) to its last line, docstring included."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import cfgtool

PACKAGE = Path(cfgtool.__file__).parent
LIMIT = 120
CLI_LIMIT = 80


def too_long(root: Path) -> Iterator[str]:
    """`module:qualified.name (N lines, at most M)` for each function under `root` over its limit."""
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root.parent)
        limit = CLI_LIMIT if relative.parts[1] == "cli" else LIMIT
        yield from _walk(ast.parse(path.read_text(encoding="utf-8")), relative.as_posix(), "", limit)


def _walk(node: ast.AST, module: str, prefix: str, limit: int) -> Iterator[str]:
    for child in ast.iter_child_nodes(node):
        name = getattr(child, "name", None)
        inner = f"{prefix}{name}." if name is not None else prefix
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            lines = (child.end_lineno or child.lineno) - child.lineno + 1
            if lines > limit:
                yield f"{module}:{prefix}{child.name} ({lines} lines, at most {limit})"
        yield from _walk(child, module, inner, limit)


def test_no_function_is_over_its_length_limit() -> None:
    offenders = list(too_long(PACKAGE))
    assert not offenders, "functions over their length limit:\n" + "\n".join(offenders)


def test_the_check_names_each_long_function(tmp_path: Path) -> None:
    """A method over 120 lines is named with its class; under `cli/` the limit is 80."""
    (tmp_path / "pkg" / "lib").mkdir(parents=True)
    (tmp_path / "pkg" / "cli").mkdir()
    method = "".join(f"        x{n} = {n}\n" for n in range(120))
    (tmp_path / "pkg" / "lib" / "mod.py").write_text(f"class A:\n    def f(self) -> None:\n{method}")
    command = "".join(f"    x{n} = {n}\n" for n in range(80))
    (tmp_path / "pkg" / "cli" / "mod.py").write_text(f"def command() -> None:\n{command}")
    assert list(too_long(tmp_path / "pkg")) == [
        "pkg/cli/mod.py:command (81 lines, at most 80)",
        "pkg/lib/mod.py:A.f (121 lines, at most 120)",
    ]
