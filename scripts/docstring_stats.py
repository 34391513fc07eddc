"""Measure the length of docstring sentences in a package.

Walks the Python files with ``ast``, splits each module, class and function docstring into sentences and counts
their words. Prints the count, the median and the 95th percentile, then the longest sentences with file:line, so a
writer can find the ones to shorten. Standard library only.

    python scripts/docstring_stats.py                 # cfgtool/, the 20 longest
    python scripts/docstring_stats.py cfgtool/hocon --top 50
    python scripts/docstring_stats.py --over 30       # every sentence longer than 30 words

A sentence ends at ``.``, ``!`` or ``?`` and a space (not after "e.g." and the like), at a blank line, or at a list
item.
Indented blocks (examples, ``>>>`` sessions) are not prose and are skipped.
"""

from __future__ import annotations

import argparse
import ast
import re
import statistics
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
# A sentence ends at terminal punctuation (maybe closed by a bracket or quote) and a space, unless an abbreviation
# ends there. The next sentence may start in lower case: names such as `git` or `cfgtool` begin many.
_END = re.compile(r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\betc\.)(?<!\bvs\.)(?<!\bcf\.)(?<=[.!?])[)\"'`]*\s+")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


class Sentence(NamedTuple):
    """One docstring sentence and where it starts."""

    path: Path
    line: int
    words: int
    text: str


def _docstrings(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """Yield (first line, raw text) of every module, class and function docstring."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            value = body[0].value.value
            if isinstance(value, str):
                yield body[0].lineno, value


def _paragraphs(text: str) -> Iterator[tuple[int, str]]:
    """Yield (line offset, joined prose) per paragraph or list item; indented blocks are dropped."""
    lines = text.splitlines()
    margin = min((len(s) - len(s.lstrip()) for s in lines[1:] if s.strip()), default=0)
    start, chunk = 0, list[str]()
    for i, raw in enumerate(lines):
        line = raw[margin:] if i else raw.strip()
        code = line.startswith((" ", ">>>", "$ "))
        if not line.strip() or code or _ITEM.match(line):
            if chunk:
                yield start, " ".join(chunk)
            start, chunk = i, []
            if code or not line.strip():
                continue
            line = _ITEM.sub("", line)
        if not chunk:
            start = i
        chunk.append(line.strip())
    if chunk:
        yield start, " ".join(chunk)


def sentences(path: Path) -> Iterator[Sentence]:
    """Yield every docstring sentence of one file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for first, text in _docstrings(tree):
        for offset, para in _paragraphs(text):
            for part in _END.split(para):
                words = len(part.split())
                if words:
                    yield Sentence(path, first + offset, words, part)


def main(argv: list[str] | None = None) -> int:
    """Print the statistics and the longest sentences."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, default=[ROOT / "cfgtool"])
    parser.add_argument("--top", type=int, default=20, help="how many of the longest sentences to list")
    parser.add_argument("--over", type=int, help="list every sentence longer than this many words instead")
    args = parser.parse_args(argv)
    files = sorted(f for p in args.paths for f in ([p] if p.is_file() else p.rglob("*.py")))
    found = [s for f in files for s in sentences(f)]
    if not found:
        print("no docstring sentences found", file=sys.stderr)
        return 2
    counts = sorted(s.words for s in found)
    p95 = counts[min(len(counts) - 1, int(0.95 * len(counts)))]
    over40 = sum(c > 40 for c in counts) / len(counts)
    median = statistics.median(counts)
    print(f"sentences {len(counts)}  median {median:g}  p95 {p95}  max {counts[-1]}  >40 {over40:.1%}")
    longest = sorted(found, key=lambda s: -s.words)
    shown = [s for s in longest if s.words > args.over] if args.over is not None else longest[: args.top]
    for s in shown:
        where = s.path.relative_to(ROOT) if s.path.is_relative_to(ROOT) else s.path
        print(f"{where}:{s.line}: {s.words}: {s.text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
